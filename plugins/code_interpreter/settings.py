"""Options of the code interpreter (``ASSAY_CODE_INTERPRETER_*``, section ``[code_interpreter]``)."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class CodeInterpreterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_CODE_INTERPRETER_", extra="ignore")

    preview_chars: int = Field(
        default=4000, ge=200, description="Characters of stdout (and of stderr) shown to the model."
    )
    result_preview_chars: int = Field(
        default=4000, ge=200, description="Characters of REPORT_RESULT shown to the model."
    )
    capture_chars: int = Field(
        default=1_000_000,
        ge=1000,
        description="Characters of each stream kept in the artifact (head).",
    )
    tail_chars: int = Field(
        default=20_000, ge=0, description="Characters of each stream's end kept when it overflows."
    )
    max_file_bytes: int = Field(
        default=10 * 1024**2,
        ge=1024,
        description="Largest /workspace/out file captured as an artifact.",
    )
    max_files: int = Field(
        default=20,
        ge=0,
        description="Files captured from /workspace/out per call (charts count too).",
    )
    inline_bytes: int = Field(
        default=256 * 1024,
        ge=0,
        description="Bytes of small files carried in the reply instead of downloaded.",
    )
