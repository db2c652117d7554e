"""code_interpreter against a real sandbox (podman with the built image; some also on local)."""

from __future__ import annotations

import json
import os

import pytest

from tests.code_interpreter.conftest import IMAGE, _caller, capture_query

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _content(kernel_or_run, artifact_id: str) -> bytes:
    from pathlib import Path

    from assay.kernel.evidence import open_verified_content

    _, content = open_verified_content(kernel_or_run, artifact_id)
    return Path(content).read_bytes() if isinstance(content, (str, Path)) else content


def _record(sink, artifact_id: str):
    from assay.kernel.evidence import get_record

    return get_record(sink, artifact_id)


# --- results over evidence ---------------------------------------------------------


def test_pandas_aggregation_over_sql_artifact_equals_sql(call, run, sales_db):
    record = capture_query(
        run.artifacts, sales_db, "SELECT store, amount, refunded, promo FROM sales"
    )
    code = (
        "df = load_artifact(%r)\n"
        "promo = df[df.promo == 1]\n"
        "rate = promo.groupby('store').refunded.mean()\n"
        "REPORT_RESULT = {s: float(v) for s, v in rate.items()}\n" % record.artifact_id
    )
    result = call(code, inputs=[record.artifact_id])
    assert result.success, result.for_model()
    expected = dict(
        sales_db.execute(
            "SELECT store, AVG(refunded * 1.0) FROM sales WHERE promo = 1 GROUP BY store"
        ).fetchall()
    )
    assert result.data["result"] == pytest.approx(expected, rel=1e-12)
    assert set(result.data["result"]) == {"north", "south", "east", "west"}
    python = _record(run.artifacts, result.data["artifact_id"])
    assert python.kind == "python" and python.status == "succeeded"
    assert python.provenance["inputs"] == [record.artifact_id]
    assert python.result == result.data["result"]


def test_load_artifact_returns_typed_dataframe(call, run, sales_db):
    record = capture_query(
        run.artifacts, sales_db, "SELECT id, store, amount, refunded FROM sales ORDER BY id"
    )
    code = (
        "df = load_artifact(%r)\n"
        "REPORT_RESULT = {'rows': len(df), 'cols': list(df.columns), 'dtypes': [str(t) for t in df.dtypes],\n"
        "                 'first': df.iloc[0].tolist(), 'amount_sum': float(df.amount.sum())}\n"
        % record.artifact_id
    )
    result = call(code, inputs=[record.artifact_id])
    assert result.success, result.for_model()
    got = result.data["result"]
    assert got["rows"] == 600 and got["cols"] == ["id", "store", "amount", "refunded"]
    assert got["dtypes"] == ["int64", "object", "float64", "int64"]
    first = sales_db.execute(
        "SELECT id, store, amount, refunded FROM sales ORDER BY id LIMIT 1"
    ).fetchone()
    assert got["first"] == list(first)
    total = sales_db.execute("SELECT SUM(amount) FROM sales").fetchone()[0]
    assert got["amount_sum"] == pytest.approx(total, rel=1e-12)


def test_dataframe_report_result_becomes_canonical_records(call):
    code = (
        "import pandas as pd, numpy as np\n"
        "REPORT_RESULT = pd.DataFrame({'store': ['a', 'b'], 'rate': [0.25, np.nan], 'n': np.array([3, 4])})\n"
    )
    result = call(code)
    assert result.success, result.for_model()
    assert result.data["result"] == [
        {"n": 3, "rate": 0.25, "store": "a"},
        {"n": 4, "rate": None, "store": "b"},  # missing in a frame -> null
    ]


def test_missing_report_result_is_none_and_said_so(call, run):
    result = call("import json\nprint(json.dumps([1, 2]))")
    assert result.success
    assert result.data["result_set"] is False and result.data["result"] is None
    assert "no REPORT_RESULT was assigned; printed output is not a result" in result.content
    record = _record(run.artifacts, result.data["artifact_id"])
    assert record.result is None and record.provenance["result_set"] is False


@pytest.mark.parametrize("value", ["[]", "0", "None"])
def test_assigned_empty_values_are_results(call, run, value):
    result = call(f"REPORT_RESULT = {value}")
    assert result.success
    assert result.data["result_set"] is True
    assert result.data["result"] == json.loads({"None": "null"}.get(value, value))
    assert "no REPORT_RESULT" not in result.content
    assert _record(run.artifacts, result.data["artifact_id"]).provenance["result_set"] is True


def test_report_result_is_per_call(call):
    assert call("REPORT_RESULT = 5").data["result"] == 5
    second = call("y = 1")
    assert second.data["result_set"] is False


def test_unserialisable_report_result_fails_honestly(call):
    result = call("import threading\nREPORT_RESULT = threading.Lock()")
    assert not result.success
    assert result.error_code == "PYTHON_RESULT_INVALID"
    assert "lock" in result.message.lower()


# --- display layer -------------------------------------------------------------------


def test_plot_comes_back_as_valid_png_chart(any_call, any_run):
    code = (
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots(figsize=(5, 3), dpi=100)\n"
        "ax.bar(['a', 'b'], [3, 5])\n"
        "plt.show()\n"
    )
    result = any_call(code)
    assert result.success, result.for_model()
    charts = [a for a in result.artifacts if a.kind == "chart"]
    assert len(charts) == 1
    data = _content(any_run.artifacts, charts[0].artifact_id)
    assert data[:8] == PNG_SIGNATURE
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (500, 300)
    import io

    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")  # a real decode
    assert pixels.shape[:2] == (300, 500)
    assert _record(any_run.artifacts, charts[0].artifact_id).media_type == "image/png"


def test_savefig_and_out_files_become_artifacts(call, run):
    code = (
        "import matplotlib.pyplot as plt, os\n"
        "plt.plot([1, 2, 3])\n"
        "plt.savefig('/workspace/out/line.png')\n"
        "with open('/workspace/out/summary.csv', 'w') as fh:\n"
        "    fh.write('a,b\\n1,2\\n')\n"
    )
    result = call(code)
    assert result.success, result.for_model()
    by_name = {a.name: a for a in result.artifacts if a.kind in ("chart", "file")}
    assert set(by_name) == {"line.png", "summary.csv"}, result.content
    assert by_name["line.png"].kind == "chart"
    assert _content(run.artifacts, by_name["summary.csv"].artifact_id) == b"a,b\n1,2\n"
    assert _content(run.artifacts, by_name["line.png"].artifact_id)[:8] == PNG_SIGNATURE


def test_huge_stdout_is_bounded_and_flagged(call, run):
    result = call("for i in range(400_000):\n    print('line', i)\nREPORT_RESULT = 1")
    assert result.success, result.for_model()
    assert result.data["stdout_truncated"] is True
    assert len(result.content) < 12_000
    assert "output truncated" in result.content
    assert "line 0\n" in result.content and "line 399999" in result.content
    doc = json.loads(_content(run.artifacts, result.data["artifact_id"]))
    assert doc["stdout"].startswith("line 0\nline 1\n")
    assert doc["stdout"].rstrip().endswith("line 399999")
    assert len(doc["stdout"]) < 2_000_000


def test_report_result_survives_a_flood_written_straight_to_fd_1(any_call, any_run):
    """Issue 13 item 9: >= 1 MiB written to fd 1 (a subprocess, os.write) no longer takes the result with it."""
    code = (
        "import os, subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'import os\\nfor _ in range(3): os.write(1, b\"s\" * (1024 * 1024))'])\n"
        "os.write(1, b'w' * (2 * 1024 * 1024))\n"
        "print('printed after')\n"
        "REPORT_RESULT = {'answer': 42}\n"
    )
    result = any_call(code)
    assert result.success, result.for_model()
    assert result.data["result"] == {"answer": 42}
    assert (
        result.data["stdout_truncated"] is True
    )  # the flood is captured (bounded), not lost silently
    doc = json.loads(_content(any_run.artifacts, result.data["artifact_id"]))
    assert doc["stdout"].startswith("s" * 1000)
    assert doc["stdout"].rstrip().endswith("printed after")


# --- notebook state ----------------------------------------------------------------------


def test_state_persists_across_two_calls_in_a_run(any_call):
    first = any_call(
        "import pandas as pd\nx = 41\ndef bump(v):\n    return v + 1\n"
        "frame = pd.DataFrame({'a': [1, 2]})\nopen('notes.txt', 'w').write('kept')"
    )
    assert first.success, first.for_model()
    second = any_call(
        "REPORT_RESULT = [bump(x), int(frame.a.sum()), open('notes.txt').read(), pd.__name__]"
    )
    assert second.success, second.for_model()
    assert second.data["result"] == [42, 3, "kept", "pandas"]


def test_two_runs_do_not_see_each_others_variables_or_files(container_kernel, call, run):
    assert call("secret = 'run-a'\nopen('/workspace/a.txt', 'w').write('a')").success
    other = container_kernel.new_run()
    try:
        seen = call(
            "import os\nREPORT_RESULT = ['secret' in globals(), os.path.exists('/workspace/a.txt')]",
            target=other,
        )
        assert seen.success, seen.for_model()
        assert seen.data["result"] == [False, False]
    finally:
        other.close()
    assert call("REPORT_RESULT = secret").data["result"] == "run-a"


def test_reset_discards_variables_and_files(call):
    assert call("kept = 1\nopen('f.txt', 'w').write('x')").success
    fresh = call(
        "import os\nREPORT_RESULT = ['kept' in globals(), os.path.exists('f.txt')]", reset=True
    )
    assert fresh.data["result"] == [False, False]


def test_unpicklable_variables_stay_live_and_are_named_as_not_in_the_snapshot(call):
    result = call("import threading\nlock = threading.Lock()\ngen = (i for i in range(3))\nn = 7")
    assert result.success
    skipped = {item["name"] for item in result.data["not_persisted"]}
    assert skipped == {"lock", "gen"}
    assert "not in the notebook's snapshot" in result.content
    after = call(
        "REPORT_RESULT = [n, 'lock' in globals(), next(gen)]"
    )  # the holder's memory keeps them
    assert after.data["result"] == [7, True, 0]


# --- failures -------------------------------------------------------------------------------


def test_timeout_kills_the_code_and_keeps_the_last_state(call, run):
    assert call("x = 1").success
    result = call(
        "x = 2\nprint('started the loop')\nimport time\nwhile True:\n    time.sleep(0.05)",
        timeout_s=2,
    )
    assert not result.success
    assert result.error_code == "PYTHON_TIMEOUT"
    assert "killed" in result.message
    assert "started the loop" in result.message  # output printed before the kill is shown
    assert "last finished call" in result.hint
    record = _record(run.artifacts, result.artifacts[0].artifact_id)
    assert record.status == "failed" and record.kind == "python"
    assert call("REPORT_RESULT = x").data["result"] == 1


def test_exception_reports_type_message_and_user_frames_only(any_call, any_run):
    result = any_call("def ratio(a, b):\n    return a / b\n\nvalue = 3\nratio(value, 0)")
    assert not result.success
    assert result.error_code == "PYTHON_EXECUTION_FAILED"
    assert result.message.startswith("ZeroDivisionError: division by zero")
    assert "line 5, in <module>" in result.message and "line 2, in ratio" in result.message
    assert "return a / b" in result.message
    assert "assay_ci_runner" not in result.message and "File " not in result.message
    record = _record(any_run.artifacts, result.artifacts[0].artifact_id)
    assert record.status == "failed" and "ZeroDivisionError" in record.provenance["error"]
    assert any_call("REPORT_RESULT = value").data["result"] == 3  # assigned before the error: kept


def test_syntax_error_is_an_execution_failure(call):
    result = call("x = (1,\nprint(x)")
    assert result.error_code == "PYTHON_EXECUTION_FAILED"
    assert result.message.startswith("SyntaxError")


def test_input_altered_on_disk_fails_before_running(any_call, any_run, sales_db):
    from assay.kernel.evidence import open_verified_content

    record = capture_query(any_run.artifacts, sales_db, "SELECT store, amount FROM sales")
    _, path = open_verified_content(any_run.artifacts, record.artifact_id)
    os.chmod(path, 0o644)
    data = bytearray(open(path, "rb").read())
    data[-3:-2] = b"9" if data[-3:-2] != b"9" else b"8"
    open(path, "wb").write(bytes(data))
    result = any_call("open('ran.txt', 'w').write('yes')", inputs=[record.artifact_id])
    assert not result.success
    assert result.error_code == "ARTIFACT_INTEGRITY_FAILED"
    check = any_call("import os\nREPORT_RESULT = os.path.exists('ran.txt')")
    assert check.data["result"] is False


def test_unknown_input_fails_before_running(call):
    result = call("open('ran.txt', 'w').write('yes')", inputs=["art_does_not_exist"])
    assert result.error_code == "ARTIFACT_NOT_FOUND"
    assert call("import os\nREPORT_RESULT = os.path.exists('ran.txt')").data["result"] is False


def test_inputs_are_read_only_inside_the_sandbox(call, run, sales_db):
    record = capture_query(run.artifacts, sales_db, "SELECT store FROM sales LIMIT 3")
    code = (
        "import glob\npath = glob.glob('/workspace/inputs/*.jsonl')[0]\n"
        "try:\n    open(path, 'a').write('x')\n    REPORT_RESULT = 'writable'\n"
        "except OSError as exc:\n    REPORT_RESULT = type(exc).__name__\n"
    )
    result = call(code, inputs=[record.artifact_id])
    assert result.data["result"] == "PermissionError"
    again = call(
        "REPORT_RESULT = len(load_artifact(%r))" % record.artifact_id, inputs=[record.artifact_id]
    )
    assert again.data["result"] == 3


# --- both runtimes ---------------------------------------------------------------------------


def test_state_and_result_work_on_every_runtime(any_kernel):
    run = any_kernel.new_run()
    try:
        assert any_kernel.call_tool("code_interpreter", {"code": "base = 20"}, run=run).success
        result = any_kernel.call_tool(
            "code_interpreter", {"code": "REPORT_RESULT = {'v': base + 1}"}, run=run
        )
        assert result.success, result.for_model()
        assert result.data["result"] == {"v": 21}
        assert result.metadata["isolated"] is (result.metadata["runtime"] != "local")
    finally:
        run.close()


# --- no sandbox ---------------------------------------------------------------------------------


def test_no_container_runtime_and_no_allow_flag_runs_nothing(monkeypatch, tmp_path):
    from assay import Kernel, Settings

    monkeypatch.delenv("SANDBOX_RUNTIME", raising=False)
    monkeypatch.delenv("SANDBOX_ALLOW_LOCAL_RUNTIME", raising=False)
    monkeypatch.setenv(
        "ASSAY_DISABLE_PLUGINS", "docker,podman,nerdctl"
    )  # a host with no container engine
    kernel = Kernel(settings=Settings.from_env(home=str(tmp_path)))
    run = kernel.new_run()
    try:
        marker = tmp_path / "ran.txt"
        result = kernel.call_tool(
            "code_interpreter", {"code": f"open({str(marker)!r}, 'w').write('x')"}, run=run
        )
        assert not result.success
        assert result.error_code == "SANDBOX_UNAVAILABLE"
        assert result.metadata["cause"] == "SANDBOX_RUNTIME_UNAVAILABLE"
        assert "no isolating sandbox runtime answered" in result.message
        assert "SANDBOX_ALLOW_LOCAL_RUNTIME=1" in result.hint and "Nothing was run" in result.hint
        assert not marker.exists()
        assert run.artifacts is None or run.artifacts.records() == []
    finally:
        run.close()


def test_local_runtime_named_without_allow_flag_is_refused(monkeypatch, tmp_path):
    from assay import Kernel, Settings

    monkeypatch.setenv("SANDBOX_RUNTIME", "local")
    monkeypatch.delenv("SANDBOX_ALLOW_LOCAL_RUNTIME", raising=False)
    kernel = Kernel(settings=Settings.from_env(home=str(tmp_path)))
    run = kernel.new_run()
    try:
        result = kernel.call_tool("code_interpreter", {"code": "x = 1"}, run=run)
        assert result.error_code == "SANDBOX_UNAVAILABLE"
        assert result.metadata["cause"] == "SANDBOX_LOCAL_NOT_ALLOWED"
    finally:
        run.close()


def test_large_report_result_comes_back_whole(call, run):
    result = call(
        "REPORT_RESULT = list(range(200_000))"
    )  # ~1.3 MB of JSON: more than stdout carries
    assert result.success, result.for_model()
    assert result.data["result"] == list(range(200_000))
    assert "(preview; the full value is in artifact" in result.content
    assert len(result.content) < 10_000


def test_out_of_memory_is_reported_and_keeps_the_last_state(call):
    assert call("kept = 'yes'").success
    result = call("blocks = []\nwhile True:\n    blocks.append(bytearray(32 * 1024 * 1024))")
    assert not result.success
    assert result.error_code == "PYTHON_OUT_OF_MEMORY", result.for_model()
    assert "memory" in result.message
    assert call("REPORT_RESULT = kept").data["result"] == "yes"


def test_refund_rate_from_sql_query_tool_equals_sql(monkeypatch, tmp_path, sales_db, podman_kernel):
    """End to end with the real sql_query tool: Python over its artifact == the figure in SQL."""
    from assay import Kernel, Settings

    db_path = sales_db.execute("PRAGMA database_list").fetchone()[2]
    monkeypatch.setenv("ASSAY_SQL_DATABASES", json.dumps({"sales": f"sqlite:///{db_path}"}))
    monkeypatch.setenv("SANDBOX_RUNTIME", "podman")
    monkeypatch.setenv("SANDBOX_IMAGE_PYTHON", IMAGE)
    kernel = Kernel(settings=Settings.from_env(home=str(tmp_path)))
    run = kernel.new_run()
    try:
        rows = kernel.call_tool(
            "sql_query", {"sql": "SELECT store, refunded, promo FROM sales"}, run=run
        )
        assert rows.success, rows.for_model()
        art = rows.data["artifact_id"]
        in_sql = kernel.call_tool(
            "sql_query",
            {
                "sql": "SELECT store, AVG(refunded * 1.0) AS rate FROM sales "
                "WHERE promo = 1 GROUP BY store ORDER BY store"
            },
            run=run,
        )
        assert in_sql.success, in_sql.for_model()
        code = (
            "df = load_artifact(%r)\n"
            "rate = df[df.promo == 1].groupby('store').refunded.mean().sort_index()\n"
            "REPORT_RESULT = [[s, float(v)] for s, v in rate.items()]\n" % art
        )
        result = kernel.call_tool("code_interpreter", {"code": code, "inputs": [art]}, run=run)
        assert result.success, result.for_model()
        from assay.kernel.evidence import read_artifact_result

        expected = read_artifact_result(run.artifacts, in_sql.data["artifact_id"], max_rows=10).rows
        assert [r[0] for r in result.data["result"]] == [r[0] for r in expected]
        assert [r[1] for r in result.data["result"]] == pytest.approx(
            [r[1] for r in expected], rel=1e-12
        )
    finally:
        run.close()
        kernel.sandbox.close()


def test_expired_session_is_replaced_and_the_loss_is_said(call, run):
    assert call("old = 1").success
    run.peek("sandbox.python").close()  # as the reaper does after SANDBOX_IDLE_TTL
    result = call("REPORT_RESULT = 'old' in globals()")
    assert result.success, result.for_model()
    assert result.data["result"] is False
    assert "had expired" in result.content


def test_lingering_thread_does_not_turn_a_finished_cell_into_a_timeout(call):
    code = "import threading, time\nthreading.Thread(target=time.sleep, args=(60,)).start()\nREPORT_RESULT = 'done'"
    result = call(code, timeout_s=10)
    assert result.success, result.for_model()
    assert result.data["result"] == "done"
    assert "threads the cell started were still running" in result.content


def test_copy_changed_inside_the_sandbox_is_caught_before_running(call, run, sales_db):
    record = capture_query(run.artifacts, sales_db, "SELECT store FROM sales LIMIT 5")
    assert call(
        "REPORT_RESULT = len(load_artifact(%r))" % record.artifact_id, inputs=[record.artifact_id]
    ).success
    from assay.plugins.code_interpreter.inputs import resolve_inputs

    # Overwrite the placed copy behind the tool's back (as a compromised sandbox could).
    notebook = run.peek("code_interpreter.notebook")
    path = resolve_inputs(run.artifacts, [record.artifact_id], "/workspace")[0].path
    run.peek("sandbox.python").put_file(
        path, b'{"columns":["store"]}\n["forged"]\n', read_only=True
    )
    result = call("open('ran.txt', 'w').write('yes')", inputs=[record.artifact_id])
    assert result.error_code == "ARTIFACT_INTEGRITY_FAILED"
    assert "nothing was run" in result.message
    again = call(
        "import os\nREPORT_RESULT = [os.path.exists('ran.txt'), len(load_artifact(%r))]"
        % record.artifact_id,
        inputs=[record.artifact_id],
    )
    assert again.success, again.for_model()
    assert again.data["result"] == [False, 5]  # a fresh verified copy was placed
    assert notebook.uploaded[record.artifact_id] == record.sha256


def test_variable_over_the_state_limit_is_named_and_kept_only_in_memory(call):
    result = call(
        "import numpy as np\nbig = np.zeros(2_000_000)\nsmall = 3"
    )  # 16 MB > 90% of 10 MB
    assert result.success, result.for_model()
    skipped = {item["name"]: item["reason"] for item in result.data["not_persisted"]}
    assert list(skipped) == ["big"] and "too large to keep" in skipped["big"]
    assert call("REPORT_RESULT = [small, 'big' in globals()]").data["result"] == [3, True]


def test_numeric_frame_under_the_state_limit_is_kept_in_the_snapshot(call):
    # 4.8 MB of floats, under the 9 MB snapshot limit (an estimate that counted the index and
    # 8 bytes per cell on top of the data put it at 12 MB and left it out unpickled).
    result = call(
        "import numpy as np, pandas as pd\n"
        "frame = pd.DataFrame({'a': np.arange(300_000) * 0.5, 'b': np.arange(300_000) * 1.5})"
    )
    assert result.success, result.for_model()
    assert result.data["not_persisted"] == []


def test_dataframe_index_is_kept_only_when_it_is_data(call):
    code = (
        "import pandas as pd\n"
        "df = pd.DataFrame({'store': ['a', 'b', 'a'], 'v': [1, 2, 3]})\n"
        "REPORT_RESULT = {'sorted': df.sort_values('v', ascending=False).head(2),\n"
        "                 'grouped': df.groupby('store').v.sum().to_frame()}\n"
    )
    result = call(code)
    assert result.success, result.for_model()
    assert result.data["result"] == {
        "sorted": [{"store": "a", "v": 3}, {"store": "b", "v": 2}],
        "grouped": [{"store": "a", "v": 4}, {"store": "b", "v": 2}],
    }


def test_sandbox_restarted_by_the_host_loses_state_and_says_so(container_kernel, call, run):
    assert call("before = 1").success
    session = run.peek("sandbox.python")
    # What a host-side kill does: the container restarts and its tmpfs working directory is empty.
    container_kernel.sandbox._get(session.id).runtime._hard_reset()
    result = call("REPORT_RESULT = 'before' in globals()")
    assert result.success, result.for_model()
    assert result.data["result"] is False
    assert "variables and files from earlier calls are gone" in result.content


def test_call_sent_on_a_stale_channel_after_a_host_restart_goes_again_and_says_state_is_gone(
    container_kernel, call, run
):
    assert call("before = 1").success
    session = run.peek("sandbox.python")
    channel = run.peek("code_interpreter.notebook").channel
    container_kernel.sandbox._get(session.id).runtime._hard_reset()
    channel._ended = lambda: (
        False
    )  # the engine has not closed the old stream yet: the request goes out

    class Stale:  # the write is taken (into a buffer of the dead stream); the read finds it closed
        def __init__(self, sock):
            self.sock = sock

        def sendall(self, data):
            pass

        def __getattr__(self, name):
            return getattr(self.sock, name)

    channel._sock = Stale(channel._sock)
    result = call("REPORT_RESULT = 'before' in globals()")
    assert result.success, result.for_model()
    assert result.data["result"] is False
    assert "variables and files from earlier calls are gone" in result.content


def test_restored_modules_load_only_when_used_and_still_chart(local_kernel):
    """One-shot calls (the local runtime; a restarted holder) restore modules lazily."""
    run = local_kernel.new_run()
    call = _caller(local_kernel, run)
    assert call("import matplotlib.pyplot as plt\nimport pandas as pd").success
    light = call(
        "import sys\nREPORT_RESULT = ['matplotlib' in sys.modules, 'pandas' in sys.modules, pd.__name__]"
    )
    assert light.data["result"] == [
        False,
        False,
        "pandas",
    ]  # a cell that does not use them does not pay
    drawn = call("plt.plot([1, 2, 3])\nplt.show()")
    assert drawn.success, drawn.for_model()
    assert [a.kind for a in drawn.artifacts] == ["python", "chart"]
    run.close()


def test_the_runner_is_compiled_from_the_uploads_with_no_bytecode_cache(call):
    # The notebook process compiles the runner's modules once, as it starts, from the read-only
    # uploads: a cache a cell can write (.assay/pycache) would let it plant a forged runner.
    assert call("REPORT_RESULT = 1").success  # uses the REPORT_RESULT companion
    cached = call(
        "import os, sys\n"
        "REPORT_RESULT = [sorted(f for _, _, files in os.walk('/workspace') for f in files\n"
        "                        if f.startswith('assay_ci_') and f.endswith('.pyc')), sys.dont_write_bytecode]"
    )
    assert cached.success, cached.for_model()
    names, cell_writes_bytecode = cached.data["result"]
    assert names == []
    assert cell_writes_bytecode is True  # the cell's own imports still write nothing
