"""The tree passes the project's lint: ruff, with the rules ``[tool.ruff.lint]`` in pyproject.toml names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_tree_passes_ruff():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                             str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
