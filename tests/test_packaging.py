"""assay installs under one name, and works from a built wheel.

The repository keeps ``kernel/``, ``plugins/`` and ``sandbox_runtimes/`` at its
top; pyproject.toml maps them to ``assay.kernel``, ``assay.plugins`` and
``assay.sandbox_runtimes``. These tests build the wheel from a copy of the
sources, install it into a fresh virtual environment and run the console
script there, outside the repository, so nothing is found through the source
tree or the editable install.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
SETUPTOOLS = PROJECT["tool"]["setuptools"]
SOURCES = ["pyproject.toml", "README.md", *sorted(set(SETUPTOOLS["package-dir"].values()))]
GENERIC_TOP_LEVEL = {"kernel", "plugins", "sandbox_runtimes"}


def _package_folders() -> dict[str, Path]:
    """Every package the mapping makes: dotted name -> folder with an __init__.py."""
    found: dict[str, Path] = {}
    for top, folder in SETUPTOOLS["package-dir"].items():
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT / folder)
            found[".".join([top, *rel.parts])] = init.parent
    return found


def test_every_package_folder_is_listed_in_pyproject():
    """The code packages, and besides them only folders of data files that say what they ship."""
    code = _package_folders()
    data = sorted(set(SETUPTOOLS["packages"]) - set(code))
    assert sorted(set(SETUPTOOLS["packages"]) & set(code)) == sorted(code)
    assert data and all(name in SETUPTOOLS["package-data"] for name in data), data


def test_entry_points_and_console_script_name_modules_under_assay():
    targets = [
        *PROJECT["project"]["entry-points"]["assay"].values(),
        *PROJECT["project"]["scripts"].values(),
    ]
    assert targets and all(t.startswith("assay.") for t in targets), targets


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built without network or build isolation from a copy of the sources."""
    src = tmp_path_factory.mktemp("src")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (found,) = out.glob("assay-*.whl")
    return found


def test_the_wheel_installs_one_top_level_package(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
    assert tops == {"assay"}
    assert (
        "assay/sandbox_runtimes/image/build-sandbox-image.sh" in names
    )  # the image build ships with it
    assert {
        "assay/plugins/service/web/index.html",
        "assay/plugins/service/web/app.js",
        "assay/plugins/service/web/app.css",
        "assay/plugins/service/web/static/render.js",
    } <= set(names)  # and the service's page
    assert "assay/py.typed" in names


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict[str, str]:
    """A fresh venv with only the wheel installed; the dependencies come from this
    interpreter's environment through a path entry (no network, no editable install:
    .pth files are not run for a directory that a .pth line adds)."""
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    deps = [p for p in sys.path if p.endswith("site-packages")]
    (site / "assay-test-dependencies.pth").write_text("\n".join(deps) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "PYTHON"))}
    env["ASSAY_HOME"] = str(tmp_path_factory.mktemp("home"))
    return {"bin": str(venv / "bin"), "site": str(site), "env": env}


def _run(installed: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, env=installed["env"], capture_output=True, text=True, timeout=120
    )


def test_the_installed_wheel_imports_assay_from_its_own_site_packages(installed, tmp_path):
    code = (
        "import assay, assay.kernel, assay.plugins.sql, importlib.util as u; "
        "print(assay.__file__); print(assay.kernel.__file__); "
        "print([m for m in ('kernel', 'plugins', 'sandbox_runtimes') if u.find_spec(m)])"
    )
    out = _run(installed, tmp_path, f"{installed['bin']}/python", "-c", code)
    assert out.returncode == 0, out.stderr
    assay_file, kernel_file, generic = out.stdout.splitlines()
    assert assay_file.startswith(installed["site"]) and kernel_file.startswith(installed["site"])
    assert generic == "[]"  # no generic top-level names leak into site-packages


def test_assay_plugins_lists_the_builtins_from_the_wheel(installed, tmp_path):
    out = _run(installed, tmp_path, f"{installed['bin']}/assay", "plugins")
    assert out.returncode == 0, out.stderr
    for plugin in ("sql", "code_interpreter", "podman", "local_store", "sandbox_cli"):
        assert plugin in out.stdout
    assert "failed" not in out.stdout


def test_assay_sql_queries_a_database_from_the_wheel(installed, tmp_path):
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sales (region TEXT, amount INTEGER)")
        conn.executemany("INSERT INTO sales VALUES (?, ?)", [("north", 3), ("south", 4)])
    out = _run(
        installed,
        tmp_path,
        f"{installed['bin']}/assay",
        "sql",
        "--db",
        f"sqlite:///{db}",
        "SELECT sum(amount) AS total FROM sales",
    )
    assert out.returncode == 0, out.stderr
    assert "total" in out.stdout and "7" in out.stdout


def test_assay_sandbox_build_image_help_runs_the_shipped_script(installed, tmp_path):
    out = _run(installed, tmp_path, f"{installed['bin']}/assay", "sandbox", "build-image", "--help")
    assert out.returncode == 0, out.stderr
    assert "Usage: assay sandbox build-image" in out.stdout and "--no-cache" in out.stdout


def test_the_public_api_is_assay_all_and_every_name_resolves():
    import assay

    assert {"Kernel", "tool", "hookimpl", "Lazy", "Settings", "ToolResult"} <= set(assay.__all__)
    assert all(getattr(assay, name, None) is not None for name in assay.__all__)
    assert not {
        n
        for n in vars(assay)
        if n.isidentifier() and not n.startswith("_") and n not in assay.__all__
    } - {"annotations", "kernel", "plugins", "sandbox_runtimes"}  # subpackages, once imported
