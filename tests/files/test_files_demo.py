"""The demo's question of the shipped CSV and a database, on a small copy of the retail schema."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_asks_the_shipped_csv_and_the_database_together(
    make_assay_kernel, tmp_path, monkeypatch
):
    db = tmp_path / "retail.db"
    con = sqlite3.connect(db)
    con.executescript(
        "CREATE TABLE stores (store_id INTEGER PRIMARY KEY, region TEXT);"
        "CREATE TABLE orders (order_id INTEGER PRIMARY KEY, store_id INTEGER, total REAL);"
        "INSERT INTO stores VALUES (1, 'West'), (2, 'South');"
        "INSERT INTO orders VALUES (1, 1, 25000000), (2, 2, 16000000);"
    )
    con.commit()
    con.close()
    monkeypatch.setenv("ASSAY_SQL_DATABASES", f"retail=sqlite:///{db}")
    monkeypatch.syspath_prepend(str(ROOT))
    sys.modules.pop("examples.demo_files", None)
    from assay.plugins.agent.cli_ask import StepPrinter, print_result
    from examples.demo_files import ask_file_and_database

    kernel = make_assay_kernel(load_entrypoints=True).start()
    said: list[str] = []
    assert ask_file_and_database(kernel, said.append, StepPrinter, print_result)
    assert any("read region_targets.csv" in line for line in said)
