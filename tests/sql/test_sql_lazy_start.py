"""The SQL plugin at start-up: nothing heavy loads until a datasource or tool is used."""

from __future__ import annotations

import json
import subprocess
import sys

from assay import Kernel
from tests.kernel.conftest import plugin_info


def _fresh(code: str, **env: str) -> dict:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("ASSAY_SQL_")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **env},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_starting_without_sql_configuration_loads_no_sql_module_beyond_the_plugin():
    code = (
        "import sys, json, assay; k = assay.Kernel(plugins=['assay.plugins.sql'], load_entrypoints=False).start(); "
        "print(json.dumps({'loaded': sorted(m for m in sys.modules if m.startswith('assay.plugins.sql.')), "
        "'tools': sorted(k.tools)}))"
    )
    found = _fresh(code)
    assert found == {"loaded": [], "tools": ["describe_table", "list_tables", "sql_query"]}


def test_invalid_sql_setting_still_fails_the_plugin_at_start_up(monkeypatch):
    monkeypatch.setenv("ASSAY_SQL_POOL_SIZE", "0")
    kernel = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False).start()
    info = plugin_info(kernel, "sql")
    assert info.status == "failed" and "pool_size" in info.error["message"]


def test_lazy_sql_tools_are_bound_to_their_own_kernel(monkeypatch, sqlite_path):
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"retail=sqlite:///{sqlite_path}")
    with_db = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False).start()
    monkeypatch.delenv("ASSAY_SQL_DATABASES")
    without = Kernel(plugins=["assay.plugins.sql"], load_entrypoints=False).start()
    try:
        assert with_db.call_tool("list_tables", {}).success
        assert without.call_tool("list_tables", {}).error_code == "SQL_DATASOURCE_NOT_FOUND"
    finally:
        with_db.close()
        without.close()
