"""The ``code_interpreter`` tool: Python in the run's sandbox, over captured evidence.

One call = inputs verified on the host, uploaded (once per session) and
verified again inside; one execution of the runner (a fresh process in the
run's container, restoring and saving the notebook state); the frame turned
into a Python artifact (plus chart and file artifacts) and a bounded text.
"""

from __future__ import annotations

import mimetypes
import threading
import time
from typing import Annotated, Any

from pydantic import Field

from assay import AssayError, RunContext, ToolResult, tool
from assay.kernel.evidence import (
    ProducedFile,
    canonical_value,
    capture_python_execution,
    dumps,
    get_record,
)
from assay.kernel.log import get_logger

from . import errors as E
from .datafiles import DataFiles, collect
from .frame import Frame, Stream, raw_before_frame
from .inputs import resolve_inputs
from .render import (
    NO_RESULT,
    clip,
    error_text,
    produced_lines,
    result_block,
    shown_name,
    state_lines,
    stream_block,
)
from .sandbox_tables import (
    SANDBOX_DATA_FILE_AMBIGUOUS,
    SANDBOX_DATA_FILE_NOT_FOUND,
    SANDBOX_DATA_FILE_UNREADABLE,
    SANDBOX_FILE_FORMAT_UNSUPPORTED,
)
from .session import SESSION_KEY, STATE_KEY, CallOutcome, Notebook
from .settings import CodeInterpreterSettings

log = get_logger("assay.code_interpreter")
LOCK_KEY = "code_interpreter.lock"
DATA_KEY = "code_interpreter.data_files"
# load_file's refusals, reported with their own code (any other error a cell raises is its failure)
LOAD_FILE_CODES = frozenset(
    {
        SANDBOX_DATA_FILE_NOT_FOUND,
        SANDBOX_DATA_FILE_AMBIGUOUS,
        SANDBOX_DATA_FILE_UNREADABLE,
        SANDBOX_FILE_FORMAT_UNSUPPORTED,
    }
)


@tool
def code_interpreter(
    code: Annotated[str, Field(min_length=1)],
    inputs: list[str] = [],  # noqa: B006 - validated copy per call; never mutated
    reset: bool = False,
    timeout_s: Annotated[float | None, Field(gt=0)] = None,
    *,
    run: RunContext,
) -> ToolResult:
    """Run Python in this run's sandbox, like a notebook cell, over captured artifacts.

    Variables and files in /workspace persist between calls of one run (not between
    runs). Load inputs with `load_artifact(id)` (a pandas DataFrame for tabular
    artifacts, the JSON value otherwise). Registered files (the files datasource's
    tables) are read-only at /data/<name>.<ext>: `load_file("name")` returns one as a
    DataFrame read like SQL reads it (`sheet=` for a workbook); `list_files()` and
    `list_artifacts()` list what is there. Parquet files are not readable here: query
    them with sql_query and use load_artifact. Assign the answer to `REPORT_RESULT`
    (JSON-like: numbers, strings, lists, dicts, DataFrames): that becomes the cited
    result; printing is NOT a result. matplotlib figures (plt.show / savefig) become
    PNG chart artifacts; files written under /workspace/out become file artifacts.
    No network. pandas, numpy, matplotlib and scipy are installed.

    Args:
        code: Python source to run.
        inputs: Artifact ids to place in the sandbox (read-only, hash-verified) for load_artifact.
        reset: Discard this run's sandbox (variables and files) and start a fresh one first.
        timeout_s: Seconds before the code is killed (default: the sandbox's timeout).
    """
    started = time.perf_counter()
    kernel = run.kernel
    settings = _settings(kernel)
    ids = list(dict.fromkeys(inputs))
    if kernel is None:
        return ToolResult.fail(
            E.SANDBOX_UNAVAILABLE,
            "this run has no kernel, so it has no sandbox",
            E.UNAVAILABLE_HINT,
        )
    from assay.plugins.sandbox import SandboxError

    try:
        manager = kernel.sandbox
        workdir = manager.config.workdir
        resolved = []
        if ids:
            resolved = resolve_inputs(
                run.artifacts if run.artifacts is not None else kernel, ids, workdir, run.may_read
            )
        data = run.peek(DATA_KEY)
        if data is None:  # collected outside scoped(): it reads the run's own resources (its lock)
            fresh = collect(run)
            data = run.scoped(DATA_KEY, lambda: fresh)
        with run.scoped(LOCK_KEY, threading.Lock):
            if reset:
                run.discard(STATE_KEY)
                run.discard(SESSION_KEY)
            expired = False
            try:
                notebook, outcome = _attempt(
                    run, manager, settings, code, resolved, timeout_s, data
                )
            except SandboxError as exc:
                if exc.code not in (
                    SANDBOX_SESSION_NOT_FOUND,
                    "SANDBOX_SESSION_CLOSED",
                ) or not run.peek(STATE_KEY):
                    raise
                # The run's session expired (idle TTL or maximum lifetime): start a new one, and say
                # that what the old one held is gone.
                run.discard(STATE_KEY)
                run.discard(SESSION_KEY)
                expired = True
                notebook, outcome = _attempt(
                    run, manager, settings, code, resolved, timeout_s, data
                )
            outcome.state_lost = outcome.state_lost or expired
            sources = data.sources(run.artifacts) if data.mounts else []
            return _finish(
                run, notebook, settings, manager.config, code, ids, outcome, started, sources
            )
    except SandboxError as exc:
        if exc.code in E.UNAVAILABLE_CAUSES:
            return ToolResult.fail(
                E.SANDBOX_UNAVAILABLE,
                f"no sandbox to run the code in: {exc.message}",
                E.UNAVAILABLE_HINT,
                metadata={"cause": exc.code, **exc.details},
            )
        return ToolResult.from_error(exc)
    except AssayError as exc:  # ARTIFACT_* from the inputs, ARTIFACT_CAPTURE_FAILED
        return ToolResult.from_error(exc)


SANDBOX_SESSION_NOT_FOUND = "SANDBOX_SESSION_NOT_FOUND"


def _attempt(
    run: RunContext,
    manager: Any,
    settings: CodeInterpreterSettings,
    code: str,
    resolved: list,
    timeout_s: float | None,
    data: DataFiles,
) -> tuple[Notebook, CallOutcome]:
    # Python reads the registered bytes or nothing: a file changed or gone since it was registered
    # (FILE_CHANGED / FILE_MISSING, as for a query) refuses the cell (and a new session) first.
    data.check_unchanged()
    notebook = _notebook(run, manager, data)
    notebook.ensure_runner()
    notebook.place_inputs(resolved)
    return notebook, notebook.execute(
        code, resolved, _limits(settings, manager.config), timeout_s, manager.config.timeout
    )


def _settings(kernel: Any) -> CodeInterpreterSettings:
    if kernel is None:
        return CodeInterpreterSettings()
    return kernel.settings.section("code_interpreter", CodeInterpreterSettings)


def _notebook(run: RunContext, manager: Any, data: DataFiles) -> Notebook:
    session = run.scoped(
        SESSION_KEY,
        lambda: manager.open_session("python", data_files=data.mounts),
        lambda s: s.close(),
    )

    def make() -> Notebook:
        manifest = data.manifest(session.data_root) if data.tables else None
        return Notebook(session, data_manifest=manifest)

    notebook = run.scoped(STATE_KEY, make, lambda nb: nb.close())
    if notebook.session is not session:  # the session was replaced by someone else's reset
        run.discard(STATE_KEY)
        notebook = run.scoped(STATE_KEY, make, lambda nb: nb.close())
    return notebook


def _limits(settings: CodeInterpreterSettings, cfg: Any) -> dict[str, int]:
    frame_chars = max(64 * 1024, cfg.output_limit // 2)
    return {
        "capture_chars": min(settings.capture_chars, cfg.max_file_size // 16),
        "tail_chars": min(settings.tail_chars, cfg.max_file_size // 64),
        "tee_chars": min(16 * 1024, cfg.output_limit // 8),
        "frame_chars": frame_chars,
        "inline_bytes": min(settings.inline_bytes, frame_chars * 3 // 8),
        "max_state_bytes": int(cfg.max_file_size * 0.9),
        "stream_bytes": cfg.output_limit,
    }


def _finish(
    run: RunContext,
    notebook: Notebook,
    settings: CodeInterpreterSettings,
    cfg: Any,
    code: str,
    ids: list[str],
    outcome: CallOutcome,
    started: float,
    sources: list[str] | None = None,
) -> ToolResult:
    ex, frame = outcome.execution, outcome.frame
    meta = {
        "runtime": ex.runtime,
        "isolated": ex.isolated,
        "session_id": ex.session_id,
        "sandbox_ms": ex.duration_ms,
        "warnings": list(ex.warnings),
    }
    if frame is not None:  # where the time went inside: the cell itself, and the runner around it
        meta.update(cell_ms=frame.cell_ms, runner_ms=frame.runner_ms, cell_faults=frame.cell_faults)
    if frame is not None and frame.status == "input_failed":
        err = frame.error or {}
        if err.get("artifact_id"):
            notebook.forget_input(err["artifact_id"])
        return ToolResult.fail(
            err.get("code", "ARTIFACT_INTEGRITY_FAILED"),
            f"{err.get('message', '')}; nothing was run",
            "The copy inside the sandbox was changed after it was placed there; call again to place a "
            "fresh verified copy, or pass reset=true.",
            metadata=meta,
        )
    raw_out = raw_before_frame(ex.stdout, frame.nonce if frame else "-")
    stdout = frame.stdout.text if frame else raw_out
    stderr = (
        (frame.stderr.text if frame else "")
        + ("\n" if frame and ex.stderr.strip() else "")
        + ex.stderr
    )
    elapsed_ms = (time.perf_counter() - started) * 1000
    code_ok = frame is not None and frame.status == "succeeded"
    failure = _failure(ex, frame, outcome, cfg, stdout, stderr)
    result_value = frame.result if (frame and frame.result_set and code_ok) else None
    result_set = bool(frame and frame.result_set and code_ok and failure is None)
    sink = run.artifacts
    files, produced, skipped = _collect(
        notebook, frame, settings, sink.remaining() if sink is not None else None
    )
    record, file_refs = None, []
    if sink is not None:
        record = capture_python_execution(
            sink,
            code=code,
            result=result_value if result_set else None,
            result_set=result_set,
            stdout=stdout,
            stderr=stderr,
            files=files,
            status="succeeded" if failure is None else "failed",
            error=None if failure is None else f"{failure[0]}: {failure[1]}",
            elapsed_ms=elapsed_ms,
            inputs=ids,
            sources=sources or (),
        )
        file_ids = record.provenance.get("files", []) if record else []
        for item, fid in zip(produced, file_ids):
            item["artifact_id"] = fid
        file_refs = [get_record(sink, fid).ref() for fid in file_ids]
    artifact_id = record.artifact_id if record else None

    canonical = canonical_value(result_value) if result_set else None
    value_text = dumps(canonical) if result_set else ""
    charts = [p for p in produced if p["kind"] == "chart"]
    outs = [p for p in produced if p["kind"] == "file"]
    body = _body(
        ex,
        frame,
        outcome,
        settings,
        stdout,
        stderr,
        value_text,
        charts,
        outs,
        skipped,
        artifact_id,
        failure,
    )
    data = {
        "artifact_id": artifact_id,
        "result_set": result_set,
        "result": canonical,
        "stdout_truncated": bool(frame and frame.stdout.truncated)
        or (frame is None and ex.stdout_truncated),
        "stderr_truncated": bool(frame and frame.stderr.truncated) or ex.stderr_truncated,
        "charts": charts,
        "files": outs,
        "not_captured": skipped,
        "not_persisted": frame.not_persisted if frame else [],
        "elapsed_ms": round(elapsed_ms, 3),
    }
    if not result_set and failure is None:
        data["note"] = NO_RESULT
    partial = _incomplete_inputs(run, ids)
    if partial:  # what was computed covers only the rows those inputs kept: say so, every time
        data["incomplete_inputs"] = partial
        body += "".join(
            f"\nwarning: input {aid} is an {note}; anything computed from it covers only the kept rows"
            for aid, note in partial.items()
        )
    refs = ([record.ref()] if record else []) + file_refs
    if failure is None:
        return ToolResult.ok(data, content=body, artifacts=refs, metadata=meta)
    code_, message, hint = failure
    return ToolResult.fail(
        code_, message, hint, content=body, data=data, artifacts=refs, metadata=meta
    )


def _incomplete_inputs(run: RunContext, ids: list[str]) -> dict[str, str]:
    """The inputs that are incomplete artifacts, with their notes (empty when every input is whole)."""
    if not ids:
        return {}

    source = run.artifacts if run.artifacts is not None else run.kernel
    notes = {aid: get_record(source, aid).incomplete_note() for aid in ids}
    return {aid: note[0].lower() + note[1:] for aid, note in notes.items() if note}


def _failure(
    ex: Any, frame: Frame | None, outcome: CallOutcome, cfg: Any, stdout: str, stderr: str
) -> tuple[str, str, str] | None:
    """(code, message, hint) when the call did not succeed, else None."""
    early, _ = clip(stdout.strip(), 1500)
    printed = f"\nOutput before it stopped:\n{early}" if early else ""
    if ex.timed_out:
        reset = any("reset" in w for w in ex.warnings)
        return (
            E.PYTHON_TIMEOUT,
            f"the code was still running after the time limit and was killed{printed}",
            "Variables assigned by this call are lost: the notebook state is the one the last finished "
            "call saved"
            + (
                " - and here the sandbox itself had to be restarted, so earlier variables "
                "and files are gone too"
                if reset
                else ""
            )
            + ". Make the code faster (smaller data, vectorised pandas) or pass a larger timeout_s.",
        )
    if ex.oom_killed:
        return (
            E.PYTHON_OUT_OF_MEMORY,
            f"the code used more than the sandbox's {cfg.memory_limit // 1024**2} MiB of memory and was "
            f"killed{printed}",
            "Variables assigned by this call are lost (the state is the last finished call's). Use less "
            "memory: select fewer columns or rows, or aggregate in SQL first.",
        )
    if frame is None and outcome.committed:
        # The notebook says the cell finished (its snapshot is committed), but what came back as its
        # reply cannot be read: something in the cell wrote to the runner's own channel.
        return (
            E.CODE_INTERPRETER_PROTOCOL_ERROR,
            f"the cell finished, but {outcome.problem}{printed}",
            "The variables it assigned are kept (the notebook committed them, as after any finished "
            "cell); everything it printed, the unreadable reply included, is in the artifact. Do not "
            "write to descriptors the cell did not open.",
        )
    if frame is None:
        tail, _ = clip(stderr.strip(), 1500)
        return (
            E.PYTHON_EXECUTION_FAILED,
            f"the Python process ended (exit code {ex.exit_code}) before reporting: "
            f"{outcome.problem}" + (f"\nstderr:\n{tail}" if tail else "") + printed,
            "Something ended the interpreter itself (os._exit, a crash in a C extension, a signal). "
            "Variables assigned by this call are lost.",
        )
    if frame.status == "runner_failed":
        return (
            E.CODE_INTERPRETER_PROTOCOL_ERROR,
            "the code interpreter's runner failed: " + error_text(frame.error or {}),
            "This is a bug or a damaged session; pass reset=true.",
        )
    if frame.status == "failed" and (frame.error or {}).get("type") == "LoadFileError":
        # load_file's own refusal: its code, message and hint (docs/files.md)
        text = str((frame.error or {}).get("message", ""))
        code_, _, rest = text.partition(": ")
        message, _, hint = rest.partition(" Hint: ")
        if code_ in LOAD_FILE_CODES:  # only load_file's own codes: a cell may raise any text
            return (code_, message + printed, hint or "See list_files() for what is there.")
    if frame.status == "failed":
        return (
            E.PYTHON_EXECUTION_FAILED,
            error_text(frame.error or {}) + printed,
            "Fix the code and call again. Variables assigned before the error are kept, as in a notebook.",
        )
    if frame.result_error:
        return (
            E.PYTHON_RESULT_INVALID,
            frame.result_error,
            "The code ran and its variables are kept; assign REPORT_RESULT a JSON-like value "
            "(dict, list, number, string, DataFrame) and call again - a cheap call, e.g. "
            "`REPORT_RESULT = summary.to_dict()`.",
        )
    return None


def _collect(
    notebook: Notebook, frame: Frame | None, settings: CodeInterpreterSettings, room: int | None
):
    """Produced charts and files: (ProducedFile list, display dicts, skipped descriptions).

    ``room``: evidence bytes the run may still capture (its quota); files past it are not fetched.
    """
    files: list[ProducedFile] = []
    produced: list[dict[str, Any]] = []
    skipped: list[str] = []
    if frame is None:
        return files, produced, skipped
    items = [(c, "chart") for c in frame.charts] + [(f, "file") for f in frame.files]
    for item, kind in items:
        name = shown_name(item.name)  # the artifact keeps the real name; the model reads it escaped
        if len(files) >= settings.max_files:
            skipped.append(f"{name} (over the limit of {settings.max_files} files per call)")
            continue
        if item.size > settings.max_file_bytes:
            skipped.append(
                f"{name} ({item.size:,} bytes > the {settings.max_file_bytes:,}-byte limit)"
            )
            continue
        if room is not None and item.size > room:
            skipped.append(
                f"{item.name} ({item.size:,} bytes: over this run's evidence quota, {room:,} bytes left)"
            )
            continue
        try:
            data = notebook.fetch(item.model_dump(), settings.max_file_bytes)
        except AssayError as exc:
            skipped.append(f"{name} (could not be read: {exc.message})")
            continue
        media = (
            "image/png"
            if kind == "chart"
            else (mimetypes.guess_type(item.name)[0] or "application/octet-stream")
        )
        if room is not None:
            room -= len(data)
        files.append(
            ProducedFile(
                name=item.name,
                data=data,
                media_type=media,
                kind="chart" if kind == "chart" else None,
            )
        )
        produced.append(
            {
                "kind": "chart" if kind == "chart" or media.startswith("image/") else "file",
                "name": name,
                "size": len(data),
                "width": item.width,
                "height": item.height,
                "artifact_id": None,
            }
        )
    return files, produced, skipped


def _body(
    ex: Any,
    frame: Frame | None,
    outcome: CallOutcome,
    settings: CodeInterpreterSettings,
    stdout: str,
    stderr: str,
    value_text: str,
    charts: list,
    outs: list,
    skipped: list,
    artifact_id: str | None,
    failure: tuple[str, str, str] | None,
) -> str:
    iso = "" if ex.isolated else " - NOT ISOLATED (local runtime)"
    status = "succeeded" if failure is None else f"failed ({failure[0]})"
    lines = [f"Python {status} in the sandbox ({ex.runtime}{iso}, {ex.duration_ms / 1000:.2f} s)."]
    if failure is None and frame is not None:
        lines.append(result_block(frame, value_text, settings.result_preview_chars, artifact_id))
    for label, text, stream in (
        ("stdout", stdout, frame.stdout if frame else None),
        ("stderr", stderr, frame.stderr if frame else None),
    ):
        block = stream_block(
            label, stream or _plain(text), text, settings.preview_chars, artifact_id
        )
        if block:
            lines.append(block)
    lines.extend(produced_lines(charts, outs, skipped))
    lines.extend(state_lines(frame, outcome.state_lost, outcome.holder_note))
    lines.extend(f"warning: {w}" for w in ex.warnings)
    if artifact_id:
        lines.append(
            f"artifact: {artifact_id} (python, {'succeeded' if failure is None else 'failed'})"
        )
    else:
        lines.append("not captured as evidence: this run has no artifact sink")
    return "\n".join(lines)


def _plain(text: str):
    return Stream(head=text, total_chars=len(text))
