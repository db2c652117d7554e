"""The tree passes the project's lint: ruff, with the rules ``[tool.ruff.lint]`` in pyproject.toml names,
and ruff's formatter with ``[tool.ruff.format]``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Rule families [tool.ruff.lint] selects that the tree is not yet rewritten for: import sorting and
# pyupgrade's safe fixes touch the imports of ~150 files, done once after the branches of issue 34
# are merged (`ruff check --fix . && ruff format .`); then this tuple and the xfail below go.
PENDING = ("I", "UP")


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args], capture_output=True, text=True, cwd=ROOT)


def test_the_tree_passes_ruff():
    result = _ruff("check", "--no-cache", "--output-format", "concise", "--ignore", ",".join(PENDING), str(ROOT))
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


@pytest.mark.xfail(bool(PENDING), strict=True,
                   reason="the tree is sorted and formatted once after issue 34's merges; strict: passing fails")
def test_the_tree_is_sorted_and_formatted():
    check = _ruff("check", "--no-cache", "--output-format", "concise", str(ROOT))
    fmt = _ruff("format", "--no-cache", "--check", str(ROOT))
    assert check.returncode == 0, (check.stdout + check.stderr)[-4000:]
    assert fmt.returncode == 0, (fmt.stdout + fmt.stderr)[-4000:]
