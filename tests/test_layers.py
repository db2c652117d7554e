"""The kernel's layering holds: the import-linter contracts of pyproject.toml ([tool.importlinter]) pass.

The repository keeps ``kernel/``, ``plugins/`` and ``sandbox_runtimes/`` at its top and maps them into
``assay`` (docs/plugins.md, "One namespace"); import-linter reads a package from one folder, so the test
lays the tree out as it installs (``assay/kernel``, ``assay/plugins``, ...) and checks that copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = {"kernel": "kernel", "plugins": "plugins", "sandbox_runtimes": "sandbox_runtimes"}


def installed_layout(into: Path) -> Path:
    package = into / "assay"
    shutil.copytree(ROOT / "assay", package, ignore=shutil.ignore_patterns("__pycache__"))
    for folder, name in FOLDERS.items():
        shutil.copytree(
            ROOT / folder, package / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    return into


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
            "--config",
            str(ROOT / "pyproject.toml"),
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        cwd=tree,
        env=env,
    )


def test_the_kernel_imports_no_plugin_and_no_sandbox_runtime(tmp_path):
    result = lint_imports(installed_layout(tmp_path))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "1 kept, 0 broken" in result.stdout


def test_the_contract_fails_a_kernel_module_that_imports_a_plugin(tmp_path):
    tree = installed_layout(tmp_path)
    (tree / "assay" / "kernel" / "leak.py").write_text(
        "from assay.plugins.runs import open_store\n"
    )
    result = lint_imports(tree)
    assert result.returncode != 0
    assert "assay.kernel.leak -> assay.plugins.runs" in result.stdout
