"""One statement from the text: the parse (sqlglot, the datasource's dialect) and the kind of its root.

:func:`parse_one` parses the text and refuses anything but exactly one
statement; text that does not parse is ``SQL_QUERY_FAILED`` with the parser's
message, unless it starts with a statement word that never reads
(``_NOT_A_QUERY``), writes a file or advances a sequence: those are refused as
what they are. :func:`root_kind` accepts the allowed statement kinds (SELECT,
set operations, VALUES, DESCRIBE, SHOW of a setting or a description, DuckDB
PIVOT/UNPIVOT/SUMMARIZE) and names the kind. sqlglot is imported with the
first call (the ``sql`` extra).
"""

from __future__ import annotations

import logging
import re
from typing import Any

from . import allowlist
from .lexical import MYSQL_FAMILY
from .refusals import label, refused, syntax_error

_VALUES_FIRST = re.compile(r"^\s*values\b", re.IGNORECASE)
_LEADING = re.compile(
    r"^(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|/\*.*?\*/|\()*(?P<word>[A-Za-z_]+)", re.DOTALL
)
_FILE_WRITE = re.compile(r"\binto\s+(outfile|dumpfile)\b", re.IGNORECASE)
_NEXT_VALUE = re.compile(r"\bnext\s+value\s+for\b", re.IGNORECASE)
# Statement words that never start a read-only query: text starting with one is refused as such even when
# the parser cannot read the rest (a typo such as SELEC stays a syntax error).
_NOT_A_QUERY = frozenset(
    [
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "REPLACE",
        "UPSERT",
        "CREATE",
        "DROP",
        "ALTER",
        "TRUNCATE",
        "RENAME",
        "GRANT",
        "REVOKE",
        "COPY",
        "LOAD",
        "UNLOAD",
        "IMPORT",
        "EXPORT",
        "INSTALL",
        "UNINSTALL",
        "ATTACH",
        "DETACH",
        "PRAGMA",
        "VACUUM",
        "ANALYZE",
        "ANALYSE",
        "REINDEX",
        "CLUSTER",
        "CHECKPOINT",
        "SET",
        "RESET",
        "USE",
        "BEGIN",
        "START",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "LOCK",
        "UNLOCK",
        "CALL",
        "DO",
        "EXECUTE",
        "PREPARE",
        "DEALLOCATE",
        "DECLARE",
        "FETCH",
        "MOVE",
        "CLOSE",
        "LISTEN",
        "NOTIFY",
        "UNLISTEN",
        "DISCARD",
        "KILL",
        "SHUTDOWN",
        "FLUSH",
        "HANDLER",
        "PURGE",
        "RESTART",
        "OPTIMIZE",
        "REPAIR",
        "CHECKSUM",
        "BACKUP",
        "RESTORE",
        "CHANGE",
        "SECURITY",
        "COMMENT",
        "REFRESH",
        "FORCE",
    ]
)
_PG_SHOW = re.compile(
    r"^\s*(all|[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)\s*$", re.IGNORECASE
)


def parse_one(sql: str, dialect: str) -> tuple[str, Any]:
    """The text that was parsed (MariaDB's bare VALUES wrapped in a SELECT) and its one statement's tree."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    from .dialects import DIALECTS

    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    read = DIALECTS[dialect]
    try:
        statements = [s for s in sqlglot.parse(sql, read=read) if s is not None]
    except SqlglotError as exc:
        if dialect in MYSQL_FAMILY and _VALUES_FIRST.match(sql):
            # sqlglot reads MariaDB's bare VALUES only inside a FROM; the text itself is unchanged.
            wrapped = f"SELECT * FROM ({sql}\n) AS assay_values"
            try:
                return wrapped, sqlglot.parse_one(wrapped, read=read)
            except SqlglotError:
                pass
        first = _LEADING.match(sql)
        if first and first["word"].upper() in _NOT_A_QUERY:
            raise refused(f"{first['word'].upper()} is not a read-only query") from None
        if _FILE_WRITE.search(sql):
            raise refused("INTO OUTFILE/DUMPFILE writes a file") from None
        if dialect in MYSQL_FAMILY and _NEXT_VALUE.search(sql):
            raise refused("NEXT VALUE FOR advances a sequence: it is a write") from None
        raise syntax_error(dialect, exc) from None
    except RecursionError:
        raise
    except Exception as exc:  # noqa: BLE001 - a parser crash is a refusal, never a pass
        raise refused(f"the text could not be parsed ({type(exc).__name__})") from None
    if not statements:
        raise refused("the SQL text holds no statement")
    if len(statements) > 1:
        raise refused(f"{len(statements)} statements were sent; send exactly one")
    return sql, statements[0]


def root_kind(root: Any, dialect: str) -> str:
    """The statement kind of ``root`` (``SELECT``, ``SHOW``...) if it is one a read-only query may be."""
    from sqlglot import exp

    if isinstance(root, (exp.Select, exp.SetOperation, exp.Values, exp.Subquery, exp.Describe)):
        return label(root)
    if isinstance(root, exp.Show):
        if dialect == "duckdb":
            return "SHOW"
        shown = ("FULL " if root.args.get("full") else "") + str(root.name or "").upper()
        if dialect in MYSQL_FAMILY and shown in allowlist.SHOW_KINDS:
            return "SHOW"
        raise refused(f"SHOW {shown} is not on the allow-list of SHOW statements")
    if (
        dialect == "postgresql"
        and isinstance(root, exp.Command)
        and str(root.this).upper() == "SHOW"
    ):
        setting = root.expression.name if isinstance(root.expression, exp.Literal) else ""
        if _PG_SHOW.match(setting):
            return "SHOW"
        raise refused(f"SHOW {setting!r} is not a setting name")
    if dialect == "duckdb" and isinstance(root, (exp.Pivot, exp.Summarize)):
        return label(root)
    raise refused(f"{label(root)} is not a read-only query")
