"""Settings of the OpenAI-compatible model (section ``openai``, env ``ASSAY_OPENAI_*``)."""

from __future__ import annotations

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class OpenAISettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_OPENAI_", extra="ignore")

    base_url: str = Field(default="https://api.openai.com/v1", description="Server root, ending before /chat.")
    api_key: SecretStr | None = Field(default=None, description="Bearer token; omitted when unset.")
    model: str = Field(default="gpt-4o-mini", description="The model name sent to the server.")
    timeout_s: float = Field(default=60.0, description="Per-request timeout in seconds.")
    temperature: float | None = Field(default=0.0, description="Sampling temperature; unset sends none.")
