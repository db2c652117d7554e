"""Small honesty defects of a run's record and output: each test fails on the code before its fix."""

from __future__ import annotations

import json
import re

from assay.kernel.evidence.records import new_artifact_id
from assay.plugins.agent.prompt import EVIDENCE_RULES
from tests.conftest import run_assay


def script(tmp_path, steps) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(steps))
    return f"scripted:{path}"


def test_quiet_says_why_when_a_run_ends_without_an_answer(tmp_path):
    model = script(tmp_path, [{"tool": "current_time", "arguments": {}}] * 3)
    result = run_assay("ask", "--quiet", "--max-steps", "2", "--model", model, "what time is it?")
    assert result.exit_code == 6
    assert result.stdout == "" and "status: max_steps" in result.stderr


def test_a_run_refused_before_the_model_has_no_negative_elapsed_time(make_assay_kernel):
    from assay.plugins.agent.ask import AskOptions, ask

    transcript = ask(
        make_assay_kernel(load_entrypoints=True), AskOptions(question="how many?", model="nosuch")
    )
    assert transcript.status == "invalid_input" and transcript.error.code == "MODEL_NOT_FOUND"
    assert (
        transcript.ended_at >= transcript.started_at and transcript.elapsed_s >= 0
    )  # ended before it began


def test_the_citation_example_in_the_system_prompt_has_the_shape_of_an_artifact_id():
    example = re.search(r"like \[([^\]]+)\]", EVIDENCE_RULES).group(1)
    real = new_artifact_id()
    assert example[:4] == real[:4] == "art_" and len(example) == len(real)
    assert re.fullmatch(r"art_[0-9a-f]+", example)


def test_current_time_refuses_an_offset_out_of_range_as_an_argument_error(tmp_path):
    model = script(
        tmp_path,
        [{"tool": "current_time", "arguments": {"tz_offset_minutes": 100000}}, {"text": "done"}],
    )
    result = run_assay("ask", "--json", "--model", model, "what time is it?")
    call = json.loads(result.stdout.splitlines()[0])["tool_calls"][0]
    assert call["error_code"] == "TOOL_ARGUMENTS_INVALID"
    listed = run_assay("tools", "--json")
    schema = next(t for t in json.loads(listed.stdout) if t["name"] == "current_time")
    bounds = json.dumps(schema)
    assert '"minimum": -720' in bounds and '"maximum": 840' in bounds


def test_generate_report_shows_the_status_it_returned_not_ok(tmp_path):
    model = script(
        tmp_path,
        [
            {"tool": "generate_report", "arguments": {"instructions": "refunds"}},
            {"text": "no report yet"},
        ],
    )
    result = run_assay("ask", "--model", model, "write the refunds report")
    assert "-> report needs_analysis" in result.stdout, result.stdout
    assert "-> ok" not in result.stdout
