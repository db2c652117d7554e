"""The tool definition cache: static definitions are kept between processes and never go stale."""

from __future__ import annotations

import compileall
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from assay import Kernel
from assay.kernel.definition_cache import FILE_NAME, fingerprint

TOOL = '''
from assay import tool

@tool(static_definition={static})
def {name}(city: str, days: int = 1) -> str:
    """{doc}

    Args:
        city: The city.
        days: How many days.
    """
    return city
'''

PLUGIN = '''
from assay import hookimpl

@hookimpl
def register_tools(register):
    register("{module}:{name}")  # lazy: the module is imported on first use
'''

DESCRIBE = r"""
import json, sys
from assay import Kernel
k = Kernel(plugins=[sys.argv[1]], load_entrypoints=False).start()
defs = k.tool_definitions("openai")
mcp = k.tool_definitions("mcp")
print(json.dumps({"defs": defs, "mcp": mcp, "imported": sys.argv[1] + "_impl" in sys.modules}))
k.close()
"""


def _plugin(tmp_path: Path, *, static: bool = True, doc: str = "Forecast the weather.") -> tuple[str, str]:
    """A plugin module whose tool lives in a module of its own (registered lazily); (plugin, tool)."""
    name = f"weather_{uuid.uuid4().hex[:8]}"
    plugin, impl = f"defcache_{name}", f"defcache_{name}_impl"
    mods = tmp_path / "mods"
    mods.mkdir(exist_ok=True)
    (mods / f"{impl}.py").write_text(TOOL.format(static=static, name=name, doc=doc))
    (mods / f"{plugin}.py").write_text(PLUGIN.format(module=impl, name=name))
    compileall.compile_dir(mods, quiet=1)  # as pip installs them: the bytecode exists before the first import
    return plugin, name


def _describe(tmp_path: Path, plugin: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "mods"), *sys.path]),
           "ASSAY_HOME": str(tmp_path / "home")}
    out = subprocess.run([sys.executable, "-c", DESCRIBE, plugin], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cached(tmp_path: Path) -> dict:
    path = tmp_path / "home" / "cache" / FILE_NAME
    return json.loads(path.read_text())["tools"] if path.exists() else {}


def test_a_static_definition_is_read_back_by_the_next_process_exactly_as_built(tmp_path):
    plugin, name = _plugin(tmp_path)
    first, second = _describe(tmp_path, plugin), _describe(tmp_path, plugin)
    assert f"{plugin}:{name}" in _cached(tmp_path)
    assert second["defs"] == first["defs"] and second["mcp"] == first["mcp"]
    assert json.dumps(second["defs"]) == json.dumps(first["defs"])  # the key order too
    assert list(second["defs"][0]["function"]["parameters"]["properties"]) == ["city", "days"]


def test_a_cached_definition_describes_the_tool_without_importing_its_module(tmp_path):
    plugin, _ = _plugin(tmp_path)
    assert _describe(tmp_path, plugin)["imported"] is True  # the first process built it
    assert _describe(tmp_path, plugin)["imported"] is False


def test_a_tool_without_a_static_definition_is_never_cached(tmp_path):
    plugin, name = _plugin(tmp_path, static=False)
    _describe(tmp_path, plugin)
    assert _describe(tmp_path, plugin)["imported"] is True
    assert f"{plugin}:{name}" not in _cached(tmp_path)


def test_editing_the_plugin_source_discards_the_cached_definition(tmp_path):
    plugin, name = _plugin(tmp_path, doc="Forecast the weather.")
    assert _describe(tmp_path, plugin)["defs"][0]["function"]["description"] == "Forecast the weather."
    impl = tmp_path / "mods" / f"{plugin}_impl.py"
    impl.write_text(impl.read_text().replace("Forecast the weather.", "Tell tomorrow's weather."))
    stat = impl.stat()
    os.utime(impl, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a later time, whatever the clock's grain
    again = _describe(tmp_path, plugin)
    assert again["imported"] is True
    assert again["defs"][0]["function"]["description"] == "Tell tomorrow's weather."


def test_a_corrupt_cache_file_is_ignored_and_rewritten(tmp_path):
    plugin, name = _plugin(tmp_path)
    path = tmp_path / "home" / "cache" / FILE_NAME
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert _describe(tmp_path, plugin)["defs"][0]["function"]["name"] == name
    assert f"{plugin}:{name}" in _cached(tmp_path)


def test_a_cache_written_for_other_code_is_not_used(tmp_path):
    plugin, name = _plugin(tmp_path)
    path = tmp_path / "home" / "cache" / FILE_NAME
    path.parent.mkdir(parents=True)
    forged = {"name": name, "description": "forged", "parameters": {"type": "object", "properties": {}}}
    path.write_text(json.dumps({"format": 1, "fingerprint": "0" * 64, "tools": {f"{plugin}:{name}": forged}}))
    assert _describe(tmp_path, plugin)["defs"][0]["function"]["description"] == "Forecast the weather."


def test_the_fingerprint_follows_the_plugins_and_their_files(tmp_path, monkeypatch):
    module = tmp_path / f"stamped_{uuid.uuid4().hex[:8]}.py"
    module.write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    __import__(module.stem)
    try:
        plugins = [("p", module.stem, None, None)]
        before = fingerprint(plugins)
        assert before is not None and fingerprint(plugins) == before
        assert fingerprint([("p", module.stem, "dist", "2.0")]) != before
        stat = module.stat()
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
        assert fingerprint(plugins) != before
        assert fingerprint([("q", "never_imported_module_xyz", None, None)]) is None  # nothing to stamp
    finally:
        sys.modules.pop(module.stem, None)


def test_builtin_tools_are_described_the_same_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    built = Kernel()
    try:
        fresh = {d["function"]["name"]: d for d in built.tool_definitions("openai")}
        direct = {name: tool.to_openai() for name, tool in built.tools.items()}
    finally:
        built.close()
    assert fresh == direct
    cached_kernel = Kernel()
    try:
        cached = {d["function"]["name"]: d for d in cached_kernel.tool_definitions("openai")}
    finally:
        cached_kernel.close()
    assert cached == direct
    assert set(_cached(tmp_path)) >= {"builtin_tools:current_time", "sql:sql_query", "code_interpreter:code_interpreter"}


def test_asking_for_an_unknown_tool_by_name_is_a_key_error(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    kernel = Kernel()
    try:
        with pytest.raises(KeyError):
            kernel.tool_definitions("openai", names=["no_such_tool"])
        with pytest.raises(ValueError):
            kernel.tool_definitions("yaml")
    finally:
        kernel.close()


def test_threads_describing_tools_at_once_all_get_them_and_leave_one_valid_file(tmp_path, monkeypatch):
    import threading

    monkeypatch.setenv("ASSAY_HOME", str(tmp_path / "home"))
    kernel = Kernel()
    results, errors = [], []

    def describe():
        try:
            results.append(len(kernel.tool_definitions("openai")))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    try:
        threads = [threading.Thread(target=describe) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        kernel.close()
    assert errors == [] and len(set(results)) == 1 and results[0] > 0
    assert len(_cached(tmp_path)) == results[0]
    assert not [p for p in (tmp_path / "home" / "cache").iterdir() if p.name.endswith(".tmp")]
