"""Settings of the OpenAI-compatible model (section ``openai``, env ``ASSAY_OPENAI_*``)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class OpenAISettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_OPENAI_", extra="ignore")

    base_url: str = Field(
        default="https://api.openai.com/v1", description="Server root, ending before /chat."
    )
    api_key: SecretStr | None = Field(default=None, description="Bearer token; omitted when unset.")
    model: str = Field(default="gpt-4o-mini", description="The model name sent to the server.")
    timeout_s: float = Field(default=60.0, gt=0, description="Per-request read timeout in seconds.")
    connect_timeout_s: float = Field(
        default=10.0, gt=0, description="Time allowed to open the connection."
    )
    temperature: float | None = Field(
        default=0.0, description="Sampling temperature; unset sends none."
    )
    max_tokens: int | None = Field(
        default=4096,
        ge=0,
        description=(
            "Most tokens one answer may have (so a local model does not generate to the end of its context); "
            "0 or unset sends none (the server's default)."
        ),
    )
    max_retries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Retries after a 429, a 5xx or a failed connection (0: none).",
    )
    retry_backoff_s: float = Field(
        default=0.5,
        ge=0,
        description="First retry's wait; doubled each retry (with jitter), capped at 20 s.",
    )
    stream: bool = Field(
        default=True, description="Stream the answer when the caller takes text as it comes."
    )
    stream_usage: bool = Field(
        default=True,
        description="Ask a streaming server for token usage (stream_options.include_usage).",
    )
