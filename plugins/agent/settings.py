"""The agent's limits and budgets (section ``agent``, env ``ASSAY_AGENT_*``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class AgentSettings(BaseSettings):
    """Every bound of one run. Each one, when hit, is reported in the run record."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_AGENT_", extra="ignore")

    model: str = Field(
        default="openai_compatible",
        description="The model when `assay ask` gets no --model: PROVIDER[:NAME].",
    )
    max_steps: int = Field(
        default=20, ge=1, description="Model turns per run; status max_steps when hit."
    )
    max_wall_s: float = Field(
        default=900.0, gt=0, description="Wall time per run in seconds; status max_time when hit."
    )
    max_tool_calls_per_turn: int = Field(
        default=8,
        ge=1,
        description="Tool calls run per model turn; the rest answer AGENT_TOOL_CALLS_LIMIT.",
    )
    token_budget: int = Field(
        default=100_000,
        ge=1_000,
        description="Estimated tokens the conversation may hold; status max_tokens past it.",
    )
    compact_at: float = Field(
        default=0.75,
        gt=0.1,
        le=1.0,
        description="Fraction of token_budget at which older tool results are compacted.",
    )
    keep_recent_results: int = Field(
        default=2, ge=0, description="The newest tool results never compacted."
    )
    prompt_tokens: int = Field(
        default=4_000, ge=100, description="Budget of the resources' part of the system prompt."
    )
    tool_result_chars: int = Field(
        default=24_000, ge=500, description="Most characters of one tool result shown to the model."
    )
    figure_check: bool = Field(
        default=True,
        description=(
            "Check every figure of the answer against the run's evidence; one not found there makes the run "
            "answered_unverified."
        ),
    )
    figure_retries: int = Field(
        default=1,
        ge=0,
        le=3,
        description=(
            "Times the model is asked to correct or cite an answer's unsupported figures before the run ends."
        ),
    )
    thread_recent_turns: int = Field(
        default=3,
        ge=1,
        description=(
            "A follow-up sees the question and whole final answer of this many newest turns of its thread; "
            "older turns are summarised (question, and the answer's first 200 characters)."
        ),
    )
    thread_share: float = Field(
        default=0.5,
        gt=0,
        lt=1,
        description=(
            "Fraction of the prompt budget (prompt_tokens) a follow-up's thread may use; the resources get the rest."
        ),
    )
    chars_per_token: float = Field(
        default=4.0, gt=0, description="Token estimate: characters per token."
    )
