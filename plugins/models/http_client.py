"""httpx for the OpenAI-compatible provider, imported and configured for a quick first request.

Two costs a first request to a model on loopback or the LAN need not pay:

- **httpx's command line.** The ``httpx`` package imports its own command-line
  module, and with it rich and pygments, whenever those happen to be
  installed (~60 ms). The provider never runs that command, so
  :func:`import_httpx` imports httpx without it (``httpx.main`` is then
  httpx's stand-in that says the command cannot run; the ``httpx`` console
  script, a process of its own, is unaffected).
- **Trusted certificates.** httpx builds an SSL context for every client it
  makes, loading the trusted certificates (~35 ms). :func:`tls_context` gives
  the real one (httpx's own: ``SSL_CERT_FILE``, ``SSL_CERT_DIR`` or certifi)
  only where TLS can be used: an ``https://`` base URL, or any proxy set in
  the environment (a proxy may speak TLS, whatever the target's scheme).
  Otherwise the client gets a context that verifies as strictly but trusts
  no certificate at all: should TLS ever be spoken anyway, the handshake
  fails instead of trusting the peer.

The model keeps the context it was given and shares it between its clients,
so an ``https://`` model loads the certificates once, not once per call.
"""

from __future__ import annotations

import ssl
import sys
from types import ModuleType

_CLI_MODULE = "httpx._main"


def import_httpx() -> ModuleType:
    """The ``httpx`` module, imported without its command-line module when not yet imported."""
    loaded = sys.modules.get("httpx")
    if loaded is not None:
        return loaded
    blocked = _CLI_MODULE not in sys.modules
    if blocked:
        sys.modules[_CLI_MODULE] = None  # type: ignore[assignment]  # the import system's "not available"
    try:
        import httpx
    finally:
        if blocked and sys.modules.get(_CLI_MODULE, False) is None:
            del sys.modules[_CLI_MODULE]  # an explicit import of it later works as usual
    return httpx


def tls_possible(url: str) -> bool:
    """Whether a client for ``url`` may speak TLS: an https URL, or a proxy from the environment."""
    if url.strip().lower().startswith("https://"):
        return True
    import_httpx()  # imports urllib.request, where httpx itself finds the proxies
    from urllib.request import getproxies

    return any(getproxies().values())


def tls_context(url: str) -> ssl.SSLContext:
    """The SSL context for the clients of ``url`` (see the module's docstring)."""
    if tls_possible(url):
        return import_httpx().create_ssl_context()
    return ssl.SSLContext(
        ssl.PROTOCOL_TLS_CLIENT
    )  # CERT_REQUIRED, hostname checked, nothing trusted
