"""Issue 12's attack classes, each with members of our own, through the real ``sql_query`` tool.

1. PostgreSQL Unicode-escaped, quoted, case-folded or schema-qualified names
   (and their MariaDB/SQLite/DuckDB analogues: backticks, brackets, case).
2. Functions that run a SQL string (ts_stat, ts_rewrite, query_to_xml,
   dblink, DuckDB query(), EXECUTE IMMEDIATE).
3. MySQL/MariaDB executable comments (/*! */, /*M! */, optimizer hints).
4. Functions and system views a deny-list missed (advisory-lock variants,
   txid_current, pg_logical_emit_message, pg_stat_reset, GET_LOCK, ...).

Every member must be refused with SQL_READ_ONLY_REQUIRED by the guard (never
reaching the database), and afterwards no table, file, lock, setting or other
session has changed. The servers run as their superuser/root login here: the
worst case, where only the guard stands between the model and the server.
"""

from __future__ import annotations

import os
import stat

import pytest

from tests.sql.conftest import admin_url_for, mariadb_admin, new_db, pg_admin
from tests.sql.test_sql_attack_corpus import fingerprint

LOCK = 424242  # the advisory-lock key every lock attempt uses

PG = {
    1: [
        "SELECT U&\"\\0070g_read_file\"('/etc/passwd')",
        "SELECT u&\"\\0070g_read_file\"('/etc/passwd')",
        "SELECT U&\"!0070g_ls_dir\" UESCAPE '!'('/')",
        "SELECT U&\"#0070g_ls_dir\"/* c */UESCAPE/* c */'#'('/')",
        "SELECT U&\"\\+000070g_read_file\"('/etc/passwd')",
        "SELECT U&\"pg\\005Fread\\005Ffile\"('/etc/passwd')",
        'SELECT U&"\\0070g_terminate_backend"(pid) FROM pg_catalog.pg_stat_activity',
        f'SELECT U&"\\0070g_advisory_lock"({LOCK})',
        "SELECT * FROM U&\"\\0070g_create_logical_replication_slot\"('assay_evil', 'test_decoding')",
        "SELECT * FROM U&\"\\0064blink\"('dbname=test', 'DELETE FROM refunds') AS t(a text)",
        "SELECT U&\"\\0070g_catalog\".pg_read_file('/etc/passwd')",
        "SELECT pg_catalog.U&\"\\0070g_ls_dir\"('.')",
        'SELECT "pg_catalog"."pg_ls_dir"(\'.\')',
        "SELECT PG_CATALOG.PG_READ_FILE('/etc/passwd')",
        "SELECT pg_read_file /* between */ ('/etc/passwd')",
        "SELECT pg_catalog . /* c */ pg_read_file('/etc/passwd')",
        "SELECT public.pg_read_file('/etc/passwd')",
        "SELECT 1 OPERATOR(public.+) 1",
        "SELECT U&'\\0041' || U&\"\\0070g_read_file\"('/etc/passwd')",
        "SELECT $$ ' $$ || pg_read_file('/etc/passwd')",
        "SELECT E'\\'' || pg_read_file('/etc/passwd')",
    ],
    2: [
        "SELECT ts_stat('SELECT to_tsvector(name) FROM stores')",
        "SELECT * FROM ts_stat('DELETE FROM refunds RETURNING to_tsvector(reason)')",
        "SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')",
        "SELECT query_to_xml('SELECT 1', true, true, '')",
        "SELECT pg_catalog.query_to_xmlschema('SELECT 1', true, true, '')",
        "SELECT query_to_xml_and_xmlschema('SELECT 1', true, true, '')",
        "SELECT cursor_to_xml('c', 1, true, true, '')",
        "SELECT xpath('/row', query_to_xml('SELECT 1', true, true, ''))",
        "SELECT dblink_exec('dbname=test', 'DELETE FROM refunds')",
        "SELECT * FROM dblink('dbname=test', 'SELECT pg_read_file(''/etc/passwd'')') AS t(a text)",
    ],
    4: [
        f"SELECT pg_try_advisory_lock_shared({LOCK})",
        f"SELECT pg_advisory_lock_shared({LOCK})",
        f"SELECT pg_try_advisory_xact_lock_shared({LOCK})",
        f"SELECT pg_advisory_xact_lock({LOCK})",
        "SELECT pg_logical_emit_message(true, 'assay', 'evil')",
        "SELECT txid_current()",
        "SELECT pg_current_xact_id()",
        "SELECT brin_summarize_new_values('orders')",
        "SELECT pg_stat_reset()",
        "SELECT pg_stat_reset_shared('bgwriter')",
        "SELECT setseed(0.5)",
        "SELECT pg_export_snapshot()",
        "SELECT pg_switch_wal()",
        "SELECT lo_from_bytea(0, 'x')",
        "SELECT currval('x')",
        "SELECT gin_clean_pending_list('x')",
        "SELECT * FROM pg_authid",
        "SELECT passwd FROM pg_catalog.pg_shadow",
        "SELECT query FROM pg_stat_activity",
        "SELECT * FROM pg_file_settings",
        "SELECT * FROM pg_catalog.pg_hba_file_rules",
        "SELECT * FROM pg_largeobject",
        "SHOW search_path; SELECT 1",
    ],
}

MARIADB = {
    1: [
        "SELECT `LOAD_FILE`('/etc/passwd')",
        "SELECT Load_File('/etc/passwd')",
        "SELECT load_file /* c */ ('/etc/passwd')",
        "SELECT mysql.load_file('/etc/passwd')",
        "SELECT test.get_lock('assay_evil', 0)",
    ],
    2: [
        "EXECUTE IMMEDIATE 'DELETE FROM refunds'",
        "PREPARE s FROM 'DELETE FROM refunds'",
    ],
    3: [
        "SELECT 1 /*!50000 , LOAD_FILE('/etc/passwd') */",
        "SELECT 1 /*M!100000 , LOAD_FILE('/etc/passwd') */",
        "SELECT 1 /*m!100000 , LOAD_FILE('/etc/passwd') */",
        "SELECT 1 /*! INTO OUTFILE '{dir}/cmt.csv' */",
        "SELECT 1 /*!50000 , (SELECT GET_LOCK('assay_evil', 0)) */",
        "/*!50000 SET GLOBAL max_connections = 7 */ SELECT 1",
        "SELECT 1 /*!99999 , SLEEP(1) */",
        "SELECT /*+ SET_VAR(sql_mode='') */ 1",
        "SELECT 'x' /*!, @@version */",
        "SELECT 1 FROM orders WHERE 1 = 1 /*!AND LOAD_FILE('/etc/passwd') IS NULL*/",
        "SELECT '/*!' AS looks_harmless, LOAD_FILE('/etc/passwd')",
    ],
    4: [
        "SELECT GET_LOCK('assay_evil', 0)",
        "SELECT IS_USED_LOCK('assay_evil')",
        "SELECT RELEASE_ALL_LOCKS()",
        "SELECT BENCHMARK(100000000, md5('x'))",
        "SELECT LAST_INSERT_ID(5)",
        "SELECT MASTER_POS_WAIT('x', 1)",
        "SELECT MASTER_GTID_WAIT('0-1-1', 0)",
        "SELECT SETVAL(s, 1)",
        "SELECT NEXTVAL(s)",
        "SELECT @x := 1",
        "SELECT 1 INTO @x",
        "SELECT * FROM mysql.user",
        "SELECT * FROM information_schema.processlist",
        "SELECT * FROM performance_schema.threads",
        "SELECT * FROM sys.processlist",
        "SHOW PROCESSLIST",
        "SHOW GRANTS FOR root",
        "SHOW BINLOG EVENTS",
    ],
}

SQLITE = {
    1: [
        "SELECT \"LOAD_EXTENSION\"('/tmp/evil.so')",
        "SELECT [load_extension]('/tmp/evil.so')",
        "SELECT `readfile`('/etc/passwd')",
        "SELECT Load_Extension /* c */ ('/tmp/evil.so')",
        "SELECT main.readfile('/etc/passwd')",
    ],
    4: [
        "SELECT fts3_tokenizer('simple')",
        "SELECT * FROM sqlite_dbpage",
        "SELECT zipfile('x')",
        "SELECT * FROM fsdir('/')",
        "SELECT sqlite_compileoption_get(0)",
        "SELECT * FROM pragma_database_list",
    ],
}

DUCKDB = {
    1: [
        "SELECT * FROM \"read_csv\"('/etc/passwd')",
        "SELECT * FROM READ_TEXT('/etc/passwd')",
        "SELECT * FROM main.read_csv('/etc/passwd')",
        "SELECT * FROM read_blob /* c */ ('/etc/passwd')",
    ],
    2: [
        "SELECT * FROM query('SELECT 1')",
        "SELECT * FROM query_table('orders')",
        "SELECT json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
        "SELECT json_serialize_sql('SELECT 1')",
    ],
    4: [
        "SELECT getenv('HOME')",
        "SELECT * FROM duckdb_secrets()",
        "SELECT * FROM which_secret('s3://x', 's3')",
        "SELECT * FROM duckdb_settings()",
        "SELECT * FROM duckdb_extensions()",
        "SELECT * FROM glob('*')",
        "SELECT * FROM sniff_csv('/etc/passwd')",
        "SELECT * FROM duckdb_temporary_files()",
    ],
}

CLASSES = {"postgresql": PG, "mariadb": MARIADB, "sqlite": SQLITE, "duckdb": DUCKDB}


def members(engine: str) -> list[str]:
    return [sql for group in CLASSES[engine].values() for sql in group]


@pytest.fixture
def attack_dir(tmp_path):
    target = tmp_path / "attack"
    target.mkdir()
    os.chmod(target, stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO)
    os.chmod(tmp_path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return target


def server_state(engine: str) -> dict:
    """What the attacks would change on the server beyond tables: locks, slots, settings."""
    if engine == "postgresql":
        with pg_admin() as conn:
            return {
                "advisory": conn.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = %s",
                    (LOCK,),
                ).fetchone()[0],
                "slots": conn.execute(
                    "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'assay_evil'"
                ).fetchone()[0],
                "settings": conn.execute(
                    "SELECT setting FROM pg_settings WHERE name IN "
                    "('default_transaction_read_only', 'work_mem') ORDER BY name"
                ).fetchall(),
            }
    if engine == "mariadb":
        conn = mariadb_admin()
        try:
            cur = conn.cursor()
            cur.execute(
                "SELECT IS_FREE_LOCK('assay_evil'), @@global.max_connections, @@global.read_only, "
                "@@global.sql_mode"
            )
            return {"row": cur.fetchone()}
        finally:
            conn.close()
    return {}


def test_attack_classes_have_members_for_every_engine():
    assert set(CLASSES) == {"postgresql", "mariadb", "sqlite", "duckdb"}
    assert {1, 2, 4} <= set(PG) and {1, 2, 3, 4} <= set(MARIADB)
    assert sum(len(members(e)) for e in CLASSES) >= 100


def test_attack_classes_are_refused_through_sql_query_and_change_nothing(
    engine, request, kernel, db, attack_dir
):
    kernel.attach(new_db(engine, request, name="retail"))
    before, state = fingerprint(db), server_state(engine)
    witness = (
        pg_admin() if engine == "postgresql" else None
    )  # another session the attacks must not reach
    try:
        slipped = []
        for sql in members(engine):
            sql = sql.replace("{dir}", str(attack_dir))
            result = kernel.call_tool("sql_query", {"sql": sql, "timeout_s": 10})
            reason = result.metadata.get("reason", "")
            if (
                result.success
                or result.error_code != "SQL_READ_ONLY_REQUIRED"
                or reason == "database"
            ):
                slipped.append((sql, result.error_code, (result.message or "")[:200]))
        assert slipped == [], (
            f"{len(slipped)} attack(s) not refused by the guard on {engine}: {slipped}"
        )
        if witness is not None:
            assert witness.execute("SELECT 1").fetchone() == (1,)  # not terminated
    finally:
        if witness is not None:
            witness.close()
    assert fingerprint(db) == before
    assert server_state(engine) == state
    assert list(attack_dir.iterdir()) == []


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_attack_classes_are_refused_for_a_superuser_datasource_marked_allow_privileged(
    engine, db, kernel, request, attack_dir
):
    # The worst case: the login could read files and signal sessions, and only the guard stands in the way.
    from assay.plugins.sql.resource import DatabaseResource
    from assay.plugins.sql.settings import DatasourceConfig

    url = admin_url_for(engine, request)
    kernel.attach(
        DatabaseResource("retail", url, config=DatasourceConfig(url=url, allow_privileged=True))
    )
    ran = kernel.call_tool("sql_query", {"sql": "SELECT count(*) FROM orders"})
    assert ran.success and ran.data["privileged_login"] is True
    before, state = fingerprint(db), server_state(engine)
    witness = pg_admin() if engine == "postgresql" else None
    slipped = []
    try:
        for sql in members(engine):
            result = kernel.call_tool(
                "sql_query", {"sql": sql.replace("{dir}", str(attack_dir)), "timeout_s": 10}
            )
            if (
                result.success
                or result.error_code != "SQL_READ_ONLY_REQUIRED"
                or result.metadata.get("reason") == "database"
            ):
                slipped.append((sql, result.error_code, (result.message or "")[:200]))
        if witness is not None:
            assert witness.execute("SELECT 1").fetchone() == (1,)
    finally:
        if witness is not None:
            witness.close()
    assert slipped == [], (
        f"{len(slipped)} attack(s) not refused by the guard on {engine} (superuser): {slipped}"
    )
    assert fingerprint(db) == before
    assert server_state(engine) == state
    assert list(attack_dir.iterdir()) == []
