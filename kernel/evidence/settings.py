"""Evidence-store settings: ``ASSAY_ARTIFACT_*`` variables or the ``[artifact]`` table."""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

PREVIEW_MAX_ROWS = 100
PREVIEW_MAX_BYTES = 256 * 1024
DETAILS_MAX_IDS = 12


class EvidenceSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_ARTIFACT_", extra="ignore")

    store: str = Field(default="local", description="The artifact store plugin to use.")
    max_bytes: int = Field(
        default=1 << 30, ge=1, description="Stop a capture past this many bytes."
    )
    run_max_bytes: int = Field(
        default=2 << 30,
        ge=1,
        description="Evidence bytes one run may capture in all; "
        "a capture past it fails (ARTIFACT_QUOTA_EXCEEDED).",
    )
    preview_rows: int = Field(default=PREVIEW_MAX_ROWS, ge=0, le=PREVIEW_MAX_ROWS)
    preview_bytes: int = Field(default=PREVIEW_MAX_BYTES, ge=1024, le=PREVIEW_MAX_BYTES)


def evidence_settings(settings) -> EvidenceSettings:
    return settings.section("artifact", EvidenceSettings)
