"""An attack corpus across dialects: each statement is refused, or proven harmless by the data afterwards.

Statements marked harmless ("~") are read-only and may run; everything else must
be refused by the parser. After the corpus, every table's row count and key sum
is unchanged and no file appeared in a world-writable directory the attacks
target. A second pass bypasses the parser: the database itself refuses writes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from assay.plugins.sql.errors import SQL_READ_ONLY_REQUIRED, SqlError

COMMON = [
    "INSERT INTO stores VALUES (999, 'evil', 'x', 'y', '2020-01-01')",
    "INSERT INTO orders SELECT * FROM orders",
    "UPDATE orders SET total = 0",
    "UPDATE orders SET status = 'x' WHERE order_id IN (SELECT order_id FROM orders)",
    "DELETE FROM order_items",
    "  DeLeTe FrOm refunds",
    "DELETE\nFROM\nrefunds\nWHERE 1 = 1",
    "DROP TABLE refunds",
    "DROP VIEW IF EXISTS some_view",
    "TRUNCATE TABLE refunds",
    "CREATE TABLE evil (a int)",
    "CREATE TABLE evil AS SELECT * FROM orders",
    "CREATE VIEW evil AS SELECT 1 AS a",
    "CREATE INDEX evil_idx ON orders (total)",
    "ALTER TABLE orders ADD COLUMN evil int",
    "ALTER TABLE refunds RENAME TO evil",
    "SELECT 1; DELETE FROM refunds",
    "SELECT * FROM orders; -- harmless?\nDELETE FROM refunds",
    "/* comment */ DELETE FROM refunds",
    "WITH x AS (SELECT 1 AS a) DELETE FROM refunds",
    "WITH x AS (SELECT 1 AS a) INSERT INTO stores SELECT 998, 'e', 'x', 'y', '2020-01-01' FROM x",
    "SELECT 1 UNION SELECT 2; DROP TABLE refunds",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "START TRANSACTION",
    "CREATE TEMPORARY TABLE evil (a int)",
    "GRANT ALL ON orders TO PUBLIC",
    "!SELEC * FROM orders",  # a typo: refused by the parser as a syntax error (SQL_QUERY_FAILED), never run
    "DELETE FROM refunds WHERE refund_id = (SELECT max(refund_id) FROM refunds)",
    "~SELECT count(*) FROM orders",
    "~SELECT * FROM orders WHERE 1 = 0",
]

PER_ENGINE = {
    "postgresql": [
        "COPY orders TO '{dir}/pg.csv'",
        "COPY (SELECT 1) TO PROGRAM 'touch {dir}/pwned'",
        "COPY stores FROM '/etc/hostname'",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT pg_read_binary_file('/etc/passwd')",
        "SELECT pg_catalog.pg_read_file('/etc/passwd')",
        "SELECT \"pg_read_file\"('/etc/passwd')",
        "SELECT PG_LS_DIR('/')",
        "SELECT pg_stat_file('/etc/passwd')",
        "SELECT lo_import('/etc/passwd')",
        "SELECT lo_export(1, '{dir}/lo.bin')",
        "SELECT pg_terminate_backend(pg_backend_pid())",
        "SELECT pg_cancel_backend(1)",
        "SELECT pg_reload_conf()",
        "SELECT set_config('default_transaction_read_only', 'off', false)",
        "SELECT * FROM dblink('dbname=test', 'DELETE FROM refunds') AS t(a text)",
        "SELECT dblink_exec('dbname=test', 'DELETE FROM refunds')",
        "SELECT query_to_xml('DELETE FROM refunds', true, true, '')",
        "DO $$ BEGIN DELETE FROM refunds; END $$",
        "CREATE FUNCTION evil() RETURNS int AS 'SELECT 1' LANGUAGE sql",
        "CREATE EXTENSION dblink",
        "SELECT * INTO evil FROM orders",
        "WITH d AS (DELETE FROM refunds RETURNING *) SELECT count(*) FROM d",
        "WITH u AS (UPDATE orders SET total = 0 RETURNING 1) SELECT count(*) FROM u",
        "SELECT nextval('evil_seq')",
        "SELECT pg_advisory_lock(1)",
        "LISTEN evil",
        "NOTIFY evil",
        "SELECT pg_notify('evil', 'x')",
        "VACUUM orders",
        "ANALYZE orders",
        "REINDEX TABLE orders",
        "SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE",
        "SET default_transaction_read_only = off",
        "RESET ALL",
        "PREPARE p AS DELETE FROM refunds",
        "LOCK TABLE orders",
        "SELECT * FROM orders FOR UPDATE",
        "ALTER SYSTEM SET work_mem = '1GB'",
        "COMMENT ON TABLE orders IS 'evil'",
        "EXPLAIN ANALYZE DELETE FROM refunds",
        "~SELECT pg_sleep(0)",
        "~SELECT current_setting('server_version')",
    ],
    "mariadb": [
        "SELECT * FROM orders INTO OUTFILE '{dir}/my.csv'",
        "SELECT * INTO DUMPFILE '{dir}/my.bin' FROM orders LIMIT 1",
        "SELECT * FROM orders LIMIT 1 INTO DUMPFILE '{dir}/my2.bin'",
        "SELECT 1 INTO @evil",
        "LOAD DATA INFILE '/etc/hostname' INTO TABLE stores",
        "LOAD DATA LOCAL INFILE '/etc/hostname' INTO TABLE stores",
        "SELECT LOAD_FILE('/etc/passwd')",
        "SELECT load_file('/etc/passwd') AS x",
        "HANDLER orders OPEN",
        "INSTALL PLUGIN evil SONAME 'evil.so'",
        "SET GLOBAL read_only = 0",
        "SET SESSION TRANSACTION READ WRITE",
        "SET autocommit = 1",
        "KILL 1",
        "KILL QUERY 1",
        "SHUTDOWN",
        "FLUSH TABLES",
        "LOCK TABLES orders WRITE",
        "RENAME TABLE refunds TO evil",
        "CREATE DATABASE evil",
        "REPLACE INTO stores VALUES (999, 'evil', 'x', 'y', '2020-01-01')",
        "INSERT IGNORE INTO stores VALUES (1, 'evil', 'x', 'y', '2020-01-01')",
        "UPDATE orders SET total = 0 ORDER BY order_id LIMIT 1",
        "SELECT GET_LOCK('evil', 1)",
        "SELECT * FROM orders LOCK IN SHARE MODE",
        "DO SLEEP(0)",
        "USE mysql",
        "~SELECT SLEEP(0)",
        "~SHOW TABLES",
    ],
    "sqlite": [
        "ATTACH DATABASE '{dir}/evil.db' AS evil",
        "DETACH DATABASE main",
        "PRAGMA query_only = 0",
        "PRAGMA writable_schema = 1",
        "PRAGMA journal_mode = WAL",
        "PRAGMA user_version = 5",
        "PRAGMA table_info(orders)",
        "SELECT load_extension('/tmp/evil.so')",
        "SELECT writefile('{dir}/w.txt', 'x')",
        "SELECT readfile('/etc/passwd')",
        "VACUUM",
        "VACUUM INTO '{dir}/copy.db'",
        "REINDEX",
        "ANALYZE",
        "CREATE TRIGGER evil AFTER INSERT ON orders BEGIN DELETE FROM refunds; END",
        "INSERT OR REPLACE INTO stores VALUES (1, 'evil', 'x', 'y', '2020-01-01')",
        "REPLACE INTO stores VALUES (1, 'evil', 'x', 'y', '2020-01-01')",
        "~SELECT * FROM pragma_table_info('orders')",
        "~SELECT sqlite_version()",
    ],
    "duckdb": [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_csv_auto('/etc/passwd')",
        "SELECT * FROM read_parquet('/tmp/x.parquet')",
        "SELECT * FROM parquet_scan('/tmp/x.parquet')",
        "SELECT * FROM read_json('/tmp/x.json')",
        "SELECT * FROM read_json_auto('/tmp/x.json')",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/passwd')",
        "SELECT * FROM '/etc/passwd'",
        "SELECT * FROM '{dir}/x.csv'",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM sniff_csv('/etc/passwd')",
        "INSTALL httpfs",
        "LOAD httpfs",
        "EXPORT DATABASE '{dir}/exp'",
        "IMPORT DATABASE '{dir}'",
        "COPY orders TO '{dir}/d.csv'",
        "COPY stores FROM '/etc/hostname'",
        "ATTACH '{dir}/evil.duckdb' AS evil",
        "DETACH evil",
        "SET enable_external_access = true",
        "RESET enable_external_access",
        "PRAGMA enable_progress_bar",
        "SELECT * FROM query('DELETE FROM refunds')",
        "SELECT * FROM query_table('orders')",
        "CREATE SECRET evil (TYPE s3, KEY_ID 'x', SECRET 'y')",
        "CHECKPOINT",
        "USE memory",
        "CALL pragma_version()",
        "~SELECT version()",
        "~SELECT count(*) FROM duckdb_tables()",
    ],
}

# Writes the database itself must refuse with the parser bypassed.
DB_LEVEL_WRITES = [
    "INSERT INTO stores VALUES (999, 'evil', 'x', 'y', '2020-01-01')",
    "UPDATE orders SET total = 0",
    "DELETE FROM refunds",
    "DROP TABLE refunds",
    "CREATE TABLE evil (a int)",
    "ALTER TABLE orders ADD COLUMN evil int",
    "CREATE INDEX evil_idx ON orders (total)",
    "CREATE VIEW evil AS SELECT 1 AS a",
]

TABLES = ["stores", "products", "customers", "promotions", "orders", "order_items", "refunds"]


def corpus_for(engine: str) -> list[str]:
    return COMMON + PER_ENGINE[engine]


def test_attack_corpus_has_at_least_100_statements_across_dialects():
    total = len(COMMON) + sum(len(v) for v in PER_ENGINE.values())
    assert total >= 100
    assert set(PER_ENGINE) == {"postgresql", "mariadb", "sqlite", "duckdb"}


def fingerprint(db) -> dict:
    out = {}
    for table in TABLES:
        key = db.table(table).columns[0].name
        result = db.query(f"SELECT count(*), sum({key}) FROM {table}")
        out[table] = tuple(int(v or 0) for v in result.rows[0])
    out["_tables"] = sorted(t.name for t in db.tables(refresh=True))
    return out


@pytest.fixture
def attack_dir(tmp_path) -> Path:
    target = tmp_path / "attack"
    target.mkdir()
    os.chmod(
        target, stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO
    )  # the server could write here if allowed
    os.chmod(tmp_path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return target


def test_attack_corpus_is_refused_or_harmless(engine, db, attack_dir):
    before = fingerprint(db)
    slipped = []
    for entry in corpus_for(engine):
        harmless, typo = entry.startswith("~"), entry.startswith("!")
        sql = entry.lstrip("~!").replace("{dir}", str(attack_dir))
        try:
            db.query(sql, timeout_s=10)
        except SqlError as exc:
            expected = SQL_READ_ONLY_REQUIRED
            if typo and exc.code == "SQL_QUERY_FAILED" and exc.details.get("stage") == "parser":
                expected = exc.code
            if exc.code != expected and not harmless:
                slipped.append((sql, exc.code, exc.message))
            continue
        if not harmless:
            slipped.append((sql, "ACCEPTED", ""))
    assert slipped == [], f"statements not refused by the parser on {engine}: {slipped}"
    assert fingerprint(db) == before
    assert list(attack_dir.iterdir()) == []


def test_writes_with_the_parser_bypassed_are_refused_by_the_database(engine, db, parser_bypassed):
    # Issue 12: the database's own refusal (PostgreSQL 25006, MariaDB 1792, SQLite READONLY, DuckDB read-only
    # mode) is reported as SQL_READ_ONLY_REQUIRED, not as a failed query.
    before = fingerprint(db)
    for sql in DB_LEVEL_WRITES:
        with pytest.raises(SqlError) as info:
            db.query(sql, timeout_s=10)
        assert info.value.code == SQL_READ_ONLY_REQUIRED, (sql, info.value.code, info.value.message)
        assert info.value.details["reason"] == "database"
    assert fingerprint(db) == before


# Servers run file functions as their (here: super-) user inside a READ ONLY
# transaction; there the parser's refusal by name is the line, and a
# least-privilege role is the documented advice.
@pytest.mark.parametrize("engine", ["sqlite", "duckdb"])
def test_file_access_with_the_parser_bypassed_is_refused_by_sqlite_and_duckdb(
    engine, db, attack_dir, parser_bypassed
):
    statements = {
        "sqlite": [
            f"ATTACH DATABASE '{attack_dir}/evil.db' AS evil",
            "SELECT load_extension('/tmp/evil.so')",
            "PRAGMA query_only = 0",
            "PRAGMA user_version = 5",
        ],
        "duckdb": [
            "SELECT * FROM read_csv('/etc/passwd')",
            f"COPY orders TO '{attack_dir}/d.csv'",
            f"EXPORT DATABASE '{attack_dir}/exp'",
            "INSTALL httpfs",
            "LOAD httpfs",
            "SET enable_external_access = true",
            f"ATTACH '{attack_dir}/evil.duckdb' AS evil",
        ],
    }[engine]
    for sql in statements:
        with pytest.raises(SqlError) as info:
            db.query(sql, timeout_s=10)
        # the engine refusing file access or a locked setting is a read-only refusal (issue 12)
        assert info.value.code == SQL_READ_ONLY_REQUIRED, (sql, info.value.message)
    assert list(attack_dir.iterdir()) == []
