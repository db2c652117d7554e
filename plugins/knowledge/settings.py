"""Settings of the knowledge plugin: section ``[knowledge]``, ``ASSAY_KNOWLEDGE`` and ``ASSAY_KNOWLEDGE_*``.

A knowledge base is a name and one or more paths (directories or files).
``ASSAY_KNOWLEDGE`` names them::

    ASSAY_KNOWLEDGE="glossary=./docs/metrics"
    ASSAY_KNOWLEDGE="glossary=./docs/metrics; policies=./policy.pdf,./faq.md"
    ASSAY_KNOWLEDGE='{"glossary": ["./docs/metrics", "./dictionary.csv"]}'
    ASSAY_KNOWLEDGE="./docs/metrics"        # one bare path, named after it (metrics)

The config file may give a table per base::

    [knowledge.bases.glossary]
    paths = ["./docs/metrics"]
    description = "Business definitions of the retail metrics"

Relative paths are resolved against the working directory when the
settings are read. The index lives under ``ASSAY_HOME/knowledge/``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

VARIABLE = "ASSAY_KNOWLEDGE"
_EXPECTED = (
    "expected name=PATH pairs separated by ';' (glossary=./docs/metrics; policies=./a.pdf,./b.md), "
    "a JSON object of name -> path or list of paths, or one bare path"
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_NAME_OK = re.compile(r"[^a-z0-9_-]+")


class KnowledgeBaseConfig(BaseModel):
    """One knowledge base: its paths and what it is about."""

    paths: list[str] = Field(
        min_length=1, description="Directories (searched recursively) or files."
    )
    description: str = ""

    @field_validator("paths", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("paths")
    @classmethod
    def _absolute(cls, paths: list[str]) -> list[str]:
        out = []
        for path in paths:
            if not path.strip():
                raise ValueError("a knowledge base path is empty")
            out.append(str(Path(path.strip()).expanduser().resolve()))
        return out


class _BasesVariable(PydanticBaseSettingsSource):
    """``ASSAY_KNOWLEDGE`` (no suffix) as the ``bases`` field."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        value = os.environ.get(VARIABLE)
        return {} if value is None else {"bases": value}


class KnowledgeSettings(BaseSettings):
    """Options of the knowledge plugin."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_KNOWLEDGE_", extra="ignore")

    bases: Annotated[dict[str, KnowledgeBaseConfig], NoDecode] = Field(default_factory=dict)
    extensions: list[str] = Field(
        default=[".md", ".markdown", ".txt", ".csv", ".pdf"],
        description="File name endings indexed inside a directory (a file named directly is always read).",
    )
    max_file_bytes: int = Field(
        default=20_000_000, ge=1, description="Larger files are skipped, and said so."
    )
    passage_chars: int = Field(
        default=1_200,
        ge=200,
        le=20_000,
        description="Sections longer than this are split at paragraph ends.",
    )
    max_k: int = Field(
        default=20, ge=1, le=200, description="The most passages one search returns."
    )
    result_chars: int = Field(
        default=12_000, ge=500, description="Budget of a search result's text."
    )
    prompt_chars: int = Field(
        default=2_000, ge=200, description="Budget of one base's system-prompt section."
    )
    refresh_s: float = Field(
        default=60.0,
        ge=0,
        description="A search re-checks the files' hashes when the last check is older than this (0: every search).",
    )
    retrievers: list[str] | None = Field(
        default=None,
        description="Second rankers to fuse with BM25, by name (default: every registered one).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            _BasesVariable(settings_cls),
            dotenv_settings,
            file_secret_settings,
        )

    @field_validator("bases", mode="before")
    @classmethod
    def _parse_bases(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = parse_bases(value)
        if isinstance(value, dict):
            return {
                name: ({"paths": v} if isinstance(v, (str, list)) else v)
                for name, v in value.items()
            }
        return value

    @field_validator("bases")
    @classmethod
    def _names(cls, value: dict[str, KnowledgeBaseConfig]) -> dict[str, KnowledgeBaseConfig]:
        for name in value:
            if not _NAME.fullmatch(name):
                raise ValueError(
                    f"knowledge base name {name!r} is not a name (letters, digits, '_' and '-')"
                )
        return value

    @field_validator("extensions")
    @classmethod
    def _dotted(cls, value: list[str]) -> list[str]:
        return [e.lower() if e.startswith(".") else "." + e.lower() for e in value]


def parse_bases(text: str) -> dict[str, Any]:
    """``'glossary=./docs'``, ``'a=./x,./y; b=./z'``, a JSON object or one bare path -> {name: paths}.

    Strict: anything it cannot read with certainty raises ``ValueError`` naming
    the variable and the expected form (the kernel then fails with ``CONFIG_INVALID``).
    """
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{VARIABLE}: not valid JSON ({exc}); {_EXPECTED}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"{VARIABLE}: the JSON must be an object of name -> path(s)")
        return loaded
    out: dict[str, list[str]] = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        name, sep, rest = part.partition("=")
        if not sep:
            name, rest = name_for_path(part), part
        elif not _NAME.fullmatch(name.strip()):
            raise ValueError(
                f"{VARIABLE}: {part!r} has no usable base name before '=' (got {name!r}); {_EXPECTED}"
            )
        name = name.strip()
        paths = [p.strip() for p in rest.split(",") if p.strip()]
        if not paths:
            raise ValueError(f"{VARIABLE}: base {name!r} names no path; {_EXPECTED}")
        if name in out:
            raise ValueError(f"{VARIABLE}: {part!r} names base {name!r} a second time")
        out[name] = paths
    return out


def name_for_path(path: str) -> str:
    """A base name derived from a path: its last part without the extension."""
    tail = Path(path.strip().rstrip("/")).name
    tail = tail.rsplit(".", 1)[0] if "." in tail[1:] else tail
    name = _NAME_OK.sub("_", tail.lower()).strip("_") or "knowledge"
    return name if name[0].isalpha() else "kb_" + name
