"""ASSAY_BROKER_URL: refused without a shared catalog, a coded error when unreachable, never a silent fallback."""

from __future__ import annotations

import socket

import pytest

from tests.conftest import imported_by, run_assay
from tests.service.conftest import LiveServer

pytest.importorskip("dramatiq")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def test_a_worker_without_a_broker_url_says_so():
    result = run_assay("worker")
    assert result.exit_code != 0 and "BROKER_URL_INVALID" in result.stderr


def test_a_broker_without_a_shared_catalog_is_refused(monkeypatch):
    monkeypatch.setenv("ASSAY_BROKER_URL", "redis://127.0.0.1:6379/0")
    result = run_assay("worker")
    assert result.exit_code != 0 and "BROKER_NEEDS_SHARED_CATALOG" in result.stderr


def test_a_broker_url_of_another_scheme_is_refused(monkeypatch, pg_catalog_url):
    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    monkeypatch.setenv("ASSAY_BROKER_URL", "kafka://127.0.0.1:9092")
    result = run_assay("worker")
    assert result.exit_code != 0 and "BROKER_URL_INVALID" in result.stderr


@pytest.mark.parametrize("scheme", ["redis", "amqp"])
def test_an_unreachable_broker_is_an_error_with_a_code_not_an_in_process_run(
    tmp_path, pg_catalog_url, scheme
):
    url = f"{scheme}://127.0.0.1:{_closed_port()}/" + ("0" if scheme == "redis" else "")
    settings = {
        "ASSAY_CATALOG_URL": pg_catalog_url,
        "ASSAY_BROKER_URL": url,
        "ASSAY_BROKER_CONNECT_TIMEOUT_S": "2",
    }
    with pytest.raises(RuntimeError, match="server exited with"):
        LiveServer(tmp_path, settings).stop()  # `assay serve` exits before it listens
    said = (tmp_path / "serve.log").read_text()
    assert (
        "BROKER_UNAVAILABLE" in said and url.split("://")[1].rstrip("/0") in said
    )  # and where it looked


def test_kernel_start_up_and_a_one_machine_serve_import_no_broker_library():
    code = (
        "import assay; k = assay.Kernel(); k.start()\n"
        "from assay.plugins.service.runner import RunManager"
    )
    assert imported_by(code, ["dramatiq", "redis", "pika", "assay.plugins.worker.broker"]) == []


def test_a_worker_whose_broker_does_not_answer_exits_with_the_code(monkeypatch, pg_catalog_url):
    monkeypatch.setenv("ASSAY_CATALOG_URL", pg_catalog_url)
    monkeypatch.setenv("ASSAY_BROKER_URL", f"redis://127.0.0.1:{_closed_port()}/0")
    monkeypatch.setenv("ASSAY_BROKER_CONNECT_TIMEOUT_S", "1")
    result = run_assay("worker")
    assert result.exit_code != 0 and "BROKER_UNAVAILABLE" in result.stderr
