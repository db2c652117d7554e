"""`assay ask --file` end to end with the scripted model: SQL over the file, Python over the same file
(``load_file`` in the real podman sandbox), and an answer whose figures trace to the file's source."""

from __future__ import annotations

import json

from tests.code_interpreter.conftest import IMAGE, _podman_image_ready
from tests.conftest import require, run_assay
from tests.files.conftest import write_csv

GROUP_BY = "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"
PYTHON = (
    "df = load_file('sales')\n"
    "REPORT_RESULT = {'north_mean': float(df[df.region == 'north'].amount.mean())}"
)


def test_ask_file_answers_with_sql_and_python_over_the_file_tracing_to_its_source(
    assay_env, files_dir, tmp_path
):
    ok, what = _podman_image_ready()
    require(ok, what)
    path = write_csv(files_dir / "sales.csv")
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool": "sql_query", "arguments": {"sql": GROUP_BY}},
                {"tool": "code_interpreter", "arguments": {"code": PYTHON}},
                {"text": "North sold the most, 250.5 in total, 125.25 a month on average."},
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
        "Which region sold most, and how much a month?",
        env={"SANDBOX_RUNTIME": "podman", "SANDBOX_IMAGE_PYTHON": IMAGE},
    )
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["status"] == "answered" and record["figures"]["checked"] == 2
    assert not record["figures"].get("unsupported")
    from assay import Kernel

    kernel = Kernel().start()
    try:
        catalog = kernel.evidence.catalog
        arts = {a.kind: a for a in (catalog.get(i) for i in record["artifact_ids"])}
        query, python = arts["sql"], arts["python"]
        assert python.result == {"north_mean": 125.25}
        (source_id,) = query.provenance["sources"]
        assert python.provenance["sources"] == [source_id]
        source = catalog.get(source_id)
        assert source.kind == "source" and source.provenance["name"] == "sales.csv"
        assert source.run_id == python.run_id == record["run_id"]
    finally:
        kernel.close()
