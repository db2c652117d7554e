"""The SQL that is sent: written from the checked tree, never the submitted text.

The guard (:mod:`.guard`) accepts a parsed statement; :func:`regenerate`
writes that tree back as SQL in the datasource's dialect (sqlglot's
generator, the dialects of :mod:`.dialects`), without comments, in single
ASCII spaces, every string and quoted name quoted the generator's one way.
So whatever the submitted text hid in a comment, an odd space or a string a
server reads differently, the server gets only what the guard saw.

A round trip proves the writing faithful: the written SQL is parsed again and
must give the same tree (sqlglot's equality: literals and quoted names
exactly). Where it does not (the generator rewrote a call or added a
default), the calls it changed are written as they were read, and that must
give the same tree instead; where neither does, or the generator says it
cannot write a construct, the statement is refused with
``SQL_NOT_REPRODUCIBLE``, never sent as submitted.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import SQL_NOT_REPRODUCIBLE, SqlError

_PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def not_reproducible(dialect: str, why: str) -> SqlError:
    return SqlError(
        SQL_NOT_REPRODUCIBLE,
        f"refused: the checked statement cannot be written back as the same {dialect} SQL ({why}); nothing was run",
        "assay runs the SQL it writes from the checked statement, never the text as sent. Write the construct "
        "another way (a plainer function or syntax for the same result) and send the query again.",
        details={"reason": why},
    )


def regenerate(root: Any, dialect: str, text: str) -> str:
    """The SQL of the checked tree ``root`` (parsed from ``text``) in ``dialect`` (assay's name), proven by a
    round trip.

    sqlglot's generator is also a translator: for some calls it writes another spelling (``TIMESTAMPADD`` as
    ``DATE_ADD``) or adds a default (``GROUP_CONCAT(x SEPARATOR ',')``), which reads back as another tree.
    Then the calls it changed are written as they were read, ``name(arg, ...)``, and that must read back
    as the same tree instead. Raises ``SQL_NOT_REPRODUCIBLE`` when neither does.

    The generator writes ``root`` in place (a copy of a large tree costs more than writing it), so the
    comparison is with the tree's hash taken before (sqlglot's own equality is that hash), and the rare
    second attempt starts from a fresh parse of ``text``.
    """
    import sqlglot
    from sqlglot.errors import ErrorLevel, UnsupportedError

    from .dialects import DIALECTS

    write = DIALECTS[dialect]
    checked = (type(root), hash(root))
    why: str | None
    try:
        sql = write().generate(root, copy=False, comments=False, unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as exc:
        why = f"the generator cannot write it: {str(exc).splitlines()[0][:200]}"
    else:
        why = _reads_back(sql, checked, write)
        if why is None:
            return sql
    as_read = _calls_as_read(sqlglot.parse_one(text, read=write), text)
    if as_read is not None:
        try:
            again = write().generate(
                as_read, copy=False, comments=False, unsupported_level=ErrorLevel.RAISE
            )
        except UnsupportedError:
            again = ""
        if again and _reads_back(again, checked, write) is None:
            return again
    raise not_reproducible(dialect, why)


def _reads_back(sql: str, checked: tuple[type, int], write: Any) -> str | None:
    """None when ``sql`` parses as exactly the checked tree (its type and hash); else why not."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    try:
        again = [s for s in sqlglot.parse(sql, read=write) if s is not None]
    except SqlglotError as exc:
        return f"the written SQL does not parse: {str(exc).splitlines()[0][:200]}"
    if len(again) != 1 or (type(again[0]), hash(again[0])) != checked:
        return "the written SQL reads as a different statement"
    return None


def _calls_as_read(tree: Any, text: str) -> Any:
    """``tree`` (changed in place) with its named calls made anonymous calls of the name as written, their
    arguments in order (None when there is none to change)."""
    from sqlglot import exp

    changed = False
    for node in list(tree.walk()):
        if not isinstance(node, exp.Func) or isinstance(
            node, (exp.Anonymous, exp.Cast, exp.Window)
        ):
            continue
        start, end = node.meta.get("start"), node.meta.get("end")
        name = text[start : end + 1] if start is not None and end is not None else ""
        if not _PLAIN_NAME.match(name):
            continue
        args: list[Any] = []
        for value in node.args.values():
            values = value if isinstance(value, list) else [value]
            if not all(v is None or isinstance(v, exp.Expr) for v in values):
                break  # a flag or a keyword the call's text does not spell as an argument
            args.extend(v for v in values if v is not None)
        else:
            replacement = exp.Anonymous(this=name, expressions=args)
            if node is tree:
                tree = replacement
            else:
                node.replace(replacement)
            changed = True
    return tree if changed else None
