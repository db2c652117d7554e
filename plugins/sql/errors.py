"""Error codes of the SQL plugin (stable: callers and models branch on them)."""

from __future__ import annotations

from assay.kernel.errors import AssayError

SQL_DATASOURCE_REQUIRED = "SQL_DATASOURCE_REQUIRED"
SQL_DATASOURCE_NOT_FOUND = "SQL_DATASOURCE_NOT_FOUND"
SQL_DATASOURCE_INVALID = "SQL_DATASOURCE_INVALID"
SQL_DATASOURCE_UNAVAILABLE = "SQL_DATASOURCE_UNAVAILABLE"
SQL_DATASOURCE_BUSY = "SQL_DATASOURCE_BUSY"
SQL_DATASOURCE_PRIVILEGED = "SQL_DATASOURCE_PRIVILEGED"
SQL_READ_ONLY_REQUIRED = "SQL_READ_ONLY_REQUIRED"
SQL_QUERY_TIMEOUT = "SQL_QUERY_TIMEOUT"
SQL_QUERY_CANCELLED = "SQL_QUERY_CANCELLED"
SQL_QUERY_FAILED = "SQL_QUERY_FAILED"
SQL_RESULT_TOO_LARGE = "SQL_RESULT_TOO_LARGE"
SQL_VALUE_TOO_LARGE = "SQL_VALUE_TOO_LARGE"
SQL_ROW_TOO_LARGE = "SQL_ROW_TOO_LARGE"
SQL_TABLE_NOT_FOUND = "SQL_TABLE_NOT_FOUND"
SQL_SCHEMA_INDEX_FAILED = "SQL_SCHEMA_INDEX_FAILED"  # the schema index cannot be read or written
ARTIFACT_CAPTURE_FAILED = "ARTIFACT_CAPTURE_FAILED"
ARTIFACT_QUOTA_EXCEEDED = "ARTIFACT_QUOTA_EXCEEDED"
# The guard's refusals besides SQL_READ_ONLY_REQUIRED (nothing was sent to the database):
SQL_TOO_LONG = "SQL_TOO_LONG"  # longer than max_sql_bytes, refused before the parse
SQL_TOO_DEEPLY_NESTED = "SQL_TOO_DEEPLY_NESTED"  # nested deeper than the parser can follow
SQL_AMBIGUOUS_CHARACTER = (
    "SQL_AMBIGUOUS_CHARACTER"  # a non-ASCII space / control character outside strings
)
SQL_AMBIGUOUS_COMMENT = (
    "SQL_AMBIGUOUS_COMMENT"  # /* inside a comment: nested for some readers, not others
)
SQL_AMBIGUOUS_BACKSLASH = (
    "SQL_AMBIGUOUS_BACKSLASH"  # MySQL/MariaDB strings that end elsewhere without \ escapes
)
SQL_NOT_REPRODUCIBLE = (
    "SQL_NOT_REPRODUCIBLE"  # the checked tree cannot be written back as the same SQL
)
NOTHING_SENT = frozenset(
    {
        SQL_READ_ONLY_REQUIRED,
        SQL_TOO_LONG,
        SQL_TOO_DEEPLY_NESTED,
        SQL_AMBIGUOUS_CHARACTER,
        SQL_AMBIGUOUS_COMMENT,
        SQL_AMBIGUOUS_BACKSLASH,
        SQL_NOT_REPRODUCIBLE,
    }
)

TIMEOUT_HINT = (
    "Do not resubmit the same SQL: check the query plan and indexes, filter earlier, "
    "aggregate in the database or add a LIMIT, then run a cheaper query."
)


class SqlError(AssayError):
    """An error of the SQL plugin; ``details`` may carry ``stopped`` and ``elapsed_ms``."""

    code = "SQL_ERROR"


# What a database answers when it refuses a statement as a write or for lack of privilege.
_PG_REFUSED = {"25006", "42501"}  # read_only_sql_transaction, insufficient_privilege
_MYSQL_REFUSED = {1036, 1044, 1095, 1142, 1143, 1227, 1290, 1370, 1792, 1836}
_REFUSED_TEXT = (
    "read-only mode",
    "configuration has been locked",
    "attempt to write a readonly database",
    "not authorized",
    "disabled by configuration",
)


def refused_by_database(exc: BaseException) -> bool:
    """Whether ``exc`` is the database refusing a write or a privileged act (not a plain error)."""
    if getattr(exc, "sqlstate", None) in _PG_REFUSED:
        return True
    args = getattr(exc, "args", None) or ()
    if type(exc).__module__.startswith("pymysql") and args and args[0] in _MYSQL_REFUSED:
        return True
    if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in (8, 23):  # SQLITE_READONLY, SQLITE_AUTH
        return True
    if type(exc).__name__ == "PermissionException":  # DuckDB: external access disabled
        return True
    text = str(exc).lower()
    return type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb", "sqlite3") and any(
        t in text for t in _REFUSED_TEXT
    )
