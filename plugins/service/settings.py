"""Settings of the service (``[service]`` in the config file, ``ASSAY_SERVICE_*`` variables).

One section covers ``assay mcp`` and ``assay serve``: where the server
listens, who may use it (tokens live in ``ASSAY_HOME/service/tokens.sqlite3``)
and the limits that keep one caller from taking the machine.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServiceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_SERVICE_", extra="ignore")

    host: str = Field(
        default="127.0.0.1", description="Address `assay serve` binds (loopback by default)."
    )
    port: int = Field(default=8765, ge=0, le=65535, description="Port of `assay serve`.")
    model: str = Field(
        default="",
        description="Model a run uses when the request names none: PROVIDER[:NAME] "
        "(empty: the agent section's model).",
    )
    models: list[str] = Field(
        default_factory=list,
        description="Models a client may name (PROVIDER or "
        "PROVIDER:NAME); empty: only the default.",
    )
    max_body_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Largest request body accepted (413 past)."
    )
    questions_per_minute: int = Field(
        default=30, ge=1, description="Runs one token may start per minute (429)."
    )
    max_runs_per_token: int = Field(
        default=4, ge=1, description="Runs one token may have going at once (429)."
    )
    max_runs_total: int = Field(
        default=8, ge=1, description="Runs the server runs at once; more wait in a queue."
    )
    max_queued: int = Field(
        default=32, ge=0, description="Runs that may wait for a slot; past it 429."
    )
    run_wall_s: float = Field(
        default=300.0, gt=0, description="Ceiling of one run's wall time (status max_time)."
    )
    max_steps: int = Field(default=20, ge=1, description="Ceiling of one run's model turns.")
    drain_s: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, how long running runs may finish before they are cancelled.",
    )
    preview_rows: int = Field(
        default=50,
        ge=1,
        le=1000,
        description="Rows of an artifact an MCP resource read returns (select more with a query).",
    )
    max_read_rows: int = Field(
        default=1000, ge=1, le=100_000, description="Most rows one artifact read returns."
    )
    mcp_conversations_per_token: int = Field(
        default=16,
        ge=1,
        description="MCP conversations (runs, with their "
        "sandbox sessions) one token may keep open; "
        "a new one closes the one idle longest.",
    )
    mcp_conversation_idle_s: float = Field(
        default=1800.0,
        gt=0,
        description="Seconds an MCP conversation may stay "
        "idle before it is closed with its run "
        "and sandbox session.",
    )
    mcp_resources_listed: int = Field(
        default=100,
        ge=1,
        description="Artifacts an MCP resources/list names, "
        "newest first; the manifest names them all.",
    )
    max_tool_calls_per_token: int = Field(
        default=4,
        ge=1,
        description="POST /tools calls one token may have "
        "going at once (429): a token cannot take "
        "the whole sandbox pool.",
    )
    tool_calls_per_minute: int = Field(
        default=120, ge=1, description="POST /tools calls one token may start per minute (429)."
    )
    report_workers: int = Field(
        default=2,
        ge=1,
        description="Threads that render reports (PDF by Chromium), "
        "apart from the ones tool calls run in.",
    )
    max_reports_per_token: int = Field(
        default=2, ge=1, description="Report renders one token may have going at once (429)."
    )
    session_ttl_s: float = Field(
        default=12 * 3600.0,
        gt=0,
        description="Life of the page's sign-in session "
        "(a cookie for a token, POST /session); kept in the server's memory.",
    )
    max_streams_per_token: int = Field(
        default=8, ge=1, description="Event streams one token may hold open (429)."
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Time a connection has to send a request's "
        "headers, from its start or its previous "
        "request's end; then it is closed.",
    )
    owner_max_artifact_bytes: int = Field(
        default=20 << 30,
        ge=1,
        description="Evidence bytes all runs of one "
        "owner may hold; a capture past it fails (ARTIFACT_QUOTA_EXCEEDED).",
    )
    idempotency_ttl_s: float = Field(
        default=86400.0,
        gt=0,
        description="How long an Idempotency-Key of POST /runs is kept (per owner).",
    )
