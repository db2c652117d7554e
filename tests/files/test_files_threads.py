"""A follow-up (`assay ask --continue`) gets the files its parent used: registered again after their bytes
are checked against the parent's record; a file changed or gone since is told, never re-read."""

from __future__ import annotations

import json
import os

from tests.conftest import run_assay
from tests.files.conftest import write_csv

GROUP_BY = "SELECT region, sum(amount) AS total FROM sales GROUP BY region ORDER BY total DESC"


def script(tmp_path, *steps) -> str:
    path = tmp_path / f"script_{len(list(tmp_path.glob('script_*')))}.json"
    path.write_text(json.dumps(list(steps)))
    return f"scripted:{path}"


def ask(*args: str) -> dict:
    result = run_assay("ask", "--json", *args)
    assert result.exit_code in (0, 5, 12), result.output  # 5: its only query failed
    return json.loads(result.stdout.strip().splitlines()[-1])


def parent_over_a_file(tmp_path, path) -> dict:
    return ask(
        "--file",
        str(path),
        "--model",
        script(tmp_path, {"tool": "sql_query", "arguments": {"sql": GROUP_BY}}, {"text": "North."}),
        "Which region sold most?",
    )


def follow_up(tmp_path, *args: str) -> dict:
    steps = [{"tool": "sql_query", "arguments": {"sql": "SELECT count(*) AS n FROM sales"}}]
    return ask(
        "--continue",
        "last",
        *args,
        "--model",
        script(tmp_path, *steps, {"text": "5."}),
        "How many?",
    )


def test_a_run_records_the_files_it_used_with_their_source_artifacts(
    assay_env, files_dir, tmp_path
):
    path = write_csv(files_dir / "sales.csv")
    first = parent_over_a_file(tmp_path, path)
    (table,) = first["files"]["tables"]
    (used,) = table["files"]
    assert table["table"] == "sales" and used["path"] == str(path.resolve())
    assert len(used["sha256"]) == 64 and used["source_artifact_id"].startswith("art_")


def test_a_follow_up_queries_its_parents_file_again(assay_env, files_dir, tmp_path):
    path = write_csv(files_dir / "sales.csv")
    first = parent_over_a_file(tmp_path, path)
    second = follow_up(tmp_path)
    (call,) = second["tool_calls"]
    assert call["success"] and call["row_count"] == 1, call
    assert second["thread"]["files"] == {"registered": ["sales"], "problems": []}
    parents = first["files"]["tables"][0]["files"][0]
    mine = second["files"]["tables"][0]["files"][
        0
    ]  # the follow-up's own source artifact, same bytes
    assert mine["sha256"] == parents["sha256"]
    assert mine["source_artifact_id"] != parents["source_artifact_id"]


def test_a_file_changed_between_turns_is_refused_with_file_changed(assay_env, files_dir, tmp_path):
    path = write_csv(files_dir / "sales.csv")
    parent_over_a_file(tmp_path, path)
    write_csv(path, rows=[("west", "2024-03", 1.0)])
    os.utime(path, ns=(1, 1))
    second = follow_up(tmp_path)
    (problem,) = second["thread"]["files"]["problems"]
    assert problem["code"] == "FILE_CHANGED" and problem["table"] == "sales"
    (call,) = second["tool_calls"]  # the table is not registered: the new bytes are never read
    assert not call["success"] and second["status"] == "failed"
    assert "files" not in second


def test_a_file_gone_between_turns_is_file_missing(assay_env, files_dir, tmp_path):
    path = write_csv(files_dir / "sales.csv")
    parent_over_a_file(tmp_path, path)
    path.unlink()
    second = follow_up(tmp_path)
    (problem,) = second["thread"]["files"]["problems"]
    assert problem["code"] == "FILE_MISSING"


def test_files_given_to_the_follow_up_replace_its_parents(assay_env, files_dir, tmp_path):
    parent_over_a_file(tmp_path, write_csv(files_dir / "sales.csv"))
    other = write_csv(files_dir / "other.csv", rows=[("west", "2024-03", 1.0)])
    second = follow_up(tmp_path, "--file", f"sales={other}")
    (call,) = second["tool_calls"]
    assert call["success"] and "files" not in second["thread"]
    (table,) = second["files"]["tables"]
    assert table["files"][0]["path"] == str(other.resolve())


def test_assay_chat_continuing_a_run_over_a_file_queries_it_each_turn(
    assay_env, files_dir, tmp_path
):
    parent_over_a_file(tmp_path, write_csv(files_dir / "sales.csv"))
    steps = [{"tool": "sql_query", "arguments": {"sql": "SELECT count(*) AS n FROM sales"}}]
    model = script(tmp_path, *steps, {"text": "5."})
    result = run_assay(
        "chat", "--continue", "last", "--model", model, input="How many?\nAnd now?\n"
    )
    assert result.exit_code == 0, result.output
    assert result.output.count("-> 1 row") == 2, result.output  # both turns: the file, again


def test_a_file_touched_between_turns_with_the_same_bytes_is_registered_again(
    assay_env, files_dir, tmp_path
):
    path = write_csv(files_dir / "sales.csv")
    parent_over_a_file(tmp_path, path)
    os.utime(path, ns=(10**18, 10**18))  # another mtime, the same bytes: hashed, found the same
    second = follow_up(tmp_path)
    assert second["thread"]["files"] == {"registered": ["sales"], "problems": []}
    (call,) = second["tool_calls"]
    assert call["success"], call
