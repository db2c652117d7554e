"""`import assay` stays light: heavy libraries load only inside the plugins that need them."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import imported_by

HEAVY = ["docker", "podman", "sqlalchemy", "pyarrow", "pandas", "matplotlib"]


def test_import_assay_imports_no_heavy_library():
    assert (
        imported_by(
            "import assay, assay.kernel.cli, assay.plugins.agent, assay.kernel.models", HEAVY
        )
        == []
    )


def test_starting_the_kernel_with_every_builtin_plugin_imports_no_heavy_library():
    code = (
        "import sys, json, assay; k = assay.Kernel(); k.start(); "
        f"print(json.dumps({{m: [p.name for p in k.plugins() if p.status == 'loaded'] for m in {HEAVY!r} "
        "if m in sys.modules}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {}, (
        "a plugin module imports a heavy library at import"
    )


def test_import_assay_alone_imports_no_kernel_module_until_a_name_is_used():
    # the `assay` command pauses the garbage collector before the kernel's imports (kernel/cli.py)
    assert imported_by("import assay", ["pydantic", "assay.kernel.kernel"]) == []
    assert imported_by("from assay import Kernel", ["assay.kernel.kernel"]) == [
        "assay.kernel.kernel"
    ]
