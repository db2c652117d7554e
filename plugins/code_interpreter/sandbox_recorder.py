"""The recorder, fresh for every cell: executed INSIDE the sandbox, by the notebook holder.

A cell runs in a fork of the notebook holder, and when it finishes its process
*becomes* the next holder (see ``assay_ci_holder``): whatever the cell changed
in its process - a module attribute, ``builtins``, ``json`` - is still there
when the next cell runs. The notebook's own modules should keep such changes
(monkeypatching a library is notebook state, as in Jupyter), but the code that
records a cell must not: a cell that replaced the result converter would have
``2 + 2`` recorded as 5 in every later cell.

So the holder compiles the runner and its companions once, when it starts,
from the read-only files the host uploaded (never from a bytecode cache: see
``session._holder_program``), and takes a copy of ``builtins``, of the module
namespaces the recorder uses, and a JSON encoder of its own - all before any
snapshot is restored or any cell runs. For each cell, :meth:`Recorder.fresh`
executes those code objects into new module objects whose ``__builtins__`` is
that copy and whose imports resolve to the copies: the capture, the result
conversion, the snapshot and the frame a cell is recorded with are the ones
the host uploaded, whatever earlier cells reassigned.

What this does not cover (docs/code_interpreter.md, "What a cell controls"):
a cell can still reach these private copies through the garbage collector, or
rewrite the interpreter's memory with ``ctypes``; code that does so is the
recorded code of that cell's own artifact.
"""

import builtins
import sys
import types

# Executed anew for every cell, in this order on first use (each imports only earlier ones).
FRESH = (
    "assay_ci_capture",
    "assay_ci_state",
    "assay_ci_results",
    "assay_ci_tables",
    "assay_ci_runner",
)
# Standard modules the recorder imports: copies of their namespaces as the holder started.
COPIED = (
    "os",
    "posixpath",
    "io",
    "time",
    "types",
    "base64",
    "binascii",
    "codecs",
    "select",
    "marshal",
    "hashlib",
    "linecache",
    "traceback",
)


class Recorder:
    """The recorder's code objects and the copies taken when the holder started (before any cell)."""

    def __init__(self, code: dict, runner_dir: str) -> None:
        self.code = {name: code[name] for name in FRESH}
        self.runner_dir = runner_dir
        self.builtins = dict(vars(builtins))
        self.live_import = builtins.__import__
        self.modules = {name: dict(vars(__import__(name))) for name in COPIED}
        self.encode = _own_json_encoder()
        self.capture_slot = sys.modules[
            "assay_ci_capture"
        ]._ACTIVE  # its fork hook's, registered once

    def fresh(self, workdir: str):
        """This cell's own runner module (its companions made on first import)."""
        made: dict = {}
        names = dict(self.builtins)

        def _import(name, globals=None, locals=None, fromlist=(), level=0):
            if level == 0 and name in made:
                return made[name]
            if level == 0 and name in self.code:
                return self._make(name, made, names)
            if level == 0 and name in self.modules:
                return self._copy(name, made)
            return self.live_import(name, globals, locals, fromlist, level)

        names["__import__"] = _import
        runner = _import("assay_ci_runner")
        runner.set_workdir(workdir)
        runner.FRESH = True
        runner.ENCODE = self.encode
        return runner

    def _make(self, name: str, made: dict, names: dict):
        module = types.ModuleType(name)
        module.__file__ = f"{self.runner_dir}/{name}.py"
        module.__dict__["__builtins__"] = names
        if (
            name == "assay_ci_capture"
        ):  # its fork hook is registered once per process: share its slot
            module.__dict__["_ACTIVE"] = self.capture_slot
        made[name] = module
        exec(self.code[name], module.__dict__)
        return module

    def _copy(self, name: str, made: dict):
        module = types.ModuleType(name)
        module.__dict__.update(self.modules[name])
        if name == "os":
            module.__dict__["path"] = made.get("posixpath") or self._copy("posixpath", made)
        made[name] = module
        return module


def _own_json_encoder():
    """``encode`` of a JSON encoder loaded from the standard library's file into a module of its own
    (not ``sys.modules['json']``, which a cell can change)."""
    import importlib.util
    import json.encoder

    spec = importlib.util.spec_from_file_location("assay_ci_json_encoder", json.encoder.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
