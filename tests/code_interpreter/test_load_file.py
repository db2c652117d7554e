"""Registered files in the sandbox: read-only at /data, ``load_file("name")`` reads them as SQL does.

Real podman (and the docker runtime on podman's Docker-compatible API), real files; nothing mocked.
"""

from __future__ import annotations

import json
import os
import uuid

import pytest

from tests.files.conftest import SALES, write_csv, write_parquet, write_xlsx

TOTALS = "REPORT_RESULT = df.groupby('region')['amount'].sum().sort_values().to_dict()"
EXPECTED = {"east": 40.0, "south": 175.25, "north": 250.5}


def attach(kernel, run, *patterns):
    """A files datasource of this run only (as a service run's uploads are)."""
    from assay.plugins.files import open_files

    return run.attach(open_files(f"files_{uuid.uuid4().hex[:8]}", list(patterns), kernel=kernel))


@pytest.fixture
def data_dir(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    return d


def test_load_file_reads_a_csv_the_way_sql_does(container_kernel, run, call, data_dir):
    attach(container_kernel, run, str(write_csv(data_dir / "sales.csv")))
    result = call(f"df = load_file('sales')\n{TOTALS}")
    assert result.success, result.content
    assert result.data["result"] == EXPECTED


def test_load_file_reads_latin1_tsv_and_json_files(container_kernel, run, call, data_dir):
    rows = [("Zürich", "2024-01", 1.5), ("Málaga", "2024-01", 2.5)]
    latin = write_csv(data_dir / "cities.csv", rows=rows, encoding="latin-1")
    tsv = write_csv(data_dir / "tabbed.tsv", sep="\t")
    (data_dir / "events.json").write_text(
        json.dumps([{"region": r, "month": m, "amount": a} for r, m, a in SALES])
    )
    (data_dir / "lines.ndjson").write_text(
        "\n".join(json.dumps({"region": r, "amount": a}) for r, _, a in SALES) + "\n"
    )
    attach(container_kernel, run, str(latin), str(tsv), str(data_dir / "events.json"))
    attach(container_kernel, run, str(data_dir / "lines.ndjson"))
    result = call(
        "REPORT_RESULT = {\n"
        " 'cities': load_file('cities')['region'].tolist(),\n"
        " 'tsv': float(load_file('tabbed')['amount'].sum()),\n"
        " 'json': float(load_file('events')['amount'].sum()),\n"
        " 'ndjson': list(load_file('lines').columns),\n"
        " 'files': sorted(f['paths'][0] for f in list_files()),\n"
        "}"
    )
    assert result.success, result.content
    total = sum(a for _, _, a in SALES)
    assert result.data["result"] == {
        "cities": ["Zürich", "Málaga"],
        "tsv": total,
        "json": total,
        "ndjson": ["region", "amount"],
        "files": [
            "/data/cities.csv",
            "/data/events.json",
            "/data/lines.ndjson",
            "/data/tabbed.tsv",
        ],
    }


def test_load_file_reads_each_sheet_of_a_workbook(podman_kernel, data_dir):
    book = write_xlsx(
        data_dir / "book.xlsx",
        {"North": [("item", "qty"), ("a", 1), ("b", 2)], "South": [("item", "qty"), ("c", 5)]},
    )
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(book))
        call = lambda code: podman_kernel.call_tool("code_interpreter", {"code": code}, run=run)  # noqa: E731
        result = call(
            "REPORT_RESULT = [int(load_file('book', sheet='North')['qty'].sum()),"
            " int(load_file('book_south')['qty'].sum())]"
        )
        assert result.success, result.content
        assert result.data["result"] == [3, 5]
        ambiguous = call("load_file('book')")
        assert ambiguous.error_code == "SANDBOX_DATA_FILE_AMBIGUOUS"
        assert "'North'" in ambiguous.message and "book_south" in ambiguous.message


def test_a_parquet_file_is_refused_with_its_own_code(podman_kernel, data_dir):
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(write_parquet(data_dir / "events.parquet")))
        result = podman_kernel.call_tool(
            "code_interpreter", {"code": "load_file('events')"}, run=run
        )
        assert result.error_code == "SANDBOX_FILE_FORMAT_UNSUPPORTED"
        assert "sql_query" in result.hint and "load_artifact" in result.hint


def test_an_unknown_name_is_refused_listing_the_available_ones(podman_kernel, data_dir):
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(write_csv(data_dir / "sales.csv")))
        result = podman_kernel.call_tool(
            "code_interpreter", {"code": "load_file('orders')"}, run=run
        )
        assert result.error_code == "SANDBOX_DATA_FILE_NOT_FOUND"
        assert "'orders'" in result.message and "'sales'" in result.message


def test_a_cell_raising_its_own_load_file_error_cannot_choose_the_error_code(podman_kernel):
    forged = (
        "class LoadFileError(ValueError):\n    pass\n"
        "raise LoadFileError('FILE_CHANGED: the file changed Hint: nothing to do')"
    )
    with podman_kernel.new_run() as run:
        result = podman_kernel.call_tool("code_interpreter", {"code": forged}, run=run)
        assert result.error_code == "PYTHON_EXECUTION_FAILED", result.for_model()


PROBE = """
import ctypes, os
out = {}
try:
    open('/data/sales.csv', 'a').write('x')
    out['write'] = 'written'
except OSError as exc:
    out['write'] = exc.strerror
libc = ctypes.CDLL(None, use_errno=True)
MS_REMOUNT, MS_BIND = 32, 4096
rc = libc.mount(b'none', b'/data/sales.csv', None, MS_REMOUNT | MS_BIND, None)
out['remount'] = os.strerror(ctypes.get_errno()) if rc else 'remounted'
out['listing'] = sorted(os.listdir('/data'))
out['mounts'] = [l.split()[1:4] for l in open('/proc/mounts') if ' /data' in l]
REPORT_RESULT = out
"""


def test_the_data_mount_is_read_only_and_holds_only_the_registered_file(container_kernel, data_dir):
    podman_kernel = container_kernel  # podman, then the docker runtime on podman's Docker API
    write_csv(data_dir / "sales.csv").chmod(0o666)  # writable by anyone: only the mount refuses
    (data_dir / "secret.txt").write_text("not registered")
    (data_dir / "other.csv").write_text("a,b\n1,2\n")
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, f"sales={data_dir / 'sales.csv'}")
        result = podman_kernel.call_tool("code_interpreter", {"code": PROBE}, run=run)
        assert result.success, result.content
        out = result.data["result"]
        assert out["write"] == "Read-only file system"
        assert out["remount"] == "Operation not permitted"
        assert out["listing"] == ["sales.csv"]
        ((target, fstype, options),) = out["mounts"]
        assert target == "/data/sales.csv" and fstype != "tmpfs"
        assert {"ro", "nosuid", "nodev", "noexec"} <= set(options.split(","))
        info = podman_kernel.sandbox.inspect(run.peek("sandbox.python").id)
        binds = [m for m in info["Mounts"] if m["Type"] == "bind"]
        assert [(m["Source"], m["Destination"], m["RW"]) for m in binds] == [
            (str((data_dir / "sales.csv").resolve()), "/data/sales.csv", False)
        ]


def test_a_glob_mounts_each_matched_file_under_the_tables_directory(podman_kernel, data_dir):
    (data_dir / "ev").mkdir()
    write_csv(data_dir / "ev" / "a.csv", rows=SALES[:2])
    write_csv(data_dir / "ev" / "b.csv", rows=SALES[2:])
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, f"ev={data_dir / 'ev' / '*.csv'}")
        result = podman_kernel.call_tool(
            "code_interpreter",
            {
                "code": "import os\ndf = load_file('ev')\n"
                "REPORT_RESULT = [sorted(os.listdir('/data/ev')), len(df)]"
            },
            run=run,
        )
        assert result.success, result.content
        assert result.data["result"] == [["a.csv", "b.csv"], len(SALES)]


def test_a_symlink_registered_mounts_its_target_file_only(podman_kernel, data_dir, tmp_path):
    real = write_csv(data_dir / "real.csv")
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, f"sales={link}")
        link.unlink()  # pointing the link elsewhere later changes nothing: the real path is mounted
        link.symlink_to("/etc/passwd")
        result = podman_kernel.call_tool(
            "code_interpreter",
            {"code": "REPORT_RESULT = open('/data/sales.csv').readline()"},
            run=run,
        )
        assert result.success, result.content
        assert result.data["result"] == "region,month,amount\n"
        info = podman_kernel.sandbox.inspect(run.peek("sandbox.python").id)
        assert [m["Source"] for m in info["Mounts"] if m["Type"] == "bind"] == [str(real)]


def test_a_file_changed_between_cells_refuses_the_next_cell(podman_kernel, data_dir):
    path = write_csv(data_dir / "sales.csv")
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(path))

        def call(code):
            return podman_kernel.call_tool("code_interpreter", {"code": code}, run=run)

        assert call("df = load_file('sales')\nREPORT_RESULT = len(df)").data["result"] == 5
        with open(path, "a") as fh:
            fh.write("west,2024-03,1000000\n")
        changed = call("REPORT_RESULT = len(load_file('sales'))")
        assert changed.error_code == "FILE_CHANGED"
        path.unlink()
        assert call("REPORT_RESULT = 1").error_code == "FILE_MISSING"


def test_the_cells_artifact_names_the_files_source_artifacts(podman_kernel, data_dir):
    path = write_csv(data_dir / "sales.csv")
    with podman_kernel.new_run() as run:
        files = attach(podman_kernel, run, str(path))
        result = podman_kernel.call_tool(
            "code_interpreter", {"code": f"df = load_file('sales')\n{TOTALS}"}, run=run
        )
        assert result.success, result.content
        record = run.artifacts.catalog.get(result.data["artifact_id"])
        assert record.provenance["sources"] == files.source_artifacts(run.artifacts)
        source = run.artifacts.catalog.get(record.provenance["sources"][0])
        assert source.kind == "source" and source.provenance["name"] == "sales.csv"


def test_a_large_file_is_read_in_place_by_two_cells_without_a_copy(podman_kernel, data_dir):
    """A 1 GiB file (sparse past its first rows) in a sandbox with 256 MiB of memory and a 64 MiB
    working directory: a copy could not even fit; both cells read its last byte from the mount."""
    path = write_csv(data_dir / "big.csv", rows=SALES * 20000)
    size = 1 << 30
    with open(path, "r+b") as fh:
        fh.truncate(size)
    code = (
        "import os\n"
        "with open('/data/big.csv', 'rb') as fh:\n"
        "    fh.seek(-1, 2); last = fh.read(1)\n"
        "st = os.statvfs('/workspace')\n"
        "REPORT_RESULT = [os.stat('/data/big.csv').st_size, last == b'\\x00',"
        " (st.f_blocks - st.f_bfree) * st.f_frsize]"
    )
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(path))
        first = podman_kernel.call_tool("code_interpreter", {"code": code}, run=run)
        second = podman_kernel.call_tool("code_interpreter", {"code": code}, run=run)
        assert first.success and second.success, (first.content, second.content)
        for result in (first, second):
            file_size, last_is_zero, workspace_used = result.data["result"]
            assert file_size == size and last_is_zero and workspace_used < 32 * 1024**2
        assert podman_kernel.sandbox.config.memory_limit < size


def test_load_file_on_the_local_runtime_reads_the_linked_file(local_kernel, data_dir):
    with local_kernel.new_run() as run:
        attach(local_kernel, run, str(write_csv(data_dir / "sales.csv")))
        result = local_kernel.call_tool(
            "code_interpreter", {"code": f"df = load_file('sales')\n{TOTALS}"}, run=run
        )
        assert result.success, result.content
        assert result.data["result"] == EXPECTED
        listed = local_kernel.call_tool(
            "code_interpreter", {"code": "REPORT_RESULT = list_files()[0]['paths']"}, run=run
        )
        (path,) = listed.data["result"]
        assert path.endswith("/sales.csv") and not path.startswith("/data/")
        assert os.path.realpath(path) == str((data_dir / "sales.csv").resolve())


def test_a_file_the_sandbox_user_cannot_read_is_not_mounted_and_load_file_says_so(
    podman_kernel, data_dir
):
    path = write_csv(data_dir / "private.csv")
    path.chmod(0o600)
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(path))
        result = podman_kernel.call_tool(
            "code_interpreter",
            {
                "code": "import os\nprint(os.listdir('/data') if os.path.isdir('/data') else [])\n"
                "load_file('private')"
            },
            run=run,
        )
        assert result.error_code == "SANDBOX_DATA_FILE_UNREADABLE", result.content
        assert "world-readable" in result.message and "[]" in result.content


def test_a_file_changed_before_the_first_cell_is_file_changed_and_no_sandbox_starts(
    podman_kernel, data_dir
):
    path = write_csv(data_dir / "sales.csv")
    with podman_kernel.new_run() as run:
        attach(podman_kernel, run, str(path))
        with open(path, "a") as fh:
            fh.write("west,2024-03,1\n")
        result = podman_kernel.call_tool("code_interpreter", {"code": "1"}, run=run)
        assert result.error_code == "FILE_CHANGED", result.content
        assert run.peek("sandbox.python") is None
