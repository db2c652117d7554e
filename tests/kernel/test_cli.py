"""The `assay` command line: in-process through click's CliRunner (``run_assay``),
and once as the installed console script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import run_assay

ASSAY = str(Path(sys.executable).with_name("assay"))


def assay(*args: str, **env: str):
    return run_assay(*args, env={"ASSAY_LOAD_PLUGINS": "builtin_tools", **env})


def test_plugins_table_lists_plugins_with_distribution_version_hooks_status():
    # The one CLI test that pays for a process: run as the installed `assay` console script.
    out = subprocess.run(
        [ASSAY, "plugins"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ASSAY_LOAD_PLUGINS": "builtin_tools"},
    )
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["plugin", "distribution", "version", "status", "hooks"]
    builtin = [r for r in rows if r.startswith("builtin_tools ")][0].split()
    assert builtin == ["builtin_tools", "assay", "0.1.0", "loaded", "tools"]
    assert any(r.split()[3] == "disabled" for r in rows if not r.startswith("builtin_tools"))


def test_plugins_json_has_health_and_every_plugin():
    out = assay("plugins", "--json")
    data = json.loads(out.stdout)
    by_name = {p["name"]: p for p in data["plugins"]}
    assert by_name["builtin_tools"]["registered"] == {"tools": ["current_time", "arithmetic"]}
    assert by_name["builtin_tools"]["status"] == "loaded"
    assert data["health"]["plugins"]["loaded"] == 1


def test_tools_json_includes_schemas_and_provenance():
    out = assay("tools", "--json")
    tools = {t["name"]: t for t in json.loads(out.stdout)}
    assert tools["arithmetic"]["plugin"] == "builtin_tools"
    assert tools["arithmetic"]["parameters"]["additionalProperties"] is False
    openai = json.loads(assay("tools", "--json", "--format", "openai").stdout)
    assert openai[0]["type"] == "function"


def test_tool_call_prints_the_result_envelope():
    out = assay("tool", "call", "arithmetic", "--args", '{"a": 6, "b": 7, "op": "mul"}')
    assert out.exit_code == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["success"] is True and result["data"] == 42.0


def test_tool_call_failure_exits_non_zero_with_one_line():
    out = assay("tool", "call", "arithmetic", "--args", '{"a": 1, "b": 0, "op": "div"}')
    assert out.exit_code == 1
    assert json.loads(out.stdout)["error_code"] == "TOOL_EXECUTION_FAILED"
    assert out.stderr.strip().splitlines() == [
        "error: TOOL_EXECUTION_FAILED: ZeroDivisionError: division by zero"
    ]


def test_bad_input_exits_non_zero_with_one_clear_line():
    cases = [
        (("tool", "call", "arithmetic", "--args", "{not json"), "error: --args is not valid JSON"),
        (("tool", "call", "arithmetic", "--args", "[1]"), "error: --args must be a JSON object"),
        (("no-such-command",), "error: No such command 'no-such-command'."),
        (("tools", "--bogus"), "error: No such option '--bogus'"),
    ]
    for args, expected in cases:
        out = assay(*args)
        assert out.exit_code != 0, args
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(expected), (args, out.stderr)
        assert "Traceback" not in out.stderr


def test_invalid_setting_exits_with_one_line():
    out = assay("plugins", ASSAY_STRICT_PLUGINS="maybe")
    assert out.exit_code != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: CONFIG_INVALID: strict_plugins")


def test_config_command_prints_json():
    out = assay("config")
    assert out.exit_code == 0
    assert json.loads(out.stdout)["kernel"]["load_plugins"] == "builtin_tools"


def test_unexpected_crash_is_one_line_without_traceback():
    import assay.kernel.cli as c

    @c.cli.command("crash")
    def crash():
        raise RuntimeError("something broke")

    try:
        out = assay("crash")
    finally:
        del c.cli.commands["crash"]  # the root group is shared by the whole test process
    assert out.exit_code == 1
    assert out.stderr.strip().splitlines() == [
        "error: internal error: RuntimeError: something broke (set ASSAY_LOG_LEVEL=DEBUG for details)"
    ]


def _collector_after(args: list[str], **env: str) -> dict:
    code = (
        "import gc, json, sys\nimport assay.kernel.cli as c\n"
        f"try:\n    c.main({args!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps({'enabled': gc.isenabled(), 'frozen': gc.get_freeze_count()}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "ASSAY_LOAD_PLUGINS": "builtin_tools", **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_collector_runs_again_after_start_up_with_the_start_up_objects_frozen():
    state = _collector_after(["tools"])
    assert state["enabled"] and state["frozen"] > 1000


def test_the_collector_runs_again_when_start_up_fails():
    assert _collector_after(["tools"], ASSAY_STRICT_PLUGINS="perhaps")["enabled"]
