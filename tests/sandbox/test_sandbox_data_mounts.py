"""Registered data files, read-only under /data: the one exception to "no host mounts".

The spec refuses any data mount that is not a regular, unchanged file at a plain /data path; the
model's overrides can never ask for a mount; the inspect check refuses a container whose engine shows
an extra or a writable mount (real podman inspect output, not a made-up one).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import uuid

import pytest

from assay.plugins.sandbox import SANDBOX_OVERRIDE_REFUSED, SandboxConfig, SandboxError, build_spec
from assay.plugins.sandbox.datamounts import DataMount
from assay.plugins.sandbox.labels import owner_labels
from assay.plugins.sandbox.spec import verify_inspect
from tests.conftest import require
from tests.sandbox.conftest import sandbox_image


def _mount(path, target="/data/sales.csv") -> DataMount:
    st = os.stat(path)
    return DataMount(str(path), target, st.st_size, st.st_mtime_ns)


def _spec(*mounts, **overrides):
    return build_spec(
        SandboxConfig.from_env(),
        language="python",
        name=f"assay-test-{uuid.uuid4().hex[:8]}",
        labels=owner_labels("s", "podman", 60),
        overrides=overrides,
        data_files=tuple(mounts),
    )


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "sales.csv"
    path.write_text("region,amount\nnorth,1\n")
    return path


def test_a_registered_file_is_a_read_only_data_mount_of_the_spec(csv):
    spec = _spec(_mount(csv))
    assert spec.data_files == (_mount(csv),) and spec.host_mounts == ()
    assert set(spec.data_files[0].options) >= {"ro", "nosuid", "nodev", "noexec"}
    args = spec.cli_run_args()
    assert args[args.index("--mount") + 1] == (
        f"type=bind,source={csv},target=/data/sales.csv,readonly"
    )


@pytest.mark.parametrize(
    "target",
    [
        "/data/../etc/x.csv",
        "/etc/sales.csv",
        "/data",
        "/data/",
        "data/sales.csv",
        "/data/a/b/c.csv",
    ],
)
def test_a_data_mount_outside_a_plain_data_path_is_refused(csv, target):
    with pytest.raises(SandboxError) as err:
        _spec(_mount(csv, target))
    assert err.value.code == SANDBOX_OVERRIDE_REFUSED and "under /data" in err.value.message


def test_a_directory_a_link_or_a_changed_file_is_never_mounted(csv, tmp_path):
    link = tmp_path / "link.csv"
    link.symlink_to(csv)
    cases = {
        "not a regular file": DataMount(str(tmp_path), "/data/d.csv", 0, 0),
        "no links": dataclasses.replace(_mount(csv), source=str(link)),
        "changed after it was registered": dataclasses.replace(_mount(csv), size=1),
    }
    for why, mount in cases.items():
        with pytest.raises(SandboxError) as err:
            _spec(mount)
        assert why in err.value.message, why


@pytest.mark.parametrize("key", ["mounts", "volumes", "binds", "bind", "data_files"])
def test_the_models_overrides_still_cannot_ask_for_a_mount(key, csv):
    with pytest.raises(SandboxError) as err:
        _spec(**{key: [f"{csv}:/data/x.csv"]})
    assert err.value.code == SANDBOX_OVERRIDE_REFUSED


def _created_inspect(spec, *extra: str, flags: list[str] | None = None) -> dict:
    """Create (never start) a container from ``spec``'s CLI flags (or ``flags``) plus ``extra`` on
    real podman; its inspect output."""
    flags = spec.cli_run_args() if flags is None else flags
    args = ["podman", "create", "--read-only-tmpfs=false", *flags, *extra]
    made = subprocess.run([*args, sandbox_image(), "true"], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    cid = made.stdout.strip().splitlines()[-1]
    try:
        out = subprocess.run(["podman", "inspect", cid], capture_output=True, text=True, check=True)
        return json.loads(out.stdout)[0]
    finally:
        subprocess.run(["podman", "rm", "-f", cid], capture_output=True)


def _mount_problems(spec, info) -> list[str]:
    return [p for p in verify_inspect(spec, info) if "mount" in p or "bind" in p]


@pytest.fixture
def podman():
    require(shutil.which("podman") is not None, "podman")


def test_inspect_with_exactly_the_data_mounts_is_accepted(podman, csv):
    spec = _spec(_mount(csv))
    assert _mount_problems(spec, _created_inspect(spec)) == []


def test_inspect_showing_an_extra_mount_is_refused(podman, csv, tmp_path):
    other = tmp_path / "other.csv"
    other.write_text("x\n1\n")
    spec = _spec(_mount(csv))
    info = _created_inspect(spec, "-v", f"{other}:/data/other.csv:ro")
    assert any("/data/other.csv" in p for p in _mount_problems(spec, info))
    plain = _spec()  # no data files: any host mount at all is refused, as before
    info = _created_inspect(plain, "-v", f"{other}:/data/other.csv:ro")
    assert "the container has host mounts" in verify_inspect(plain, info)


def test_inspect_showing_a_writable_data_mount_is_refused(podman, csv):
    spec = _spec(_mount(csv))
    writable = [
        a.replace(",readonly", "") if a.startswith("type=bind") else a for a in spec.cli_run_args()
    ]
    info = _created_inspect(spec, flags=writable)
    assert any("writable" in p for p in _mount_problems(spec, info))
