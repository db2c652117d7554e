"""Options of the report sub-agent (``ASSAY_REPORT_*``, section ``[report]``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class ReportAgentSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_REPORT_", extra="ignore")

    model: str | None = Field(
        default=None,
        description=("PROVIDER[:NAME] of the report sub-agent's model; default: the run's model."),
    )
    max_handbacks: int = Field(
        default=3, ge=0, description="Calculation hand-backs per report, in total."
    )
    max_attempts: int = Field(
        default=3, ge=1, description="Code executions per pending calculation request."
    )
    max_steps: int = Field(
        default=12, ge=1, description="Model turns of the sub-agent per generate_report call."
    )
    max_tool_calls: int = Field(
        default=30, ge=1, description="Tool calls of the sub-agent per report, in total."
    )
    repeat_limit: int = Field(
        default=2,
        ge=1,
        description=(
            "The same error (or the same failing document) this many times means no progress: stop early."
        ),
    )
    timeout_s: float = Field(default=300.0, gt=0, description="Wall time of one sub-agent session.")
