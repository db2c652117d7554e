"""What crosses the HTTP API: request and response bodies (they make the OpenAPI document)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorBody(BaseModel):
    """Every error the API answers itself: a stable code, a message, a hint."""

    code: str
    message: str
    hint: str = ""


class RunCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=4000, description="The question, in words.")
    datasource: str | None = Field(
        default=None,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="A datasource configured on the server, by name (never a URL).",
    )
    model: str | None = Field(
        default=None,
        max_length=200,
        description="PROVIDER[:NAME]; only the server's default or models it offers.",
    )
    max_steps: int | None = Field(
        default=None, ge=1, le=100, description="Model turns (capped by the server)."
    )
    max_wall_s: float | None = Field(
        default=None, gt=0, le=86_400, description="Wall time in seconds (capped by the server)."
    )
    parent_run_id: str | None = Field(
        default=None,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.-]+$",
        description=(
            "A follow-up: the run of yours this question continues (its thread's answers and evidence; default "
            "datasource: that run's; without `files`, that run's uploads, checked unchanged: one deleted "
            "since is 404 FILE_NOT_FOUND). Another owner's run is answered as an unknown one (404)."
        ),
    )
    files: list[Annotated[str, Field(max_length=100)]] = Field(
        default_factory=list,
        max_length=20,
        description=(
            "Ids of your uploads (POST /files), attached to this run as one files datasource, as "
            "`assay ask --file` does. Another owner's id is answered as an unknown one (404 FILE_NOT_FOUND)."
        ),
    )


class UnsupportedFigure(BaseModel):
    """A figure of the answer that is not a value of the run's evidence (the figure check, docs/agent.md)."""

    text: str = Field(description='The figure as written, e.g. "$12.3M".')
    start: int = Field(description="Its first character in the answer.")
    end: int = Field(description="One past its last character in the answer.")
    value: str = Field(default="", description="The amount it states.")
    percent: bool = False


class RunView(BaseModel):
    run_id: str
    status: str = Field(
        description="queued, running, or the final status (answered, answered_unverified, "
        "needs_analysis, partial, failed, max_steps, max_time, max_tokens, "
        "model_unreachable, model_failed, invalid_input, cancelled; interrupted)."
    )
    status_reason: str = ""
    question: str = ""
    model: str = ""
    answer: str | None = None
    unsupported_figures: list[UnsupportedFigure] = Field(
        default_factory=list,
        description="Figures of the answer not found in the run's evidence "
        "(status answered_unverified), with their positions in the answer.",
    )
    report_unbound_figures: list[str] = Field(
        default_factory=list,
        description="Figures the run's report states in its prose without a citation.",
    )
    error: dict[str, Any] | None = None
    steps: int = 0
    tool_calls: int = 0
    artifact_ids: list[str] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started_at: float | None = Field(
        default=None,
        description="When the run began (on workers: when a worker "
        "took it, on the catalog's clock).",
    )
    ended_at: float | None = None
    queued_s: float | None = Field(
        default=None,
        description="On workers: how long the run waited for a worker "
        "(so far, while it waits); null when run in-process.",
    )
    parent_run_id: str | None = Field(
        default=None, description="The run this one continues (a follow-up)."
    )
    thread: list[str] = Field(
        default_factory=list,
        description=(
            "A follow-up's thread: the run ids of the chain, oldest first, this run last (empty for a run of its own)."
        ),
    )


class RunList(BaseModel):
    runs: list[RunView]


class Datasource(BaseModel):
    name: str
    description: str = ""


class Options(BaseModel):
    datasources: list[Datasource]
    models: list[str]
    default_model: str


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The tool's arguments (its JSON Schema)."
    )


class ToolCallResult(BaseModel):
    """The tool's result envelope, and the run it was made in."""

    run_id: str = Field(
        description="The evidence run of this one call: its artifacts carry this run id. It is "
        "not an agent run, so GET /runs and GET /runs/{id} do not list it."
    )
    result: dict[str, Any] = Field(
        description="success, error_code, message, hint, content, data, artifacts..."
    )


class ArtifactSelection(BaseModel):
    """A verified selection of an artifact (see read_artifact_result)."""

    model_config = ConfigDict(extra="allow")

    artifact_id: str
    kind: str
    status: str
    sha256: str
    verified: bool = True


class Health(BaseModel):
    ok: bool
    runs_live: int
