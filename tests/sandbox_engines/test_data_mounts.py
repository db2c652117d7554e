"""Registered data files on every engine: read-only at /data, nothing else mounted from the host.

podman (libpod API), docker (a real Docker Engine, and podman's Docker-compatible API), nerdctl (its
CLI driver on podman's CLI) and podman with gVisor each translate ``ContainerSpec.data_files`` and
check the engine's inspect output; the code reads the file and cannot write it.
"""

from __future__ import annotations

import json
import os

import pytest

from assay.plugins.sandbox.datamounts import DataMount

TARGETS = ("podman", "docker", "docker@podman", "nerdctl", "podman+gvisor")
PROBE = """
import json, os
out = {'text': open('/data/sales.csv').read(), 'listing': sorted(os.listdir('/data'))}
try:
    open('/data/sales.csv', 'a').write('x')
    out['write'] = 'written'
except OSError as exc:
    out['write'] = exc.strerror
print(json.dumps(out))
"""


@pytest.mark.parametrize("target", TARGETS)
def test_a_data_file_is_mounted_read_only_on_every_engine(target, engine_managers, tmp_path):
    path = tmp_path / "sales.csv"
    path.write_text("region,amount\nnorth,1\n")
    path.chmod(0o666)  # anyone may write it on the host: only the mount refuses
    st = os.stat(path)
    mount = DataMount(str(path), "/data/sales.csv", st.st_size, st.st_mtime_ns)
    manager = engine_managers(target)
    session = manager.connect("python", data_files=(mount,))
    try:
        result = manager.execute(session, PROBE)
        assert result.exit_code == 0, result.stderr
        out = json.loads(result.stdout)
        assert out == {
            "text": "region,amount\nnorth,1\n",
            "listing": ["sales.csv"],
            "write": "Read-only file system",
        }
        info = manager.inspect(session)
        binds = [m for m in info.get("Mounts") or [] if m.get("Type") == "bind"]
        assert [(m["Source"], m["Destination"], m["RW"]) for m in binds] == [
            (str(path), "/data/sales.csv", False)
        ]
    finally:
        manager.disconnect(session)
    assert path.read_text() == "region,amount\nnorth,1\n"
