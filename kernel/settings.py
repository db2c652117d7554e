"""Settings from the environment (``ASSAY_*``) and an optional TOML file.

The kernel's own settings live in :class:`Settings`. Each plugin keeps its
options in a section of its own: a pydantic-settings class it asks for with
``settings.section("sql", SqlSettings)``, read from ``ASSAY_SQL_*`` variables
and the ``[sql]`` table of the file named by ``ASSAY_CONFIG``.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any, TypeVar

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import ConfigError

S = TypeVar("S", bound=BaseSettings)

_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^:/@\s]*:)(?P<pw>[^@\s]+)(?P<tail>@)")


_SECRET_WORDS = ("password", "secret", "token", "credential")


def mask_url(text: str) -> str:
    """Replace any password in ``scheme://user:password@host`` forms with ``***``."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}***{m['tail']}", text)


def _default_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "assay"


class Settings(BaseSettings):
    """The kernel's settings. Every field reads ``ASSAY_<FIELD>``."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_", extra="ignore")

    home: Path = Field(default_factory=_default_home, description="Where artifacts and catalogs live.")
    config: Path | None = Field(default=None, description="A TOML file with [kernel] and per-plugin sections.")
    load_plugins: str | None = Field(
        default=None, description="Comma-separated plugins to load; '' loads none; unset loads all."
    )
    disable_plugins: str = Field(default="", description="Comma-separated plugins never to load.")
    strict_plugins: bool = Field(default=False, description="A plugin that fails aborts start-up.")
    log_level: str = Field(default="WARNING", description="DEBUG, INFO, WARNING or ERROR.")
    log_format: str = Field(default="auto", description="'json', 'console', or 'auto' (console on a terminal).")

    _sections: dict[str, BaseSettings]
    _declared: dict[str, str]
    _file_data: dict[str, Any]

    def model_post_init(self, __context: Any) -> None:
        self._sections = {}
        self._declared = {}
        self._file_data = _read_config_file(self.config)

    @classmethod
    def from_env(cls, **overrides: Any) -> "Settings":
        """Build settings from the environment, with keyword overrides winning."""
        try:
            kernel_file = _read_config_file(overrides.get("config") or os.environ.get("ASSAY_CONFIG"))
            file_values = {k: v for k, v in kernel_file.get("kernel", {}).items() if f"ASSAY_{k.upper()}" not in os.environ}
            return cls(**{**file_values, **overrides})
        except ValidationError as exc:
            raise ConfigError(message=_short_validation_message(exc), hint="Check the ASSAY_* variables.") from None

    def section(self, name: str, model: type[S]) -> S:
        """The plugin section ``name``, read once into ``model``.

        Values come from the ``[name]`` table of the config file, overridden by
        the environment variables the model declares (for example with
        ``env_prefix="ASSAY_SQL_"``).
        """
        cached = self._sections.get(name)
        if cached is not None:
            if not isinstance(cached, model):
                raise ConfigError(message=f"settings section {name!r} is claimed by two models")
            return cached
        file_values = self._file_data.get(name, {})
        try:
            instance = _with_file_defaults(model, file_values)
        except ValidationError as exc:
            raise ConfigError(
                message=f"settings section [{name}]: {_short_validation_message(exc)}",
                hint=f"Check the variables and the [{name}] table of the config file.",
            ) from None
        self._sections[name] = instance
        return instance

    def declare_section(self, name: str, model_path: str) -> None:
        """Name a plugin's section without loading it: ``"package.module:ModelClass"``.

        Lets a plugin keep its settings class out of start-up while ``assay
        config`` (:meth:`masked`) still shows the section.
        """
        self._declared[name] = model_path

    def provided(self, name: str, env_prefix: str) -> bool:
        """Whether anything configures section ``name``: a ``[name]`` table in the
        config file or an environment variable starting with ``env_prefix``
        (case-insensitive). Lets a plugin skip loading its settings at start-up
        when there is nothing to read (the defaults)."""
        if name in self._sections or self._file_data.get(name):
            return True
        prefix = env_prefix.upper()
        return any(key.upper().startswith(prefix) for key in os.environ)

    def sections(self) -> dict[str, BaseSettings]:
        """Every section asked for so far, by name."""
        return dict(self._sections)

    def masked(self) -> dict[str, Any]:
        """The effective settings, kernel and sections (declared ones too), with secrets masked."""
        for name, path in sorted(self._declared.items()):
            if name not in self._sections:
                import importlib

                module, _, attr = path.partition(":")
                self.section(name, getattr(importlib.import_module(module), attr))
        out: dict[str, Any] = {"kernel": _masked_dump(self)}
        for name, section in sorted(self._sections.items()):
            out[name] = _masked_dump(section)
        return out


def _with_file_defaults(model: type[S], file_values: dict[str, Any]) -> S:
    # Environment beats the file: build from the environment first, then fill
    # in file values only for fields the environment did not set.
    from_env = model()
    explicit = from_env.model_fields_set
    merged = {k: v for k, v in file_values.items() if k not in explicit}
    if not merged:
        return from_env
    return model(**{**{k: getattr(from_env, k) for k in explicit}, **merged})


def _read_config_file(path: Any) -> dict[str, Any]:
    if not path:
        return {}
    p = Path(path)
    try:
        with p.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError(message=f"config file {p} does not exist", hint="Fix ASSAY_CONFIG.") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(message=f"config file {p} is not valid TOML: {exc}", hint="Fix the file.") from None


def _masked_dump(model: BaseSettings) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in model.model_dump().items():
        if isinstance(value, SecretStr) or any(word in key for word in _SECRET_WORDS) or key.endswith("_key"):
            out[key] = "***" if value else value
        elif isinstance(value, str):
            out[key] = mask_url(value)
        elif isinstance(value, list):
            out[key] = [mask_url(v) if isinstance(v, str) else v for v in value]
        elif isinstance(value, dict):
            out[key] = {k: mask_url(v) if isinstance(v, str) else v for k, v in value.items()}
        elif isinstance(value, Path):
            out[key] = str(value)
        else:
            out[key] = value
    return out


def _short_validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "value"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)
