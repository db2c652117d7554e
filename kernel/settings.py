"""Settings from the environment (``ASSAY_*``) and an optional TOML file.

The kernel's own settings live in :class:`Settings`. Each plugin keeps its
options in a section of its own: a settings class it asks for with
``settings.section("sql", SqlSettings)``, read from ``ASSAY_SQL_*`` variables
and the ``[sql]`` table of the file named by ``ASSAY_CONFIG``. The kernel's
sandbox is one such section, ``[sandbox]``, read from its ``SANDBOX_*``
variables. Everywhere the environment beats the file, and the file beats the
defaults.

Every settings class, the kernel's and each section's, is a pydantic-settings
``BaseSettings``: its own sources (keyword arguments, its environment
variables, whatever it customised) are kept, and its table of the file is
read by pydantic-settings' TOML source, under them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, SecretBytes, SecretStr, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from .errors import ConfigError
from .registry import resolve_path

S = TypeVar("S", bound=BaseSettings)

_URL_PASSWORD = re.compile(r"(?P<head>[a-zA-Z][\w+.-]*://[^:/@\s]*:)(?P<pw>[^@\s]+)(?P<tail>@)")


_SECRET_WORDS = ("password", "secret", "token", "credential")


def mask_url(text: str) -> str:
    """Replace any password in ``scheme://user:password@host`` forms with ``***``."""
    return _URL_PASSWORD.sub(lambda m: f"{m['head']}***{m['tail']}", text)


# Sections the kernel itself owns: shown by ``assay config`` even before use.
KERNEL_SECTIONS = {"sandbox": "assay.kernel.sandbox.config:SandboxConfig"}


def _default_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME", Path.home() / ".local" / "share")) / "assay"


class Settings(BaseSettings):
    """The kernel's settings. Every field reads ``ASSAY_<FIELD>``, then the ``[kernel]`` table."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_", extra="ignore")

    home: Path = Field(
        default_factory=_default_home, description="Where artifacts and catalogs live."
    )
    config: Path | None = Field(
        default=None, description="A TOML file with [kernel] and per-plugin sections."
    )
    load_plugins: str | None = Field(
        default=None, description="Comma-separated plugins to load; '' loads none; unset loads all."
    )
    disable_plugins: str = Field(default="", description="Comma-separated plugins never to load.")
    strict_plugins: bool = Field(default=False, description="A plugin that fails aborts start-up.")
    log_level: str = Field(
        default="WARNING",
        description="The assay command's log level: DEBUG, INFO, WARNING or ERROR.",
    )
    log_format: str = Field(
        default="auto", description="'json', 'console', or 'auto' (console on a terminal)."
    )
    catalog_url: str | None = Field(
        default=None,
        description="postgresql://... keeps the artifact catalog, runs and report checkpoints in "
        "PostgreSQL; unset, they are SQLite files under ASSAY_HOME.",
    )

    run_retention_days: float | None = Field(
        default=None,
        ge=0,
        description="Days `assay runs prune` keeps runs for (it removes nothing without "
        "--apply); unset, runs are kept until pruned with --older-than.",
    )

    _sections: dict[str, BaseSettings]
    _declared: dict[str, str]
    _file_data: dict[str, Any]

    def model_post_init(self, __context: Any) -> None:
        self._sections = {}
        self._declared = dict(KERNEL_SECTIONS)
        self._file_data = _read_config_file(self.config)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then ``ASSAY_*`` variables, then the ``[kernel]`` table of the file."""
        given = getattr(init_settings, "init_kwargs", {}).get("config")
        table = _table_source(settings_cls, given or os.environ.get("ASSAY_CONFIG"), "kernel")
        sources = (init_settings, env_settings, dotenv_settings, file_secret_settings)
        return (*sources, table) if table is not None else sources

    @classmethod
    def from_env(cls, **overrides: Any) -> Settings:
        """Build settings from the environment, with keyword overrides winning."""
        try:
            return cls(**overrides)
        except (ValidationError, SettingsError) as exc:
            raise ConfigError(
                message=_short_validation_message(exc), hint="Check the ASSAY_* variables."
            ) from None

    def section(self, name: str, model: type[S], /, **overrides: Any) -> S:
        """The plugin section ``name``, read once into ``model``.

        Values come from the ``[name]`` table of the config file, overridden by
        the environment variables the model declares (for example with
        ``env_prefix="ASSAY_SQL_"``). Keyword ``overrides`` (any field, ``name``
        and ``model`` included) beat both; a section built with overrides is a
        fresh one, neither cached nor shown by ``assay config``.
        """
        cached = None if overrides else self._sections.get(name)
        if cached is not None:
            if not isinstance(cached, model):
                raise ConfigError(message=f"settings section {name!r} is claimed by two models")
            return cached
        table = (
            _table_source(model, self.config, name)
            if isinstance(self._file_data.get(name), dict)
            else None
        )
        try:
            instance = _build_section(model, table, overrides)
        except (ValidationError, SettingsError) as exc:
            raise ConfigError(
                message=f"settings section [{name}]: {_short_validation_message(exc)}",
                hint=f"Check the variables and the [{name}] table of the config file.",
            ) from None
        if not overrides:
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
                self.section(name, resolve_path(path))
        out: dict[str, Any] = {"kernel": _masked_dump(self)}
        for name, section in sorted(self._sections.items()):
            out[name] = _masked_dump(section)
        return out


def _build_section(
    model: type[S], table: TomlConfigSettingsSource | None, overrides: dict[str, Any]
) -> S:
    # A plugin's model keeps its own sources (keyword overrides, then its
    # environment variables, ...), whatever it customised; the file's table is
    # the layer under them: it fills only the fields they left unset.
    own = model(**overrides)
    if table is None:
        return own
    taken = set(own.model_fields_set)
    for field_name in own.model_fields_set:
        alias = type(own).model_fields[field_name].alias
        if alias:
            taken.add(alias)
    rest = {key: value for key, value in table().items() if key not in taken}
    if not rest:
        return own
    return model(**{**{k: getattr(own, k) for k in own.model_fields_set}, **rest})


def _table_source(
    model: type[BaseSettings], path: Any, name: str
) -> TomlConfigSettingsSource | None:
    """pydantic-settings' TOML source for the ``[name]`` table of the config file, read for ``model``
    (keys in any case, aliases and all); ``None`` when there is no file or it has no such table."""
    if not path:
        return None
    try:
        return _toml_source(model, path, (name,))
    except KeyError:  # the file has no [name] table
        return None


def _read_config_file(path: Any) -> dict[str, Any]:
    """The whole config file (empty without one): which tables it has."""
    return _toml_source(Settings, path, ()).toml_data if path else {}


def _toml_source(
    model: type[BaseSettings], path: Any, header: tuple[str, ...]
) -> TomlConfigSettingsSource:
    import tomllib  # only when there is a file to read

    try:
        return TomlConfigSettingsSource(model, toml_file=_existing(path), toml_table_header=header)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            message=f"config file {path} is not valid TOML: {exc}", hint="Fix the file."
        ) from None


def _existing(path: Any) -> Path:
    # A config file that is named but missing is an error, not an empty file.
    p = Path(path)
    if not p.is_file():
        raise ConfigError(message=f"config file {p} does not exist", hint="Fix ASSAY_CONFIG.")
    return p


def _masked_dump(model: BaseModel) -> dict[str, Any]:
    """The settings as ``assay config`` shows them. A secret is masked by its declaration (a
    ``SecretStr``/``SecretBytes`` field, at any depth); a plain text field named like a secret
    (password, secret, token, credential, ``*_key``) is masked too, so a plugin that declared its key
    as ``str`` does not print it. Numbers and flags are never secrets (``token_budget`` shows its
    value). Passwords inside URLs are masked everywhere."""
    return {key: _masked(key, value) for key, value in model.model_dump().items()}


def _masked(key: str, value: Any) -> Any:
    if isinstance(value, (SecretStr, SecretBytes)):
        return "***" if value.get_secret_value() else value.get_secret_value()
    if isinstance(value, str):
        named_secret = any(word in key.lower() for word in _SECRET_WORDS) or key.lower().endswith(
            "_key"
        )
        return ("***" if value else value) if named_secret else mask_url(value)
    if isinstance(value, dict):
        return {k: _masked(str(k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(key, v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _short_validation_message(exc: ValidationError | SettingsError) -> str:
    if isinstance(
        exc, SettingsError
    ):  # a variable that does not parse as JSON: 'error parsing value for field "x" ...'
        return str(exc)
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "value"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)
