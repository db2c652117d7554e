"""The tree passes the project's lint: ruff, with the rules ``[tool.ruff.lint]`` in pyproject.toml names
(import sorting and pyupgrade included), and ruff's formatter with ``[tool.ruff.format]``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args], capture_output=True, text=True, cwd=ROOT
    )


def test_the_tree_passes_ruff():
    result = _ruff("check", "--no-cache", "--output-format", "concise", str(ROOT))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def test_the_tree_is_formatted():
    result = _ruff("format", "--no-cache", "--check", str(ROOT))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
