"""The kernel owns its evidence, and the subsystems plugins register (the sandbox): made on first use, closed by close()."""

from __future__ import annotations

import ast
import threading
import types
from pathlib import Path

import pytest

from assay import Kernel, hookimpl
from assay.kernel.evidence import ArtifactError
from assay.plugins.sandbox import ProbeResult, SandboxRuntime
from tests.conftest import imported_by

KERNEL_DIR = Path(__file__).resolve().parents[2] / "kernel"


def same_from_threads(get, n: int = 8) -> list:
    barrier, seen = threading.Barrier(n), []

    def worker() -> None:
        barrier.wait()
        seen.append(get())

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return seen


# --- evidence ---------------------------------------------------------------------------


def test_evidence_is_made_once_per_kernel_even_under_concurrent_first_use(make_assay_kernel):
    kernel = make_assay_kernel()
    seen = same_from_threads(lambda: kernel.evidence)
    assert all(e is seen[0] for e in seen)
    catalogs = same_from_threads(lambda: kernel.evidence.catalog)
    assert all(c is catalogs[0] for c in catalogs)
    assert make_assay_kernel().evidence is not kernel.evidence  # kernels share nothing


def test_a_kernel_without_plugins_still_has_the_default_local_store(make_assay_kernel):
    kernel = make_assay_kernel()
    assert "local" not in kernel.registry("artifact_stores")
    run = kernel.new_run()
    assert run.artifacts is not None and run.artifacts.store.name == "local"
    assert run.artifacts.catalog is kernel.evidence.catalog


def test_close_closes_the_evidence_and_the_next_use_makes_it_again(make_assay_kernel):
    kernel = make_assay_kernel()
    sink = kernel.new_run().artifacts
    first = kernel.evidence
    kernel.close()
    assert kernel.evidence is not first
    assert kernel.evidence.catalog is not sink.catalog
    # a sink from before the close still works: the catalog reconnects on use
    from assay.kernel.evidence import capture_file

    record = capture_file(sink, data=b"after close", name="x.txt", media_type="text/plain")
    assert kernel.evidence.catalog.get(record.artifact_id) is not None


def test_store_none_gives_no_sink_and_a_catalog_error(make_assay_kernel, monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_STORE", "none")
    kernel = make_assay_kernel()
    assert kernel.evidence.open_sink("run_x") is None and kernel.new_run().artifacts is None
    with pytest.raises(ArtifactError) as err:
        kernel.evidence.catalog
    assert err.value.code == "ARTIFACT_STORE_UNAVAILABLE"


def test_an_unknown_store_names_the_registered_ones(make_assay_kernel, monkeypatch):
    monkeypatch.setenv("ASSAY_ARTIFACT_STORE", "nowhere")
    with pytest.raises(ArtifactError) as err:
        make_assay_kernel().new_run()
    assert err.value.code == "ARTIFACT_STORE_UNKNOWN" and "local" in err.value.hint


# --- sandbox ----------------------------------------------------------------------------


class QuietRuntime(SandboxRuntime):
    name = "quiet"
    isolated = True

    def probe(self) -> ProbeResult:  # pragma: no cover - never selected here
        return ProbeResult(runtime=self.name, available=False, detail="not used")

    def create_session(self, spec):  # pragma: no cover
        raise NotImplementedError


@pytest.fixture
def quiet_kernel(make_assay_kernel):
    """``quiet_kernel()``: a fresh kernel whose one runtime never answers."""

    def make() -> Kernel:
        plugin = types.ModuleType("quiet_rt")
        plugin.register_sandbox_runtimes = hookimpl(lambda register: register(QuietRuntime))
        return make_assay_kernel(plugin, "assay.plugins.sandbox_plugin")

    return make


def test_sandbox_is_the_kernels_manager_on_its_registered_runtimes(quiet_kernel):
    kernel = quiet_kernel()
    seen = same_from_threads(lambda: kernel.sandbox)
    assert all(m is seen[0] for m in seen)
    assert seen[0]._runtime_classes == {"quiet": QuietRuntime}
    assert quiet_kernel().sandbox is not seen[0]
    kernel.close()


def test_close_closes_the_sandbox_and_the_next_use_makes_a_new_one(quiet_kernel):
    kernel = quiet_kernel()
    first = kernel.sandbox
    kernel.close()
    assert first.closed
    second = kernel.sandbox
    assert second is not first and not second.closed
    second.close()  # closed from outside: the kernel makes a fresh one too
    assert kernel.sandbox is not second
    kernel.close()


def test_closing_a_kernel_that_never_used_them_imports_neither():
    code = "import assay; k = assay.Kernel(load_entrypoints=False); k.start(); k.close()"
    assert (
        imported_by(
            code, ["assay.plugins.sandbox", "assay.kernel.evidence", "assay.kernel.reports"]
        )
        == []
    )


# --- subsystems plugins register ---------------------------------------------------------


class Counter:
    """A subsystem: counts the kernels it was made for, remembers being closed."""

    made: list[Counter] = []

    def __init__(self, kernel) -> None:
        self.kernel, self.closed = kernel, False
        Counter.made.append(self)

    def close(self) -> None:
        self.closed = True


def counter_plugin() -> types.ModuleType:
    from assay.kernel.subsystems import Subsystem

    plugin = types.ModuleType("counter_plugin")
    plugin.register_subsystems = hookimpl(lambda register: register(Subsystem("counter", Counter)))
    return plugin


def test_register_subsystems_gives_an_object_made_once_on_first_use_reached_as_an_attribute(
    make_assay_kernel,
):
    kernel = make_assay_kernel(counter_plugin())
    seen = same_from_threads(lambda: kernel.counter)
    assert all(c is seen[0] for c in seen) and seen[0].kernel is kernel
    assert kernel.subsystem("counter") is seen[0]
    assert make_assay_kernel(counter_plugin()).counter is not seen[0]  # kernels share nothing


def test_close_closes_a_registered_subsystem_and_the_next_use_makes_it_again(make_assay_kernel):
    kernel = make_assay_kernel(counter_plugin())
    first = kernel.counter
    kernel.close()
    assert first.closed and kernel.counter is not first


def test_a_subsystem_no_plugin_provides_is_an_attribute_error_and_a_coded_error(make_assay_kernel):
    from assay import AssayError

    kernel = make_assay_kernel()
    with pytest.raises(AttributeError, match="no plugin provides the subsystem 'runs'"):
        kernel.runs
    with pytest.raises(AssayError) as err:
        kernel.subsystem("runs")
    assert err.value.code == "SUBSYSTEM_NOT_FOUND"
    assert not hasattr(kernel, "sandbox")


def test_the_runs_and_sandbox_plugins_provide_kernel_runs_and_kernel_sandbox(make_assay_kernel):
    from assay.plugins.runs import RunStore
    from assay.plugins.sandbox import SandboxManager

    kernel = make_assay_kernel("assay.plugins.runs_plugin", "assay.plugins.sandbox_plugin")
    assert isinstance(kernel.runs, RunStore) and isinstance(kernel.sandbox, SandboxManager)
    assert kernel.provenance("subsystems", "runs") == "runs_plugin"
    kernel.close()


# --- contracts ----------------------------------------------------------------------------


def test_the_kernel_never_imports_a_plugin_by_path():
    offenders = []
    for path in KERNEL_DIR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = (
                    [node.value]
                    if node.value.startswith("assay.plugins.") and " " not in node.value
                    else []
                )
            offenders += [
                f"{path.name}:{node.lineno} {n}"
                for n in names
                if n.startswith(("assay.plugins", "assay.sandbox_runtimes"))
            ]
    assert offenders == []


def test_renderers_satisfy_the_kernel_protocol(make_assay_kernel):
    from assay.kernel.reports import ReportDocument, ReportRenderer
    from assay.plugins.reports.markdown import MarkdownRenderer

    kernel = make_assay_kernel("assay.plugins.reports.markdown")
    assert isinstance(kernel.renderer("markdown"), ReportRenderer)
    assert isinstance(MarkdownRenderer(), ReportRenderer)
    assert not isinstance(object(), ReportRenderer)
    assert ReportDocument.coerce({"title": "t"}).title == "t"
