"""docs/error-codes.md lists exactly the error codes the code base can return.

The codes are found by reading the source (``ast``), not by importing it, in
every package ``pyproject.toml`` ships. A string counts as an error code when
it is one of:

* a module-level constant whose value is its own name (``SQL_QUERY_FAILED =
  "SQL_QUERY_FAILED"``) - how every errors module defines its codes;
* the ``code = "..."`` class attribute of a class (the default code of an
  ``AssayError`` subclass, e.g. ``ConfigError`` -> ``CONFIG_INVALID``);
* a literal first argument (or ``code=`` keyword) of ``*.fail(...)`` or of a
  call to ``AssayError`` or one of its subclasses (found in the source), e.g.
  ``ToolResult.fail("REPORT_NO_EVIDENCE", ...)``;
* a literal ``"code"`` entry of a dict (the code interpreter's in-sandbox
  runner reports input failures that way).

Environment variable names (``SANDBOX_RUNTIME``, ``ASSAY_SQL_DATABASES``...)
are none of these, so they are never taken for codes; a test below checks it
against the settings models themselves.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "docs" / "error-codes.md"
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
SOURCES = {
    "kernel",
    "evidence",
    "sandbox",
    "sql",
    "code_interpreter",
    "reports",
    "models",
    "knowledge",
    "service",
    "worker",
    "files",
}
# A code that is also the name of a setting: SANDBOX_TIMEOUT is the sandbox's time limit
# (environment variable) and the code of a sandbox file operation that overran.
CODES_THAT_ARE_ALSO_SETTINGS = {"SANDBOX_TIMEOUT"}


def _source_files() -> list[Path]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = sorted(set(project["tool"]["setuptools"]["package-dir"].values()))
    files = [f for folder in folders for f in sorted((ROOT / folder).rglob("*.py"))]
    assert files, f"no source files under {folders}"
    return files


@cache
def _trees() -> dict[str, ast.Module]:
    return {
        str(f.relative_to(ROOT)): ast.parse(f.read_text(), filename=str(f)) for f in _source_files()
    }


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _code_literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and CODE.match(node.value):
        return node.value
    return None


def _error_classes(trees: dict[str, ast.Module]) -> set[str]:
    """``AssayError`` and every class in the source that derives from it (by name)."""
    bases: dict[str, set[str]] = defaultdict(set)
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name].update(n for n in map(_name_of, node.bases) if n)
    found = {"AssayError"}
    while True:
        more = {cls for cls, parents in bases.items() if parents & found} - found
        if not more:
            return found
        found |= more


@cache
def defined_codes() -> dict[str, list[str]]:
    """Every error code in the source -> where it is defined or used ("path:line")."""
    trees = _trees()
    errors = _error_classes(trees)
    where: dict[str, list[str]] = defaultdict(list)

    def add(code: str | None, path: str, node: ast.AST) -> None:
        if code:
            where[code].append(f"{path}:{node.lineno}")

    for path, tree in trees.items():
        for node in tree.body:  # module-level NAME = "NAME"
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
            ):
                value = _code_literal(node.value)
                if value == node.targets[0].id:
                    add(value, path, node)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):  # class attribute code = "..."
                for stmt in node.body:
                    target = (
                        stmt.targets[0]
                        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                        else (stmt.target if isinstance(stmt, ast.AnnAssign) else None)
                    )
                    if isinstance(target, ast.Name) and target.id == "code":
                        add(_code_literal(stmt.value), path, stmt)
            elif isinstance(node, ast.Call):  # ToolResult.fail("X", ...), SomeError("X", ...)
                callee = _name_of(node.func)
                if callee == "fail" or callee in errors:
                    add(_code_literal(node.args[0]) if node.args else None, path, node)
                    for kw in node.keywords:
                        if kw.arg == "code":
                            add(_code_literal(kw.value), path, node)
            elif isinstance(node, ast.Dict):  # {"code": "X", ...}
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "code":
                        add(_code_literal(value), path, node)
    return dict(where)


@cache
def catalogued() -> dict[str, list[str]]:
    """Code -> the cells of its table row in docs/error-codes.md (first cell `CODE`)."""
    rows: dict[str, list[str]] = {}
    for line in CATALOGUE.read_text().splitlines():
        match = re.match(r"^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|(.*)\|\s*$", line)
        if not match:
            continue
        code, rest = match.groups()
        assert code not in rows, f"{code} is listed twice in {CATALOGUE.name}"
        rows[code] = [cell.strip() for cell in rest.split("|")]
    return rows


def test_every_code_in_the_source_is_in_the_catalogue():
    missing = {
        code: sites[:3] for code, sites in defined_codes().items() if code not in catalogued()
    }
    assert not missing, (
        f"codes missing from docs/error-codes.md (with where they are defined): {missing}"
    )


def test_every_catalogued_code_still_exists():
    stale = sorted(set(catalogued()) - set(defined_codes()))
    assert not stale, f"docs/error-codes.md lists codes no longer in the source: {stale}"


def test_every_catalogue_row_gives_source_meaning_and_next_step():
    bad = {}
    for code, cells in catalogued().items():
        if len(cells) != 3 or not all(cells):
            bad[code] = f"expected | code | source | meaning | next step |, got {cells}"
        elif cells[0].split()[0].strip("`") not in SOURCES:
            bad[code] = f"source {cells[0]!r} is not one of {sorted(SOURCES)}"
    assert not bad, bad


def test_codes_compared_against_in_the_source_exist():
    """A literal a ``.code`` is compared with (or listed in an errors module) names a real code."""
    known = set(defined_codes())
    unknown = []
    for path, tree in _trees().items():
        for node in ast.walk(tree):
            literals: list[ast.expr] = []
            if isinstance(node, ast.Compare) and any(
                _name_of(side) == "code"
                or (
                    isinstance(side, ast.Call)
                    and _name_of(side.func) == "getattr"
                    and len(side.args) > 1
                    and getattr(side.args[1], "value", None) == "code"
                )
                for side in [node.left, *node.comparators]
            ):
                for side in [node.left, *node.comparators]:
                    literals.extend(
                        side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
                    )
            elif path.endswith("errors.py") and isinstance(node, (ast.Set, ast.Tuple, ast.List)):
                literals.extend(node.elts)
            unknown.extend(
                f"{path}:{node.lineno} {c}"
                for c in map(_code_literal, literals)
                if c and c not in known
            )
    assert not unknown, f"literals compared with an error code that is defined nowhere: {unknown}"


def test_the_collector_does_not_take_settings_for_codes():
    from assay.kernel.sandbox.config import SandboxConfig
    from assay.kernel.settings import Settings

    settings = {f"SANDBOX_{name.upper()}" for name in SandboxConfig.model_fields}
    settings |= {f"ASSAY_{name.upper()}" for name in Settings.model_fields}
    assert {
        "SANDBOX_RUNTIME",
        "SANDBOX_IMAGE_PYTHON",
    } <= settings  # the models are read as expected
    assert set(defined_codes()) & settings == CODES_THAT_ARE_ALSO_SETTINGS


def test_the_collector_finds_each_kind_of_definition():
    codes = defined_codes()
    for code in (
        "SQL_QUERY_TIMEOUT",  # errors-module constant
        "CONFIG_INVALID",  # class attribute
        "REPORT_NO_EVIDENCE",  # ToolResult.fail literal
        "MODEL_NOT_FOUND",  # AssayError literal
        "ARTIFACT_FILE_MISSING",
    ):  # constant, and the runner's {"code": ...}
        assert code in codes, code
