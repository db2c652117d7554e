"""`assay ask --continue`, and `assay runs show` / `export` of a follow-up: the thread and its cited evidence."""

from __future__ import annotations

import json
import zipfile

from tests.conftest import run_assay

SUM_SQL = "SELECT region, SUM(amount) AS total FROM sales GROUP BY region"


def _newest() -> dict:
    listed = run_assay("runs", "ls", "--json")
    run_id = json.loads(listed.stdout.splitlines()[0])["run_id"]
    return json.loads(run_assay("runs", "show", run_id, "--json").stdout)["run"]


def _thread(shop_db, script) -> tuple[dict, dict, str]:
    first = run_assay(
        "ask",
        "--db",
        f"sqlite:///{shop_db}",
        "--model",
        script({"tool": "sql_query", "arguments": {"sql": SUM_SQL}}, {"text": "south sells most"}),
        "Which region sells most?",
    )
    assert first.exit_code == 0, first.output
    one = _newest()
    art = one["artifact_ids"][0]
    second = run_assay(
        "ask",
        "--continue",
        "last",
        "--model",
        script(
            {"tool": "read_artifact_result", "arguments": {"artifact_id": art}},
            {"text": f"south's total is 32 [{art}]"},
        ),
        "How much did it sell?",
    )
    assert second.exit_code == 0, second.output
    return one, _newest(), art


def test_ask_continue_last_makes_a_follow_up_on_the_parents_database(shop_db, script):
    one, two, art = _thread(shop_db, script)
    assert two["parent_run_id"] == one["run_id"] and two["status"] == "answered"
    assert two["summary"]["datasources"] == [f"sqlite:///{shop_db}"]  # the parent's, attached again
    assert two["summary"]["thread"]["chain"] == [one["run_id"]]


def test_runs_show_of_a_follow_up_names_its_thread_and_the_earlier_artifacts_it_cites(
    shop_db, script
):
    one, two, art = _thread(shop_db, script)
    shown = run_assay("runs", "show", two["run_id"])
    assert shown.exit_code == 0, shown.output
    assert f"thread: {one['run_id']} -> {two['run_id']} (this run last)" in shown.stdout
    assert f"cited from the thread: {art}" in shown.stdout
    as_json = json.loads(run_assay("runs", "show", two["run_id"], "--json").stdout)
    assert as_json["thread"] == [one["run_id"], two["run_id"]] and as_json["thread_cited"] == [art]


def test_the_export_of_a_follow_up_carries_the_cited_earlier_artifact_and_verifies_alone(
    shop_db, script, tmp_path
):
    one, two, art = _thread(shop_db, script)
    bundle = tmp_path / "follow_up.zip"
    exported = run_assay("runs", "export", two["run_id"], "-o", str(bundle))
    assert exported.exit_code == 0, exported.output
    with zipfile.ZipFile(bundle) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["thread"] == {"chain": [one["run_id"], two["run_id"]], "cited": [art]}
    assert art in [a["artifact_id"] for a in manifest["artifacts"]]
    verified = run_assay("artifacts", "verify", str(bundle))
    assert verified.exit_code == 0 and "0 problem(s)" in verified.stdout, verified.output


def test_continue_of_an_unknown_run_is_refused_with_its_code(shop_db, script):
    refused = run_assay(
        "ask", "--continue", "run_nope", "--model", script({"text": "x"}), "and then?"
    )
    assert refused.exit_code != 0 and "THREAD_PARENT_NOT_FOUND" in refused.output


def test_chat_run_outside_the_assay_group_makes_its_kernel_from_the_environment():
    """The chat command invoked on its own (as a plugin author's test or another click group does,
    with no ``assay`` context object) takes a kernel from the environment, as every other command
    does (kernel.cli.cli_kernel); it read ``ctx.find_object(dict)["kernel"]`` and failed with
    TypeError ('NoneType' object is not subscriptable) before asking anything."""
    from click.testing import CliRunner

    from assay.plugins.agent.chat import make_chat_command

    result = CliRunner().invoke(make_chat_command(), [], input="")  # Ctrl-D at the first prompt
    assert result.exit_code == 0, repr(result.exception)
