"""``assay ask`` and ``assay runs``: live steps, statuses as exit codes, bad input recorded, export verified."""

from __future__ import annotations

import json
import socket
import zipfile

import pytest

from tests.conftest import run_assay

SUM_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"


def ask(*args):
    return run_assay("ask", *args)


def runs():
    result = run_assay("runs", "ls", "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_ask_shows_each_step_the_answer_the_status_and_the_artifacts(shop_db, script):
    model = script(
        {"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south sells most"}
    )
    result = ask("--db", f"sqlite:///{shop_db}", "--model", model, "Which region sells most?")
    assert result.exit_code == 0, result.output
    out = result.stdout
    [record] = runs()
    artifact = record["artifact_ids"][0]
    assert f"[1] sql_query  {SUM_SQL}" in out and f"-> 2 rows, {artifact}, " in out
    assert (
        "south sells most" in out and "status: answered" in out and f"artifacts: {artifact}" in out
    )
    assert record["status"] == "answered" and record["question"] == "Which region sells most?"


def test_ask_json_prints_one_run_record_and_quiet_only_the_answer(shop_db, script):
    steps = [{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south"}]
    result = ask("--db", f"sqlite:///{shop_db}", "--model", script(*steps), "--json", "q")
    assert result.exit_code == 0
    [line] = result.stdout.splitlines()
    record = json.loads(line)
    assert (
        record["status"] == "answered"
        and record["tool_calls"][0]["row_count"] == 2
        and record["artifact_ids"]
    )
    quiet = ask("--db", f"sqlite:///{shop_db}", "--model", script(*steps), "--quiet", "q")
    assert quiet.exit_code == 0 and quiet.stdout == "south\n"


@pytest.mark.parametrize(
    "steps, extra, status, code",
    [
        ([{"text": "south, surely"}], [], "needs_analysis", 3),
        (
            [
                {"tool": "sql_query", "arguments": {"sql": "SELECT * FROM nowhere"}},
                {"text": "south"},
            ],
            [],
            "failed",
            5,
        ),
        (
            [{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}] * 3,
            ["--max-steps", "2"],
            "max_steps",
            6,
        ),
    ],
)
def test_each_status_has_its_own_exit_code(shop_db, script, steps, extra, status, code):
    result = ask("--db", f"sqlite:///{shop_db}", "--model", script(*steps), *extra, "q")
    assert result.exit_code == code, result.output
    assert f"status: {status}" in result.stdout and runs()[0]["status"] == status


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "case",
    ["unknown model", "unreachable model server", "database does not connect", "empty question"],
)
def test_bad_input_is_a_clear_error_with_its_code_and_the_run_is_kept(
    shop_db, script, monkeypatch, case
):
    db, model, question = f"sqlite:///{shop_db}", script({"text": "x"}), "q"
    if case == "unknown model":
        model, code, status, exit_code = "gpt-17", "MODEL_NOT_FOUND", "invalid_input", 11
    elif case == "unreachable model server":
        monkeypatch.setenv("ASSAY_OPENAI_BASE_URL", f"http://127.0.0.1:{closed_port()}/v1")
        model, code, status, exit_code = (
            "openai_compatible:some-model",
            "MODEL_UNREACHABLE",
            "model_unreachable",
            9,
        )
    elif case == "database does not connect":
        db, code, status, exit_code = (
            f"postgresql://nobody@127.0.0.1:{closed_port()}/x",
            "SQL_DATASOURCE_UNAVAILABLE",
            "invalid_input",
            11,
        )
    else:
        question, code, status, exit_code = "  ", "AGENT_QUESTION_EMPTY", "invalid_input", 11
    result = ask("--db", db, "--model", model, question)
    assert result.exit_code == exit_code, result.output
    assert f"error: {code}: " in result.stderr and "Traceback" not in result.output
    [record] = runs()
    assert (
        record["status"] == status and record["error"]["code"] == code and record["error"]["hint"]
    )
    assert record["question"] == question


def test_runs_show_prints_the_transcript(shop_db, script):
    ask(
        "--db",
        f"sqlite:///{shop_db}",
        "--model",
        script({"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south"}),
        "which?",
    )
    run_id = runs()[0]["run_id"]
    shown = run_assay("runs", "show", run_id)
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert f"run {run_id}" in out and "status: answered" in out and "[0] user: which?" in out
    assert (
        "assistant calls sql_query (call_1)" in out
        and "| south | 32 |" in out
        and "[2] assistant: south" in out
    )
    missing = run_assay("runs", "show", "run_nope")
    assert missing.exit_code != 0 and "RUN_NOT_FOUND" in missing.stderr


def test_runs_export_writes_a_bundle_that_artifacts_verify_accepts_and_a_tampered_one_fails(
    shop_db, script, tmp_path
):
    ask(
        "--db",
        f"sqlite:///{shop_db}",
        "--model",
        script({"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south"}),
        "which?",
    )
    record = runs()[0]
    bundle = tmp_path / "run.zip"
    exported = run_assay("runs", "export", record["run_id"], "-o", str(bundle))
    assert exported.exit_code == 0, exported.output
    with zipfile.ZipFile(bundle) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("manifest.json"))
    assert {"manifest.json", "run.json", "transcript.jsonl", "artifacts/records.jsonl"} <= names
    assert [a["artifact_id"] for a in manifest["artifacts"]] == record["artifact_ids"]
    verified = run_assay("artifacts", "verify", str(bundle))
    assert verified.exit_code == 0 and "0 problem(s)" in verified.stdout

    tampered = tmp_path / "tampered.zip"
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(tampered, "w") as out:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.startswith("artifacts/content/"):
                data = data.replace(b"32", b"99")
            out.writestr(item, data)
    failed = run_assay("artifacts", "verify", str(tampered))
    assert failed.exit_code == 1 and "CORRUPT  artifacts/content/" in failed.stdout


def test_record_writes_a_cassette_that_replays_the_same_run(shop_db, script, tmp_path):
    cassette = tmp_path / "cassette.jsonl"
    steps = [{"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south sells most"}]
    recorded = ask(
        "--db",
        f"sqlite:///{shop_db}",
        "--model",
        script(*steps),
        "--record",
        str(cassette),
        "--json",
        "which region?",
    )
    assert recorded.exit_code == 0, recorded.output
    lines = cassette.read_text().splitlines()
    assert len(lines) == 3  # header + one line per model exchange
    replayed = ask(
        "--db", f"sqlite:///{shop_db}", "--model", f"replay:{cassette}", "--json", "which region?"
    )
    assert replayed.exit_code == 0, replayed.output
    first, second = json.loads(recorded.stdout), json.loads(replayed.stdout)
    assert (
        second["answer"] == first["answer"] == "south sells most" and second["status"] == "answered"
    )
    assert second["run_id"] != first["run_id"] and second["tool_calls"][0]["row_count"] == 2


def test_runs_show_prints_the_executed_sql_beside_the_submitted_call(shop_db, script):
    submitted = "select region, sum(amount) as total /* per region */ from sales group by region"
    ask(
        "--db",
        f"sqlite:///{shop_db}",
        "--model",
        script({"tool": "sql_query", "arguments": {"sql": submitted}}, {"text": "south"}),
        "which?",
    )
    [record] = runs()
    artifact = record["artifact_ids"][0]
    out = run_assay("runs", "show", record["run_id"]).stdout
    assert submitted in out  # the call, as the model sent it
    assert (
        f"executed SQL ({artifact}): SELECT region, SUM(amount) AS total FROM sales GROUP BY region"
        in out
    )
