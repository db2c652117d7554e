"""The SQL that is sent: written from the checked tree, never the submitted text.

The guard (:mod:`.guard`) accepts a parsed statement; :func:`regenerate`
writes that tree back as SQL in the datasource's dialect (sqlglot's
generator, the dialects of :mod:`.dialects`), without comments, in single
ASCII spaces, every string and quoted name quoted the generator's one way.
So whatever the submitted text hid in a comment, an odd space or a string a
server reads differently, the server gets only what the guard saw.

A round trip proves the writing faithful: the written SQL is parsed again and
must give the same tree. Where it does not (the generator rewrote or dropped
something) or the generator says it cannot write a construct, the statement is
refused with ``SQL_NOT_REPRODUCIBLE``, never sent as submitted.
"""

from __future__ import annotations

from typing import Any

from .errors import SQL_NOT_REPRODUCIBLE, SqlError


def not_reproducible(dialect: str, why: str) -> SqlError:
    return SqlError(
        SQL_NOT_REPRODUCIBLE,
        f"refused: the checked statement cannot be written back as the same {dialect} SQL ({why}); nothing was run",
        "assay runs the SQL it writes from the checked statement, never the text as sent. Write the construct "
        "another way (a plainer function or syntax for the same result) and send the query again.",
        details={"reason": why},
    )


def regenerate(root: Any, dialect: str) -> str:
    """The SQL of the checked tree ``root`` in ``dialect`` (assay's name), proven by a round trip.

    Raises ``SQL_NOT_REPRODUCIBLE`` when it cannot be written back to the same tree.
    """
    import sqlglot
    from sqlglot.errors import ErrorLevel, SqlglotError, UnsupportedError

    from .dialects import DIALECTS

    write = DIALECTS[dialect]
    try:
        sql = write().generate(root, copy=True, comments=False, unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as exc:
        raise not_reproducible(dialect, f"the generator cannot write it: {str(exc).splitlines()[0][:200]}") from None
    try:
        again = [s for s in sqlglot.parse(sql, read=write) if s is not None]
    except SqlglotError as exc:
        raise not_reproducible(dialect, f"the written SQL does not parse: {str(exc).splitlines()[0][:200]}") from None
    if len(again) != 1 or again[0] != root:
        raise not_reproducible(dialect, "the written SQL reads as a different statement")
    return sql
