"""Datasources from the environment, the config file and the CLI; the plugin's hooks and commands."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from assay import Kernel
from assay.plugins.sql.settings import SqlSettings, name_for_url, parse_databases


def sql_kernel() -> Kernel:
    return Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False).start()


def test_databases_env_accepts_json_pairs_and_bare_urls():
    assert parse_databases('{"a": "sqlite:///a.db"}') == {"a": "sqlite:///a.db"}
    assert parse_databases("a=sqlite:///a.db; b=duckdb:///b.duckdb") == {
        "a": "sqlite:///a.db",
        "b": "duckdb:///b.duckdb",
    }
    assert parse_databases("postgresql://u:p@h/sales") == {"sales": "postgresql://u:p@h/sales"}
    assert name_for_url("sqlite:////tmp/Retail-2024.db") == "retail-2024"


def test_env_datasources_become_database_resources(monkeypatch, sqlite_path):
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"retail=sqlite:///{sqlite_path}")
    monkeypatch.setenv("ASSAY_SQL_DEFAULT_TIMEOUT_S", "7")
    kernel = sql_kernel()
    try:
        db = kernel.resources["retail"]
        assert db.type == "database" and db.dialect == "sqlite"
        assert db.default_timeout_s == 7
        assert kernel.provenance("resources", "retail") == "sql"
        assert kernel.call_tool("sql_query", {"sql": "SELECT count(*) FROM stores"}).success
    finally:
        kernel.close()


def test_config_file_sql_section_gives_per_datasource_limits(monkeypatch, tmp_path, sqlite_path):
    config = tmp_path / "assay.toml"
    config.write_text(
        "[sql]\npool_size = 2\n"
        f'[sql.databases.retail]\nurl = "sqlite:///{sqlite_path}"\ntimeout_s = 3\nmax_timeout_s = 5\n'
    )
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    kernel = sql_kernel()
    try:
        db = kernel.resources["retail"]
        assert db.default_timeout_s == 3 and db.effective_timeout(60) == 5
        assert db.settings.pool_size == 2
    finally:
        kernel.close()


def test_a_bad_datasource_url_leaves_the_tools_and_other_datasources_working(
    monkeypatch, sqlite_path
):
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"bad=nosuchdb://x/y;good=sqlite:///{sqlite_path}")
    kernel = sql_kernel()
    try:
        assert "good" in kernel.resources and "bad" not in kernel.resources
        assert {"sql_query", "list_tables", "describe_table"} <= set(kernel.tools)
    finally:
        kernel.close()


def test_assay_config_masks_datasource_passwords(monkeypatch):
    monkeypatch.setenv(
        "ASSAY_SQL_DATABASES",
        '{"sales": {"url": "postgresql://analyst:hunter2@127.0.0.1:1/sales"}}',
    )
    kernel = sql_kernel()
    try:
        masked = kernel.settings.masked()
        assert "hunter2" not in json.dumps(masked, default=str)
        assert (
            masked["sql"]["databases"]["sales"]["url"]
            == "postgresql://analyst:***@127.0.0.1:1/sales"
        )
        assert (
            "hunter2" in kernel.settings.section("sql", SqlSettings).databases["sales"].url
        )  # still connects
    finally:
        kernel.close()


def test_register_database_engines_registers_the_four_engines():
    kernel = sql_kernel()
    engines = kernel.registry("database_engines").as_dict()
    assert {"sqlite", "postgresql", "mysql", "duckdb"} <= set(engines)
    assert "mariadb" in engines["mysql"].schemes and "postgres" in engines["postgresql"].schemes


def test_register_tools_adds_sql_query_list_tables_describe_table_with_schemas():
    kernel = sql_kernel()
    schema = kernel.tools["sql_query"].parameters
    assert schema["required"] == ["sql"]
    assert set(schema["properties"]) == {"sql", "datasource", "timeout_s"}


def test_sql_settings_defaults_follow_the_issue():
    s = SqlSettings()
    assert (s.default_timeout_s, s.preview_rows, s.preview_chars) == (30.0, 50, 20_000)


def test_plugin_module_imports_without_sqlalchemy_or_sqlglot():
    import subprocess
    import sys

    code = (
        "import sys, assay.plugins.sql, assay.plugins.sql.tools; "
        "print(sorted(m for m in ('sqlalchemy', 'sqlglot', 'psycopg', 'pymysql', 'duckdb') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


# --- CLI ---------------------------------------------------------------------


def run_cli(*args: str):
    from assay.kernel.cli import build_cli, cli

    kernel = Kernel()
    group = build_cli(kernel)
    try:
        return CliRunner().invoke(group, list(args), obj={"kernel": kernel}, catch_exceptions=False)
    finally:
        kernel.close()
        for name in ("sql", "db"):
            cli.commands.pop(name, None)  # build_cli mutates the shared root group


def test_cli_sql_prints_the_preview_and_the_artifact_id(sqlite_path):
    result = run_cli(
        "sql",
        "--db",
        f"sqlite:///{sqlite_path}",
        "SELECT store_id, city FROM stores ORDER BY 1 LIMIT 2",
    )
    assert result.exit_code == 0, result.output
    assert "| store_id | city |" in result.output
    assert "artifact_id: art_" in result.output


def test_cli_sql_refusal_exits_non_zero_with_the_code(sqlite_path):
    result = run_cli("sql", "--db", f"sqlite:///{sqlite_path}", "DELETE FROM stores")
    assert result.exit_code == 1
    assert "SQL_READ_ONLY_REQUIRED" in result.output


def test_cli_db_schema_prints_tables_and_json(sqlite_path):
    text = run_cli("db", "schema", "--db", f"sqlite:///{sqlite_path}")
    assert text.exit_code == 0, text.output
    assert (
        "orders (~2,000 rows" in text.output
        and "FK (customer_id) -> customers(customer_id)" in text.output
    )
    as_json = run_cli("db", "schema", "--db", f"sqlite:///{sqlite_path}", "--json")
    data = json.loads(as_json.output)
    assert data["dialect"] == "sqlite" and len(data["tables"]) == 7


@pytest.mark.parametrize(
    "args",
    [
        ("sql", "--db", "postgresql://u:s3cretpw@127.0.0.1:1/x", "SELECT 1"),
        ("db", "schema", "--db", "postgresql://u:s3cretpw@127.0.0.1:1/x"),
    ],
)
def test_cli_never_prints_the_password(args):
    result = run_cli(*args)
    assert result.exit_code != 0
    assert "s3cretpw" not in result.output
