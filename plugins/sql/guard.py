"""The read-only check: one read-only statement, judged by parsing it per dialect.

The text must parse (sqlglot, in the datasource's dialect) into exactly one
statement whose root is a query (SELECT, set operations, VALUES, SHOW,
DESCRIBE) and whose tree holds no write, DDL, session, transaction, COPY,
ATTACH, PRAGMA, ``SELECT ... INTO`` or locking node anywhere (so a
data-modifying CTE is caught), and no function that reaches files, other
sessions or the server. This is the first line; the connection itself is read
only below it (each engine module under ``engines/``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from .errors import SQL_READ_ONLY_REQUIRED, SqlError

# sqlglot dialect names per assay dialect
SQLGLOT_DIALECT = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "duckdb": "duckdb"}

# Refused everywhere: they read or write files, run SQL given as a string,
# signal other sessions or change server state.
_COMMON_FUNCS = {"load_file", "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "query", "query_table"}

_FUNCS = {
    "postgresql": {
        "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir", "pg_ls_waldir",
        "pg_ls_tmpdir", "pg_ls_archive_statusdir", "pg_logdir_ls", "pg_file_write", "pg_file_rename",
        "pg_file_unlink", "pg_file_sync", "lo_import", "lo_export", "lo_create", "lo_creat", "lo_unlink",
        "lo_put", "lo_from_bytea", "lo_open", "lowrite", "lo_truncate", "pg_terminate_backend",
        "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_signal_backend", "pg_promote",
        "pg_switch_wal", "pg_create_restore_point", "pg_backup_start", "pg_backup_stop", "pg_start_backup",
        "pg_stop_backup", "pg_advisory_lock", "pg_advisory_xact_lock", "pg_advisory_lock_shared",
        "pg_try_advisory_lock", "pg_try_advisory_xact_lock", "pg_advisory_unlock", "pg_advisory_unlock_all",
        "set_config", "pg_notify", "nextval", "setval", "query_to_xml", "query_to_xmlschema",
        "query_to_xml_and_xmlschema", "cursor_to_xml", "cursor_to_xmlschema", "pg_import_system_collations",
        "pg_create_logical_replication_slot", "pg_create_physical_replication_slot", "pg_drop_replication_slot",
        "pg_replication_origin_create", "pg_wal_replay_pause", "pg_wal_replay_resume", "pg_log_backend_memory_contexts",
        "dblink_exec",
    },
    "mysql": {
        "load_file", "get_lock", "release_lock", "release_all_locks", "master_pos_wait", "source_pos_wait",
        "master_gtid_wait", "sys_exec", "sys_eval", "lo_import", "lo_export",
    },
    "sqlite": {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "zipfile", "fsdir", "sqlar_compress"},
    "duckdb": {
        "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto",
        "read_json_objects", "read_ndjson", "read_ndjson_auto", "read_ndjson_objects", "read_text", "read_blob",
        "glob", "sniff_csv", "parquet_metadata", "parquet_schema", "parquet_file_metadata", "parquet_kv_metadata",
        "iceberg_scan", "delta_scan", "sqlite_scan", "sqlite_attach", "postgres_scan", "postgres_attach",
        "mysql_scan", "read_xlsx", "st_read", "getenv", "duckdb_secrets", "which_secret",
    },
}
_FUNCS["mariadb"] = _FUNCS["mysql"]
_PREFIXES = {"postgresql": ("dblink", "pg_read_", "pg_ls_", "pg_file_", "lo_", "pg_create_", "pg_drop_", "pg_replication_")}

_FILE_LIKE = re.compile(r"(/|\\|://|\.(csv|tsv|parquet|json|jsonl|ndjson|txt|gz|zst|xlsx|db|duckdb|sqlite)$)", re.I)
_EXPLAIN = re.compile(r"^\s*explain\s+(?:query\s+plan\s+)?(?P<rest>.*)$", re.I | re.S)
_EXPLAIN_EXECUTES = re.compile(r"^\s*(\(.*\banalyze\b|analyze\b|analyse\b)", re.I | re.S)


@dataclass(frozen=True)
class Verdict:
    """Why a statement was accepted (its kind) - refusals raise instead."""

    kind: str


def refused(reason: str) -> SqlError:
    return SqlError(
        SQL_READ_ONLY_REQUIRED,
        f"refused: {reason}",
        "Send exactly one read-only SELECT (WITH ... SELECT is fine); writes, DDL, session settings, "
        "file access and multiple statements are not allowed.",
        details={"reason": reason},
    )


def check_read_only(sql: str, dialect: str) -> Verdict:
    """Accept ``sql`` if it is exactly one read-only statement in ``dialect``; else raise SQL_READ_ONLY_REQUIRED."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    if not sql or not sql.strip():
        raise refused("the SQL text is empty")
    explain = _EXPLAIN.match(sql)
    if explain:
        if _EXPLAIN_EXECUTES.match(explain["rest"]):
            raise refused("EXPLAIN ANALYZE executes the statement")
        inner = check_read_only(explain["rest"], dialect)
        return Verdict("explain " + inner.kind)
    read = SQLGLOT_DIALECT.get(dialect, dialect)
    try:
        statements = [s for s in sqlglot.parse(sql, read=read) if s is not None]
    except SqlglotError as exc:
        first = str(exc).splitlines()[0][:200]
        raise refused(f"the text does not parse as {dialect} SQL ({first})") from None
    except Exception as exc:  # noqa: BLE001 - a parser crash is a refusal, never a pass
        raise refused(f"the text could not be parsed ({type(exc).__name__})") from None
    if not statements:
        raise refused("the SQL text holds no statement")
    if len(statements) > 1:
        raise refused(f"{len(statements)} statements were sent; send exactly one")
    root = statements[0]
    allowed_roots = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery, exp.Show, exp.Describe)
    if not isinstance(root, allowed_roots):
        raise refused(f"{_label(root)} is not a read-only query")
    banned = _banned_node_types(exp)
    funcs = _FUNCS.get(dialect, set()) | _COMMON_FUNCS
    prefixes = _PREFIXES.get(dialect, ())
    for node in root.walk():
        if isinstance(node, banned):
            raise refused(f"{_label(node)} is not allowed in a read-only query")
        if isinstance(node, exp.Func):
            name = _func_name(node, exp)
            if name in funcs or (prefixes and name.startswith(prefixes)):
                raise refused(f"function {name}() reaches files, other sessions or the server")
        if dialect == "duckdb" and isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            if _FILE_LIKE.search(node.name or ""):
                raise refused(f"reading the file {node.name!r} is not allowed")
        if isinstance(node, exp.Into):
            raise refused("SELECT ... INTO writes a table or file")
    return Verdict(_label(root))


def _banned_node_types(exp) -> tuple[type, ...]:
    names = (
        "Insert", "Update", "Delete", "Merge", "Create", "Drop", "Alter", "AlterTable", "TruncateTable",
        "Command", "Copy", "Pragma", "Into", "Set", "Use", "Transaction", "Commit", "Rollback", "Grant",
        "Revoke", "LoadData", "Attach", "Detach", "Install", "Export", "Cache", "Uncache", "Refresh", "Lock",
        "Analyze", "Comment", "Kill", "Summarize", "Call", "Declare", "Execute", "Prepare",
    )
    return tuple(getattr(exp, n) for n in names if isinstance(getattr(exp, n, None), type))


def _func_name(node, exp) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    try:
        return node.sql_name().lower()
    except Exception:  # noqa: BLE001
        return type(node).__name__.lower()


def _label(node) -> str:
    key = getattr(node, "key", "") or type(node).__name__
    if key == "command":
        word = str(getattr(node, "this", "") or "").split()[:1]
        return (word[0].upper() if word else "this command")
    return key.upper().replace("_", " ")
