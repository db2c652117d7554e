"""The OpenAI-compatible provider's httpx: imported without its command line, TLS set up only where usable."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from assay.kernel.messages import Message
from assay.plugins.models.http_client import tls_context, tls_possible
from assay.plugins.models.openai_compatible import OpenAICompatibleModel
from tests.conftest import imported_by
from tests.models.fake_openai import FakeChatServer, completion

PROXY_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
)


@pytest.fixture
def no_proxy_env(monkeypatch):
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_the_provider_imports_httpx_without_its_command_line_module():
    code = (
        "from assay.plugins.models.http_client import import_httpx\n"
        "httpx = import_httpx(); assert callable(httpx.AsyncClient)"
    )
    assert imported_by(code, ["httpx._main", "rich", "pygments"]) == []


def test_httpx_command_line_module_still_imports_when_asked_for_after_the_provider():
    code = "from assay.plugins.models.http_client import import_httpx\nimport_httpx()\nimport httpx._main"
    assert imported_by(code, ["httpx._main"]) == ["httpx._main"]


def test_an_http_url_without_a_proxy_gets_a_context_that_trusts_no_certificate(no_proxy_env):
    context = tls_context("http://127.0.0.1:8080/v1")
    assert context.cert_store_stats()["x509_ca"] == 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_an_https_url_gets_a_verifying_context_with_the_trusted_certificates(no_proxy_env):
    context = tls_context("https://api.example.com/v1")
    assert context.cert_store_stats()["x509_ca"] > 0
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_a_proxy_in_the_environment_makes_an_http_url_get_the_trusted_certificates(
    no_proxy_env, monkeypatch
):
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.example.com:3128")
    assert tls_possible("http://10.0.0.5:8000/v1")
    assert tls_context("http://10.0.0.5:8000/v1").cert_store_stats()["x509_ca"] > 0


def test_a_model_makes_its_ssl_context_once_for_all_its_calls(no_proxy_env, monkeypatch):
    import assay.plugins.models.openai_compatible as openai_compatible

    made = []
    real = openai_compatible.tls_context
    monkeypatch.setattr(openai_compatible, "tls_context", lambda url: made.append(url) or real(url))
    replies = [completion("one"), completion("two")]
    with FakeChatServer(replies) as server:
        model = OpenAICompatibleModel(base_url=server.url, model="m", retry_backoff_s=0.0)
        for _ in range(2):
            asyncio.run(model.acomplete([Message(role="user", content="hi")], []))
    assert made == [server.url]
