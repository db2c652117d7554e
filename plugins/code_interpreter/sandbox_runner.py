"""The code interpreter's runner: executed INSIDE the sandbox, never imported by the host.

It turns one process into one notebook cell - the notebook holder's forked
child (``assay_ci_holder``, container runtimes), or a fresh ``python3``
process per call (the local runtime, :func:`main`):

1. verify the SHA-256 of every listed input file (nothing runs on a mismatch);
2. (one-shot only) restore the namespace saved by the previous call
   (``state.pkl``, ``assay_ci_state``);
3. run the cell with ``exec`` while ``sys.stdout``/``sys.stderr`` go to
   bounded in-memory captures and matplotlib draws with Agg; file
   descriptor 1 itself points at a pipe drained into the same stdout
   capture (``assay_ci_capture``), so what subprocesses or C code write
   there is captured too and can never fill the sandbox's stdout ahead of
   the frame;
4. save open figures as PNG, list new files under ``/workspace/out``;
5. save the namespace as the snapshot (what cannot be pickled is skipped and named);
6. print ONE frame - a marker line with the call's nonce, then a JSON object -
   to the real stdout (a private copy of it, taken before the cell ran and
   not inherited by its subprocesses), or write it to a file when it is too
   big for stdout.

It uses the standard library only; pandas, matplotlib and cloudpickle are
imported when the cell needs them, and so are its companions uploaded beside
it: ``assay_ci_tables`` (load_artifact), ``assay_ci_charts`` (matplotlib) and
``assay_ci_results`` (REPORT_RESULT to JSON data). The host treats the frame as untrusted
data: the cell runs in this process and could forge it.
"""

# Only modules the interpreter has already loaded, or builtin ones, at the top:
# this file is imported by every call, on a fraction of a CPU. json (which pulls
# in re), pickle, _ast, hashlib, base64 and traceback load only when needed.
import builtins
import io
import os
import sys
import time
import types

from assay_ci_capture import Capture, FdCapture  # uploaded beside this file

WORKDIR = "/workspace"  # the process's working directory, set by main()
ASSAY_DIR = STATE_PATH = CHARTS_DIR = FRAME_PATH = INPUTS_DIR = OUT_DIR = ""


def set_workdir(workdir: str) -> None:
    global WORKDIR, ASSAY_DIR, STATE_PATH, CHARTS_DIR, FRAME_PATH, INPUTS_DIR, OUT_DIR
    WORKDIR = workdir.rstrip("/")
    ASSAY_DIR = WORKDIR + "/.assay"
    STATE_PATH = ASSAY_DIR + "/state.pkl"
    CHARTS_DIR = ASSAY_DIR + "/charts"
    FRAME_PATH = ASSAY_DIR + "/frame.json"
    INPUTS_DIR = WORKDIR + "/inputs"
    OUT_DIR = WORKDIR + "/out"


set_workdir(WORKDIR)
# Set in the notebook holder's fresh copy of this module for each cell (assay_ci_recorder): its
# imports of the companions are fresh copies too, and the frame is written with the holder's own
# JSON encoder, not ``sys.modules['json']``.
FRESH = False
ENCODE = None
SNAPSHOT_PENDING = False  # set in a holder's cell: the snapshot goes to state.pkl.next
CELL = "<cell>"
FRAME_MARK = "\x1eASSAY-FRAME "
HELPERS = ("load_artifact", "list_artifacts", "load_file", "list_files")
NOT_STATE = frozenset(HELPERS) | {
    "REPORT_RESULT",
    "__builtins__",
    "__name__",
    "__doc__",
    "__loader__",
    "__spec__",
    "__package__",
    "__file__",
    "__cached__",
}  # never state


# --- inputs -------------------------------------------------------------------


def companion(name: str):
    """One of the runner's companion modules, imported with its bytecode cached.

    The bootstrap turns bytecode writing off once the runner is imported (the
    cell's own imports write nothing); a companion compiled on every call would
    cost more than the cell itself, so its first import writes the cache.
    """
    if FRESH:
        return __import__(name)
    module = sys.modules.get(name)
    if module is None:
        saved = sys.dont_write_bytecode
        sys.dont_write_bytecode = False
        try:
            module = __import__(name)
        finally:
            sys.dont_write_bytecode = saved
    return module


def _sha256(path: str) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_inputs(inputs: list) -> dict | None:
    """Check every listed input against its expected SHA-256; the first problem, or None."""
    for item in inputs:
        path = os.path.join(WORKDIR, item["path"])
        if not os.path.exists(path):
            return {
                "code": "ARTIFACT_FILE_MISSING",
                "artifact_id": item["id"],
                "message": f"input {item['id']!r} is not in the sandbox at {path}",
            }
        actual = _sha256(path)
        if actual != item["sha256"]:
            return {
                "code": "ARTIFACT_INTEGRITY_FAILED",
                "artifact_id": item["id"],
                "message": f"input {item['id']!r} in the sandbox does not match its SHA-256 (expected "
                f"{item['sha256'][:12]}..., found {actual[:12]}...)",
            }
    return None


class _PyplotHook:
    """Patches ``matplotlib.pyplot`` when the cell imports it (nothing is imported otherwise)."""

    def __init__(self) -> None:
        self.charts = None  # assay_ci_charts.Charts, once pyplot is imported

    def attach(self, plt) -> None:
        if self.charts is None:
            charts = companion("assay_ci_charts").Charts(WORKDIR, CHARTS_DIR, OUT_DIR)
            self.charts = charts
            charts.patch(plt)

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader, hook = spec.loader, self

        class Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                hook.attach(module)

        spec.loader = Loader()
        return spec


def load_artifact(artifact_id: str, *, raw: bool = False):
    """An input artifact: a pandas DataFrame for tabular ones, the JSON value otherwise.

    ``raw=True`` returns the stored bytes unchanged (charts, files).
    """
    tables = companion("assay_ci_tables")
    tables.configure(WORKDIR)
    return tables.load_artifact(artifact_id, raw=raw)


def list_artifacts() -> list:
    """The artifacts placed in this session: id, kind, name, rows, columns."""
    tables = companion("assay_ci_tables")
    tables.configure(WORKDIR)
    return tables.list_artifacts()


def load_file(name: str, *, sheet=None):
    """A registered file (read-only under /data) as a DataFrame, read the way SQL reads it."""
    tables = companion("assay_ci_tables")
    tables.configure(WORKDIR)
    return tables.load_file(name, sheet=sheet)


def list_files() -> list:
    """The registered files readable here: name, format, path, sheet, columns."""
    tables = companion("assay_ci_tables")
    tables.configure(WORKDIR)
    return tables.list_files()


# --- the cell ---------------------------------------------------------------


_STATEMENTS = (
    "def ",
    "class ",
    "if ",
    "elif ",
    "else",
    "for ",
    "while ",
    "with ",
    "try",
    "except",
    "finally",
    "import ",
    "from ",
    "return",
    "pass",
    "raise",
    "assert ",
    "del ",
    "global ",
    "nonlocal ",
    "@",
    "print(",
    "async ",
    "REPORT_RESULT",
)


def _may_end_in_expression(code: str) -> bool:
    """A cheap pre-check, so the parse to find a final expression is skipped for most cells."""
    lines = [
        ln for ln in code.rstrip().splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not lines:
        return False
    last = lines[-1]
    return (
        not last.startswith((" ", "\t"))
        and not last.startswith(_STATEMENTS)
        and "=" not in last.replace("==", "").replace("!=", "").replace("<=", "").replace(">=", "")
    )


def _compile(code: str):
    """The cell's code objects: the body, and the last expression (shown like a notebook)."""
    if not _may_end_in_expression(code):
        return compile(code, CELL, "exec"), None
    import _ast

    tree = compile(code, CELL, "exec", _ast.PyCF_ONLY_AST)
    assert isinstance(tree, _ast.Module)  # what "exec" mode parses to
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, _ast.Expr):
        tree.body.pop()
        last = _ast.Expression(final.value)
    body = compile(tree, CELL, "exec")
    return body, (compile(last, CELL, "eval") if last is not None else None)


def _error(exc: BaseException, code: str) -> dict:
    import linecache
    import traceback

    linecache.cache[CELL] = (len(code), None, code.splitlines(True), CELL)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == CELL]
    lines = []
    for f in frames:
        lines.append(f"  line {f.lineno}, in {f.name}")
        if f.line:
            lines.append(f"    {f.line.strip()}")
    if isinstance(exc, SyntaxError) and exc.filename == CELL:
        lines.append(f"  line {exc.lineno}")
        if exc.text:
            lines.append(f"    {exc.text.strip()}")
            if exc.offset:
                indent = len(exc.text) - len(exc.text.lstrip())
                lines.append("    " + " " * max(0, exc.offset - 1 - indent) + "^")
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return {
        "type": type(exc).__name__,
        "message": str(exc) if not isinstance(exc, SyntaxError) else exc.msg,
        "traceback": lines,
        "summary": message,
        "line": frames[-1].lineno if frames else getattr(exc, "lineno", None),
    }


def _listing(root: str) -> dict:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            out[path] = (st.st_size, st.st_mtime_ns)
    return out


class Namespace:
    """The notebook's variables: a ``__main__`` module, the pyplot hook, and how they were restored.

    A one-shot call (the local runtime) makes one per call from the saved
    state; the notebook holder (``assay_ci_holder``) keeps one for its life
    and each cell runs in a fork of it.
    """

    def __init__(self) -> None:
        self.module = types.ModuleType("__main__")
        self.ns = self.module.__dict__
        self.ns["__builtins__"] = builtins
        self.hook = _PyplotHook()
        sys.meta_path.insert(0, self.hook)
        self.state_found = True
        self.restore_error: str | None = None

    def restore(self, expect_state: bool = False) -> None:
        """Load the saved state (``state.pkl``), replacing every variable."""
        for name in [n for n in self.ns if n != "__builtins__"]:
            del self.ns[name]
        self.state_found = os.path.exists(STATE_PATH)
        self.restore_error = (
            companion("assay_ci_state").restore_state(self.ns, STATE_PATH)
            if self.state_found
            else None
        )
        if not self.state_found and expect_state:
            self.restore_error = (
                "the saved notebook state is gone (the sandbox's files were reset); starting empty"
            )

    def take_report(self) -> tuple[bool, str | None]:
        """(state_found, restore_error), said once: later cells of a holder report a found state."""
        report = (self.state_found, self.restore_error)
        self.state_found, self.restore_error = True, None
        return report


def run(req: dict, real_fd: int, nb: Namespace | None = None) -> dict:
    started = time.perf_counter()
    os.makedirs(CHARTS_DIR, exist_ok=True)
    os.makedirs(OUT_DIR, exist_ok=True)
    for old in os.listdir(CHARTS_DIR):
        os.unlink(os.path.join(CHARTS_DIR, old))
    frame: dict = {"v": 1, "nonce": req["nonce"]}
    problem = verify_inputs(req.get("inputs", []))
    if problem is not None:
        frame.update(status="input_failed", error=problem)
        return frame
    os.chdir(WORKDIR)
    before = _listing(OUT_DIR)
    if nb is None:
        nb = Namespace()
        nb.restore(bool(req.get("expect_state")))
    state_found, restore_error = nb.take_report()
    module, ns, hook = nb.module, nb.ns, nb.hook
    if hook.charts is not None:  # a holder's hook outlives the cell: its charts are per cell
        hook.charts.saved, hook.charts.count = [], 0
    ns.pop("REPORT_RESULT", None)
    ns["load_artifact"] = load_artifact
    ns["list_artifacts"] = list_artifacts
    ns["load_file"] = load_file
    ns["list_files"] = list_files
    code = req["code"]
    if "matplotlib.pyplot" in sys.modules:  # imported by something before the cell
        hook.attach(sys.modules["matplotlib.pyplot"])
    limits = req["limits"]
    out = Capture(
        limits["capture_chars"], limits["tail_chars"], limits["tee_chars"], real_fd, "<stdout>"
    )
    err = Capture(limits["capture_chars"], limits["tail_chars"], 0, None, "<stderr>")
    saved_main = sys.modules.get("__main__")
    sys.modules["__main__"] = module
    old_out, old_err = sys.stdout, sys.stderr
    fd_capture = FdCapture(1, out)
    sys.stdout, sys.stderr = out, err
    error = None
    usage = sys.modules.get(
        "resource"
    )  # loaded by the notebook holder; a one-shot call does without
    faults_before = usage.getrusage(usage.RUSAGE_SELF).ru_minflt if usage else 0
    cell_started = time.perf_counter()
    try:
        body, last = _compile(code)
        exec(body, ns)
        if last is not None:
            shown = eval(last, ns)
            if shown is not None:
                print(repr(shown))
    except BaseException as exc:  # noqa: BLE001 - the cell's failure is the result
        if isinstance(exc, KeyboardInterrupt):
            raise
        error = _error(exc, code)
    cell_ms = (time.perf_counter() - cell_started) * 1000
    cell_faults = usage.getrusage(usage.RUSAGE_SELF).ru_minflt - faults_before if usage else None
    for value in list(ns.values()):  # files the cell left open: their data belongs in out/ now
        if isinstance(value, io.IOBase) and not value.closed:
            try:
                value.flush()
            except Exception:  # noqa: BLE001
                pass
    if _lingering_threads():
        err.write(
            "note: threads the cell started were still running; they were stopped with the cell\n"
        )
    if hook.charts is not None:
        try:
            hook.charts.save_open()
        except Exception as exc:  # noqa: BLE001
            err.write(f"figures could not be saved: {type(exc).__name__}: {exc}\n")
    sys.stdout, sys.stderr = old_out, old_err
    fd_capture.stop()
    if saved_main is not None:
        sys.modules["__main__"] = saved_main
    result_set = "REPORT_RESULT" in ns
    frame["result_set"] = result_set
    if result_set:
        try:
            frame["result"] = companion("assay_ci_results").jsonable(ns["REPORT_RESULT"])
        except (TypeError, ValueError, RecursionError) as exc:
            frame["result_error"] = str(exc)
            frame["result"] = None
    after = _listing(OUT_DIR)
    frame["files"] = [
        {"path": os.path.relpath(p, WORKDIR), "name": os.path.relpath(p, OUT_DIR), "size": s}
        for p, (s, m) in sorted(after.items())
        if before.get(p) != (s, m)
    ]
    frame["charts"] = hook.charts.saved if hook.charts is not None else []
    target = STATE_PATH + ".next" if SNAPSHOT_PENDING else STATE_PATH
    not_persisted, state_error = companion("assay_ci_state").save_state(
        ns, limits["max_state_bytes"], target, NOT_STATE
    )
    frame.update(
        status="failed" if error else "succeeded",
        error=error,
        stdout=out.report(),
        stderr=err.report(),
        not_persisted=not_persisted,
        state_error=state_error,
        restore_error=restore_error,
        state_found=state_found,
        cell_ms=round(cell_ms, 3),
        cell_faults=cell_faults,
        runner_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    _inline_small_files(frame, limits["inline_bytes"])
    return frame


def _inline_small_files(frame: dict, budget: int) -> None:
    """Carry small charts and files in the frame itself (saves the host a download per file)."""
    for item in frame["charts"] + frame["files"]:
        import base64

        if item["size"] <= budget:
            try:
                with open(os.path.join(WORKDIR, item["path"]), "rb") as fh:
                    data = fh.read(budget + 1)
            except OSError:
                continue
            if len(data) == item["size"]:
                item["data_b64"] = base64.b64encode(data).decode("ascii")
                budget -= len(data)


def _lingering_threads() -> bool:
    threading = sys.modules.get("threading")
    if threading is None:
        return False
    main = threading.main_thread()
    return any(t is not main and t.is_alive() and not t.daemon for t in threading.enumerate())


def dumps(value) -> str:
    """JSON text (ASCII) without importing json when it is not loaded yet (it pulls in re)."""
    if ENCODE is not None:
        return ENCODE(value)
    if "json" in sys.modules:
        return sys.modules["json"].dumps(value, ensure_ascii=True, separators=(",", ":"))
    from _json import encode_basestring_ascii as quote

    parts: list = []
    _encode(value, parts, quote)
    return "".join(parts)


def _encode(value, out: list, quote) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(quote(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("NaN and infinities have no JSON form")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        out.append("{")
        first = True
        for k, v in value.items():
            if not first:
                out.append(",")
            first = False
            out.append(quote(str(k)))
            out.append(":")
            _encode(v, out, quote)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for i, v in enumerate(value):
            if i:
                out.append(",")
            _encode(v, out, quote)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON data")


def emit(frame: dict, real_fd: int, max_inline: int, max_file: int) -> None:
    text = dumps(frame)
    if len(text) > max_inline:
        # Too big for the sandbox's stdout limit: leave it in a file the host downloads.
        for item in frame.get("charts", []) + frame.get("files", []):
            item.pop("data_b64", None)
        text = dumps(frame)
        if len(text) > max_file:
            size = len(dumps(frame.get("result")))
            frame["result"] = None
            frame["result_error"] = (
                f"REPORT_RESULT is too large to return ({size:,} characters of JSON; the "
                f"limit is about {max_file:,}); report a summary, or write the full data "
                "to a file under out/"
            )
            text = dumps(frame)
        with open(FRAME_PATH, "w", encoding="ascii") as fh:
            fh.write(text)
        text = dumps(
            {"v": 1, "nonce": frame["nonce"], "frame_file": os.path.relpath(FRAME_PATH, WORKDIR)}
        )
    os.write(real_fd, ("\n" + FRAME_MARK + frame["nonce"] + "\n" + text + "\n").encode("ascii"))


def run_safely(req: dict, real_fd: int, nb: Namespace | None = None) -> dict:
    """:func:`run`, with a failure of the runner itself reported as a frame."""
    try:
        return run(req, real_fd, nb)
    except BaseException as exc:  # noqa: BLE001 - a runner failure is reported, not hidden
        import traceback

        return {
            "v": 1,
            "nonce": req["nonce"],
            "status": "runner_failed",
            "error": {
                "type": type(exc).__name__,
                "message": str(exc),
                "traceback": traceback.format_exc().splitlines()[-12:],
            },
        }


def emit_frame(frame: dict, real_fd: int, req: dict) -> None:
    limits = req["limits"]
    emit(frame, real_fd, limits["frame_chars"], limits["max_state_bytes"])


def main(req) -> None:
    """Run one cell in this process (one-shot). ``req`` is the request dict (a Python literal in the bootstrap)."""
    set_workdir(os.getcwd())
    sys.stdout.flush()
    # The frame's channel: a private copy of the sandbox's stdout (not inherited by the cell's
    # subprocesses); fd 1 itself is the cell's, and is captured (FdCapture).
    real_fd = os.dup(sys.stdout.fileno())
    emit_frame(run_safely(req, real_fd), real_fd, req)
    if _lingering_threads():
        os._exit(0)  # the cell is over: do not wait for its threads until the time limit
