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
SQL_TABLE_NOT_FOUND = "SQL_TABLE_NOT_FOUND"
ARTIFACT_CAPTURE_FAILED = "ARTIFACT_CAPTURE_FAILED"

TIMEOUT_HINT = (
    "Do not resubmit the same SQL: check the query plan and indexes, filter earlier, "
    "aggregate in the database or add a LIMIT, then run a cheaper query."
)


class SqlError(AssayError):
    """An error of the SQL plugin; ``details`` may carry ``stopped`` and ``elapsed_ms``."""

    code = "SQL_ERROR"
