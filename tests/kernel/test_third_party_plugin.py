"""A real third-party plugin package, pip-installed into a fresh virtual environment.

The venv gets assay (editable) and the two example packages under
``examples/`` through ``pip install``; their dependencies come from the
project's own ``.venv`` through a path file, so nothing is downloaded.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SELECTED = "builtin_tools,assay-hello,assay-broken"  # keep other built-ins out of these checks


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("plugin-venv")
    env_dir = base / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=60
    )
    site = Path(
        sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)})
    )
    (site / "_assay_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    sources = []
    for example in ("plugin-hello", "plugin-broken"):  # copies: builds must not litter the repo
        sources.append(str(shutil.copytree(ROOT / "examples" / example, base / example)))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(env_dir / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-e",
            str(ROOT),
            *sources,
        ],
        check=True,
        timeout=240,
        capture_output=True,
    )
    return env_dir


def assay(venv: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith("ASSAY_") and k != "PYTHONPATH"
    }
    full_env = {
        **clean,
        "ASSAY_HOME": str(venv.parent / "home"),
        "ASSAY_LOAD_PLUGINS": SELECTED,
        **env,
    }
    return subprocess.run(
        [str(venv / "bin" / "assay"), *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=venv.parent,
        timeout=60,
    )


def plugins_json(venv: Path, **env: str) -> dict:
    out = assay(venv, "plugins", "--json", **env)
    assert out.returncode == 0, out.stderr
    return {p["name"]: p for p in json.loads(out.stdout)["plugins"]}


def test_installed_plugin_is_discovered_and_listed(venv):
    hello = plugins_json(venv)["hello"]
    assert (hello["distribution"], hello["version"], hello["status"]) == (
        "assay-hello",
        "1.0.0",
        "loaded",
    )
    assert hello["registered"] == {"tools": ["greet"], "resources": ["hello_guide"]}
    table = assay(venv, "plugins").stdout
    assert any(
        line.split()[:4] == ["hello", "assay-hello", "1.0.0", "loaded"]
        for line in table.splitlines()
    )


def test_installed_plugin_tool_is_callable(venv):
    out = assay(venv, "tool", "call", "greet", "--args", '{"name": "Ada", "times": 2}')
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["data"] == "Hello, Ada! Hello, Ada!"
    invalid = assay(venv, "tool", "call", "greet", "--args", '{"name": "Ada", "times": 9}')
    assert invalid.returncode == 1 and json.loads(invalid.stdout)["errors"][0]["path"] == "times"


def test_disable_plugins_blocks_installed_plugin(venv):
    assert plugins_json(venv, ASSAY_DISABLE_PLUGINS="hello")["hello"]["status"] == "disabled"
    out = assay(
        venv,
        "tool",
        "call",
        "greet",
        "--args",
        '{"name": "Ada"}',
        ASSAY_DISABLE_PLUGINS="assay-hello",
    )
    assert out.returncode == 1 and json.loads(out.stdout)["error_code"] == "TOOL_NOT_FOUND"


def test_broken_plugin_package_is_isolated_by_default(venv):
    found = plugins_json(venv)
    assert found["broken_import"]["status"] == "failed"
    assert found["broken_import"]["error"]["code"] == "PLUGIN_IMPORT_FAILED"
    assert "assay_broken_missing_dependency" in found["broken_import"]["error"]["message"]
    assert found["broken_register"]["error"]["code"] == "PLUGIN_REGISTER_FAILED"
    tools = {t["name"] for t in json.loads(assay(venv, "tools", "--json").stdout)}
    assert "half_registered" not in tools  # rolled back
    assert {"greet", "arithmetic"} <= tools  # everything else works


def test_broken_plugin_package_is_fatal_in_strict_mode(venv):
    out = assay(venv, "tools", ASSAY_STRICT_PLUGINS="1")
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: PLUGIN_IMPORT_FAILED: plugin 'broken_import'"
    )
    assert "Traceback" not in out.stderr
    fine = assay(venv, "tools", ASSAY_STRICT_PLUGINS="1", ASSAY_DISABLE_PLUGINS="assay-broken")
    assert fine.returncode == 0 and "greet" in fine.stdout


def test_uninstalled_plugin_disappears(venv):
    # Runs last in this module: it removes the package the other tests use.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "uninstall",
            "-q",
            "-y",
            "assay-hello",
        ],
        check=True,
        timeout=120,
        capture_output=True,
    )
    assert "hello" not in plugins_json(venv)
