"""The microkernel passes mypy: ``mypy -p assay.kernel`` with the ``[tool.mypy]`` settings in pyproject.toml.

The repository keeps ``kernel/`` at its top and it installs as ``assay.kernel``
(``[tool.setuptools] package-dir``), which mypy cannot follow from the tree; the
test links the installed layout in a temporary folder and checks it there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _installed_layout(tmp_path: Path) -> Path:
    pkg = tmp_path / "assay"
    pkg.mkdir()
    for name in ("__init__.py", "py.typed"):
        (pkg / name).symlink_to(ROOT / "assay" / name)
    for sub in ("kernel", "plugins", "sandbox_runtimes"):
        (pkg / sub).symlink_to(ROOT / sub, target_is_directory=True)
    return tmp_path


def test_the_kernel_passes_mypy(tmp_path):
    where = _installed_layout(tmp_path)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "-p",
            "assay.kernel",
        ],
        capture_output=True,
        text=True,
        cwd=where,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
