"""Settings of the SQL plugin: section ``[sql]`` of the config file, ``ASSAY_SQL_*`` variables.

Datasources are named URLs. ``ASSAY_SQL_DATABASES`` takes a JSON object
(``{"retail": "sqlite:///retail.db"}``), ``name=URL`` pairs separated by
``;`` or whitespace, or one bare URL (named after its database). The config
file may give a table per datasource with its own limits::

    [sql]
    default_timeout_s = 30

    [sql.databases.retail]
    url = "postgresql://analyst@db.internal/retail"
    timeout_s = 10
    pool_size = 4

    [sql.databases]
    scratch = "sqlite:///scratch.db"

A login that can reach server files, other sessions or server settings is
refused unless its datasource says ``allow_privileged = true``
(:mod:`.privileges`).
"""

from __future__ import annotations

import json
import os
import re
from typing import Annotated, Any

from pydantic import BaseModel, Field, field_serializer, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from assay.kernel.settings import mask_url

# Column-name words that suggest a secret or personal identifier: their values are never sampled.
SECRET_WORDS = (
    "password",
    "passwd",
    "pwd",
    "pass",
    "token",
    "secret",
    "key",
    "ssn",
    "salt",
    "hash",
    "credential",
    "auth",
    "otp",
    "pin",
    "cvv",
    "iban",
    "card",
    "api",
    "session",
    "email",
    "phone",
    "tax",
    "license",
)
_NAME_OK = re.compile(r"[^a-z0-9_-]+")
_FUNCTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)?$")


class DatasourceConfig(BaseModel):
    """One datasource: a URL and optional per-datasource limits."""

    url: str
    timeout_s: float | None = Field(
        default=None, gt=0, description="Default time limit for this datasource."
    )
    max_timeout_s: float | None = Field(
        default=None, gt=0, description="Ceiling a call may not raise past."
    )
    pool_size: int | None = Field(default=None, ge=1, le=64)
    schemas: list[str] | None = Field(
        default=None, description="Schemas to describe (default: all user schemas)."
    )
    description: str = ""
    allow_privileged: bool = Field(
        default=False,
        description="Accept a login that can reach server files, other sessions or server settings "
        "(refused by default: SQL_DATASOURCE_PRIVILEGED); every result then says privileged_login.",
    )
    allow_functions: list[str] = Field(
        default_factory=list,
        description="Your own read-only functions the read-only check may let through, beside the dialect's "
        "allow-list: 'name' or 'schema.name', as the server stores the name (lower case unless created quoted).",
    )

    sample_values: bool | None = Field(
        default=None,
        description="Read and show a low-cardinality text column's distinct values in the prompt "
        "(None: the [sql] setting sample_values; false turns them off for this datasource).",
    )

    @field_validator("allow_functions")
    @classmethod
    def _allowable(cls, names: list[str]) -> list[str]:
        from .allowlist import NEVER

        for name in names:
            if not _FUNCTION_NAME.match(name):
                raise ValueError(
                    f"allow_functions: {name!r} is not a function name ('name' or 'schema.name')"
                )
            if name.rsplit(".", 1)[-1].lower() in NEVER:
                raise ValueError(
                    f"allow_functions: {name!r} runs SQL text or reaches files and is never allowed"
                )
        return names

    @field_serializer("url")
    def _masked_url(self, url: str) -> str:
        # Dumps (``assay config``, logs) never carry the password; connecting reads ``.url``.
        return mask_url(url)


class SqlSettings(BaseSettings):
    """Options of the SQL plugin."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_SQL_", extra="ignore")

    databases: Annotated[dict[str, DatasourceConfig], NoDecode] = Field(default_factory=dict)
    default_timeout_s: float = Field(default=30.0, gt=0)
    max_timeout_s: float = Field(default=300.0, gt=0)
    pool_size: int = Field(default=4, ge=1, le=64, description="Connections per datasource.")
    pool_timeout_s: float = Field(default=10.0, gt=0, description="Wait for a free connection.")
    cancel_grace_s: float = Field(
        default=2.0, gt=0, description="Wait for confirmation after cancelling."
    )
    backstop_margin_s: float = Field(
        default=1.0, ge=0, description="Server-side limit = time limit + this."
    )
    max_result_rows: int = Field(default=1_000_000, ge=1, description="Larger results are refused.")
    max_sql_bytes: int = Field(
        default=1 << 20,
        ge=1,
        description="Longer SQL text (UTF-8 bytes) is refused before it is parsed (SQL_TOO_LONG).",
    )
    preview_rows: int = Field(default=50, ge=1)
    preview_chars: int = Field(default=20_000, ge=200)
    schema_prompt_chars: int = Field(
        default=6_000, ge=200, description="Budget for one schema in a prompt."
    )
    max_value_bytes: int = Field(
        default=64 * 2**20,
        ge=1024,
        description="A longer text/binary value is refused "
        "(SQL_VALUE_TOO_LARGE), checked by the engine before it is sent where it can be.",
    )
    max_row_bytes: int = Field(
        default=256 * 2**20,
        ge=1024,
        description="A row whose text/binary values are longer "
        "together is refused (SQL_ROW_TOO_LARGE).",
    )
    duckdb_memory_limit_mb: int = Field(
        default=2048,
        ge=64,
        description="DuckDB memory_limit of a datasource's instance (its queries together).",
    )
    duckdb_threads: int = Field(
        default_factory=lambda: min(os.cpu_count() or 1, 4),
        ge=1,
        le=256,
        description="DuckDB threads of a datasource's instance.",
    )
    pg_temp_file_limit_mb: int = Field(
        default=2048,
        ge=0,
        description="PostgreSQL temp_file_limit set for each "
        "statement where the login may set it (0: none); assay db doctor advises "
        "ALTER ROLE ... SET temp_file_limit where it may not.",
    )

    sample_values: bool = Field(
        default=True,
        description="Show the distinct values of low-cardinality text "
        "columns of the tables a prompt shows in full (a datasource may turn them off).",
    )
    sample_values_max: int = Field(
        default=12,
        ge=1,
        le=100,
        description="A text column with more distinct "
        "values than this (in the rows read) gets none shown.",
    )
    sample_scan_rows: int = Field(
        default=10_000,
        ge=100,
        description="Rows of a table read to find a column's "
        "distinct values (a bounded query under the datasource's guard and limits).",
    )
    sample_timeout_s: float = Field(
        default=2.0, gt=0, description="Time limit of one sample-values query."
    )
    sample_prompt_s: float = Field(
        default=3.0,
        ge=0,
        description="Time one prompt may spend reading sample values; "
        "tables not reached are shown without them (and read for the next prompt).",
    )
    sample_secret_words: list[str] = Field(
        default_factory=lambda: list(SECRET_WORDS),
        description="A column whose name holds one of these words never has its values read or shown.",
    )

    @field_validator("databases", mode="before")
    @classmethod
    def _parse_databases(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = parse_databases(value)
        if isinstance(value, dict):
            return {name: ({"url": v} if isinstance(v, str) else v) for name, v in value.items()}
        return value


_VARIABLE = "ASSAY_SQL_DATABASES"
_EXPECTED = (
    "expected name=URL pairs separated by ';' (retail=sqlite:///retail.db; "
    "sales=postgresql://analyst@db/sales), a JSON object of name -> URL, or one bare URL"
)
_ENTRY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _malformed(part: str, problem: str) -> ValueError:
    return ValueError(f"{_VARIABLE}: {mask_url(part)!r} {problem}; {_EXPECTED}")


def parse_databases(text: str) -> dict[str, str]:
    """``'{"a": "url"}'``, ``'a=url;b=url'`` or a bare URL -> {name: url}.

    Strict: anything it cannot read with certainty raises ``ValueError`` naming
    the variable, the bad part and the expected form (a kernel then fails at
    start-up with ``CONFIG_INVALID``), never a datasource with a made-up URL.
    """
    text = text.strip()
    if not text:
        return {}
    if text.startswith("{"):
        try:
            loaded = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{_VARIABLE}: not valid JSON ({exc}); {_EXPECTED}") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"{_VARIABLE} JSON must be an object of name -> URL")
        for name, value in loaded.items():
            if not (isinstance(value, str) or isinstance(value, dict) and "url" in value):
                raise ValueError(
                    f"{_VARIABLE}: datasource {name!r} is {type(value).__name__}, not a URL or an "
                    "object with a url"
                )
        return loaded
    out: dict[str, str] = {}
    for part in re.split(r"[;\s]+", text):
        if not part:
            continue
        name, sep, url = part.partition("=")
        if not sep or _SCHEME.match(name):  # a bare URL (its query string may hold '=')
            name, url = name_for_url(part), part
        elif not _ENTRY_NAME.fullmatch(name):
            raise _malformed(part, f"has no usable datasource name before '=' (got {name!r})")
        if not _SCHEME.match(url) or "://" not in url:
            raise _malformed(part, "is not a database URL (scheme://...)")
        if url.count("://") > 1:
            raise _malformed(
                part, "holds more than one URL (a ',' or other separator where ';' was meant?)"
            )
        if name in out:
            raise _malformed(part, f"names datasource {name!r} a second time")
        out[name] = url
    return out


def name_for_url(url: str) -> str:
    """A datasource name derived from a URL: the database or file stem."""
    tail = url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    tail = tail.rsplit(".", 1)[0] if "." in tail else tail
    name = _NAME_OK.sub("_", tail.lower()).strip("_")
    if not name or name in {"memory"}:
        name = url.split(":", 1)[0].split("+", 1)[0].lower()
    if not name[0].isalpha():
        name = "db_" + name
    return name[:64]
