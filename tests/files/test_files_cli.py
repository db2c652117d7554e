"""`assay ask --file`, `assay sql --file`, ASSAY_FILES and the [files] table, end to end."""

from __future__ import annotations

import json

from tests.conftest import run_assay
from tests.files.conftest import write_csv, write_xlsx

GROUP_BY = "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"


def test_assay_sql_file_runs_a_query_over_a_csv(assay_env, files_dir):
    path = write_csv(files_dir / "sales.csv")
    result = run_assay("sql", "--file", str(path), GROUP_BY)
    assert result.exit_code == 0, result.output
    assert "| north | 250.5 |" in result.output and "artifact_id: art_" in result.output


def test_assay_sql_file_reports_a_bad_file_by_its_code(assay_env, files_dir):
    (files_dir / "empty.csv").write_bytes(b"")
    result = run_assay("sql", "--file", str(files_dir / "empty.csv"), "SELECT 1")
    assert result.exit_code != 0 and "FILE_EMPTY" in result.output


def test_assay_files_variable_names_each_file(assay_env, files_dir, monkeypatch):
    write_csv(files_dir / "s.csv")
    write_xlsx(files_dir / "book.xlsx")
    result = run_assay(
        "sql",
        "-d",
        "files",
        "SELECT (SELECT count(*) FROM sales) + (SELECT count(*) FROM book) AS n",
        env={"ASSAY_FILES": f"sales={files_dir / 's.csv'}; book={files_dir / 'book.xlsx'}"},
    )
    assert result.exit_code == 0, result.output
    assert "| 10 |" in result.output


def test_the_files_table_of_the_config_file_registers_files(assay_env, files_dir, tmp_path):
    write_csv(files_dir / "s.csv")
    config = tmp_path / "assay.toml"
    config.write_text(f'[files.sources]\nsales = "{files_dir / "s.csv"}"\n')
    result = run_assay(
        "sql", "-d", "files", "SELECT count(*) AS n FROM sales", env={"ASSAY_CONFIG": str(config)}
    )
    assert result.exit_code == 0, result.output
    assert "| 5 |" in result.output


def test_assay_ask_file_answers_from_the_file_and_traces_to_its_source(
    assay_env, files_dir, tmp_path
):
    path = write_csv(files_dir / "sales.csv")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool": "describe_table", "arguments": {"table": "sales"}},
                {"tool": "sql_query", "arguments": {"sql": GROUP_BY}},
                {"text": "North sold the most: 250.5."},
            ]
        )
    )
    result = run_assay(
        "ask",
        "--file",
        str(path),
        "--model",
        f"scripted:{script}",
        "--json",
        "Which region sold most?",
    )
    assert result.exit_code in (0, 12), result.output
    record = json.loads(result.stdout.strip().splitlines()[-1])
    from assay import Kernel

    kernel = Kernel().start()
    try:
        catalog = kernel.evidence.catalog
        arts = [catalog.get(a) for a in record["artifact_ids"]]
        (query,) = [a for a in arts if a.kind == "sql"]
        (source_id,) = query.provenance["sources"]
        source = catalog.get(source_id)
        assert source.kind == "source" and source.run_id == query.run_id == record["run_id"]
        assert source.provenance["name"] == "sales.csv" and len(source.provenance["sha256"]) == 64
    finally:
        kernel.close()


def test_assay_prompt_file_describes_the_file_as_a_table_of_the_prompt(assay_env, files_dir):
    path = write_csv(files_dir / "sales.csv")
    result = run_assay("prompt", "--file", f"sales={path}", "--json", "Which region sold the most?")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert "sales" in data["system_prompt"] and "region" in data["system_prompt"]
    (files_db,) = data["databases"]
    assert [t["name"] for t in files_db["shown"]] == ["sales"]
