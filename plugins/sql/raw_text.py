"""The checks on the raw text, before any parse: its length, and what a reader could read two ways.

:func:`check_raw_text` refuses text longer than ``max_sql_bytes`` (UTF-8 bytes)
with ``SQL_TOO_LONG``, then turns what :mod:`.lexical` finds into refusals: a
non-ASCII space or control character outside strings and quoted names
(``SQL_AMBIGUOUS_CHARACTER``), ``/*`` inside a comment
(``SQL_AMBIGUOUS_COMMENT``), a MySQL/MariaDB executable comment
(``SQL_READ_ONLY_REQUIRED``) and a MySQL/MariaDB string that would end
elsewhere without backslash escapes (``SQL_AMBIGUOUS_BACKSLASH``).
"""

from __future__ import annotations

from .errors import (
    SQL_AMBIGUOUS_BACKSLASH,
    SQL_AMBIGUOUS_CHARACTER,
    SQL_AMBIGUOUS_COMMENT,
    SQL_TOO_LONG,
    SqlError,
)
from .lexical import MYSQL_FAMILY, mysql_backslash_ambiguity, two_readings
from .refusals import refused

MAX_SQL_BYTES = 1 << 20  # the default of the max_sql_bytes setting

_AMBIGUOUS = {
    "character": (
        SQL_AMBIGUOUS_CHARACTER,
        "Write SQL with ASCII spaces, tabs and newlines only; other characters "
        "are fine inside string literals and quoted names.",
    ),
    "comment": (
        SQL_AMBIGUOUS_COMMENT,
        "Do not write /* inside a /* comment */ (servers disagree on whether it "
        "nests); remove the comment, or close it first.",
    ),
}


def check_raw_text(sql: str, dialect: str, max_bytes: int) -> None:
    """Steps 0 and 1 of the check (:mod:`.guard`): raise the first refusal of the module docstring."""
    if len(sql) > max_bytes or (
        len(sql) * 4 > max_bytes and len(sql.encode("utf-8", "surrogatepass")) > max_bytes
    ):
        raise SqlError(
            SQL_TOO_LONG,
            f"refused: the SQL text is longer than the {max_bytes:,}-byte limit (max_sql_bytes); nothing was run",
            "Send a shorter query: filter with a join or a subquery instead of a long literal IN list, and "
            "aggregate in the database.",
            details={"reason": "length", "limit_bytes": max_bytes},
        )
    found = two_readings(sql, dialect)
    if found is not None and found.kind == "executable_comment":
        raise refused(
            f"executable comment {found.what!r}: MySQL/MariaDB run the inside of /*! */, /*M! */ "
            "and optimizer-hint comments"
        )
    if found is not None:
        code, hint = _AMBIGUOUS[found.kind]
        raise SqlError(
            code,
            f"refused: {found.what} at position {found.position} could be read two ways "
            "(the server and the check could see different statements); nothing was run",
            hint,
            details={"reason": found.what, "position": found.position},
        )
    if dialect in MYSQL_FAMILY and mysql_backslash_ambiguity(sql):
        raise SqlError(
            SQL_AMBIGUOUS_BACKSLASH,
            "refused: a backslash in a string or comment reads differently with and without NO_BACKSLASH_ESCAPES "
            "(the string would end in another place); nothing was run",
            "Write a quote inside a string as '' instead of \\', and a backslash before a quote not at all.",
            details={"reason": "backslash"},
        )
