"""Settings of the ``llm`` bridge (section ``llm``, env ``ASSAY_LLM_*``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class LLMSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_LLM_", extra="ignore")

    model: str | None = Field(
        default=None, description="llm model id or alias; unset: llm's default model."
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Model options passed to llm (e.g. temperature), as llm names them.",
    )
