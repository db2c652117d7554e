"""``assay mcp``, ``assay serve`` and ``assay tokens``: the service's commands.

Only click is imported here; the MCP SDK, FastAPI and uvicorn load inside the
commands that use them.
"""

from __future__ import annotations

import ipaddress
import json
import sys
import time
from typing import Any

import click

from assay.kernel.cli import cli_kernel
from assay.kernel.errors import AssayError

SERVICE_BIND_REFUSED = "SERVICE_BIND_REFUSED"
SERVICE_DEPENDENCY_MISSING = "SERVICE_DEPENDENCY_MISSING"


def _settings(kernel: Any) -> Any:
    from .settings import ServiceSettings

    return kernel.settings.section("service", ServiceSettings)


def _tokens(kernel: Any) -> Any:
    from .tokens import open_token_store

    return open_token_store(kernel.settings)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_bind(host: str, tokens: Any) -> None:
    """Refuse a non-loopback address unless auth is configured (at least one active token)."""
    if not is_loopback(host) and not tokens.any_active():
        raise AssayError(
            SERVICE_BIND_REFUSED,
            f"refusing to listen on {host}: no bearer token is configured",
            "Create one with `assay tokens create`, or bind 127.0.0.1.",
        )


def _require(module: str, extra: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise AssayError(
            SERVICE_DEPENDENCY_MISSING,
            f"the {module!r} package is not installed",
            f"pip install 'assay[{extra}]'",
        )


def _host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` -> (host, port); an IPv6 host is written in brackets (``[::1]:8766``) and returned
    without them, as a socket binds it."""
    host, sep, port = value.rpartition(":")
    if (
        not sep
        or not port.isdigit()
        or (":" in host and not (host.startswith("[") and host.endswith("]")))
    ):
        raise click.BadParameter("expected HOST:PORT, such as 127.0.0.1:8766 or [::1]:8766")
    return bind_host(host) or "127.0.0.1", int(port)


def bind_host(host: str) -> str:
    """The address a socket binds: ``[::1]`` -> ``::1``."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def url_of(host: str, port: int, path: str = "/") -> str:
    """``http://HOST:PORT/path``, with an IPv6 address in brackets (RFC 3986)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{path}"


@click.command("mcp")
@click.option(
    "--http",
    "http",
    metavar="HOST:PORT",
    default=None,
    help="Serve MCP over streamable HTTP at http://HOST:PORT/mcp (bearer token required) "
    "instead of stdio.",
)
@click.pass_context
def mcp_cmd(ctx: click.Context, http: str | None) -> None:
    """Serve assay's tools and artifacts to an MCP host (stdio by default).

    Every registered tool is offered with its JSON Schema; a failed call is an
    isError result carrying the assay code and hint. Artifacts of the
    conversation's run are resources artifact://ID. One conversation is one
    assay run: the process (stdio), a handshake's Mcp-Session-Id, or over HTTP
    without a handshake the client's Assay-Conversation header (without it,
    each tool call is a run of its own).
    """
    _require("mcp", "mcp")
    from . import mcp_transport

    kernel = cli_kernel(ctx)
    settings = _settings(kernel)
    if http is None:
        mcp_transport.run(mcp_transport.serve_stdio(kernel, settings))
        return
    host, port = _host_port(http)
    tokens = _tokens(kernel)
    check_bind(host, tokens)
    if not tokens.any_active():
        click.echo(
            "warning: no active token yet: every request will get 401 (assay tokens create)",
            err=True,
        )
    click.echo(
        f"assay mcp: {url_of(host, port, mcp_transport.MCP_PATH)} (bearer token required)", err=True
    )
    mcp_transport.run(mcp_transport.serve_http(kernel, settings, tokens, host, port))


@click.command("serve")
@click.option(
    "--host", default=None, help="Address to bind (default 127.0.0.1; another needs a token)."
)
@click.option("--port", type=int, default=None, help="Port (default 8765; 0 picks a free one).")
@click.pass_context
def serve_cmd(ctx: click.Context, host: str | None, port: int | None) -> None:
    """Serve the HTTP API and the web page (every endpoint but /health needs a bearer token)."""
    _require("fastapi", "serve")
    from .server import serve

    kernel = cli_kernel(ctx)
    settings = _settings(kernel)
    host = bind_host(host or settings.host)
    port = settings.port if port is None else port
    tokens = _tokens(kernel)
    check_bind(host, tokens)
    if kernel.settings.provided("broker", "ASSAY_BROKER_"):
        from assay.plugins.worker.broker import configured

        if configured(
            kernel.settings
        ):  # runs go to workers: the catalog is shared and the broker answers
            from assay.plugins.worker.dispatch import preflight

            preflight(kernel.settings)
    serve(kernel, settings, tokens, host, port)


@click.group("tokens")
def tokens_group() -> None:
    """Bearer tokens of `assay serve` and `assay mcp --http` (stored hashed under ASSAY_HOME)."""


@tokens_group.command("create")
@click.option(
    "--owner", default="default", show_default=True, help="Who the token's runs belong to."
)
@click.option("--label", default="", help="A note to tell tokens apart.")
@click.pass_context
def tokens_create(ctx: click.Context, owner: str, label: str) -> None:
    """Make a token and print it once (only its hash is kept)."""
    try:
        token, info = _tokens(cli_kernel(ctx)).create(owner, label)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--owner") from None
    click.echo(token)
    click.echo(f"token {info.token_id} for {owner}: keep it now, it is not shown again", err=True)


@tokens_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.pass_context
def tokens_list(ctx: click.Context, as_json: bool) -> None:
    """List tokens (ids, owners, labels, dates; never the tokens)."""
    infos = _tokens(cli_kernel(ctx)).list()
    if as_json:
        click.echo(json.dumps([i.__dict__ | {"active": i.active} for i in infos], indent=2))
        return

    def when(ts: float | None) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(ts)) if ts else "-"

    click.echo(f"{'id':<13}{'owner':<16}{'created':<18}{'last used':<18}{'status':<9}label")
    for i in infos:
        status = "active" if i.active else "revoked"
        click.echo(
            f"{i.token_id:<13}{i.owner:<16}{when(i.created_at):<18}{when(i.last_used_at):<18}{status:<9}"
            f"{i.label}"
        )


@tokens_group.command("revoke")
@click.argument("token_id")
@click.pass_context
def tokens_revoke(ctx: click.Context, token_id: str) -> None:
    """Revoke the token TOKEN_ID (the id `assay tokens list` shows)."""
    if not _tokens(cli_kernel(ctx)).revoke(token_id):
        click.echo(f"error: no active token {token_id!r}", err=True)
        sys.exit(1)
    click.echo(f"revoked {token_id}")


COMMANDS = (mcp_cmd, serve_cmd, tokens_group)
