"""Where settings come from: every settings class, the kernel's and each section's, is read by
pydantic-settings. Keyword arguments beat the environment (``<env_prefix><FIELD>``, any case),
which beats the config file's table, which beats the defaults; collection and model fields read
their variable as JSON unless marked ``NoDecode``; a bad value is a ``ConfigError`` naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from assay import ConfigError, Settings
from assay.kernel.evidence.settings import EvidenceSettings
from assay.plugins.agent.settings import AgentSettings
from assay.plugins.models.llm_settings import LLMSettings
from assay.plugins.models.openai_settings import OpenAISettings
from assay.plugins.sql.settings import SqlSettings


class Point(BaseModel):
    x: int
    y: int


class ShopSettings(BaseSettings):
    """A plugin's section, written as docs/plugins.md shows."""

    model_config = SettingsConfigDict(env_prefix="ASSAY_SHOP_", extra="ignore")

    name: str = "corner"
    open: bool = False
    rate: float = Field(default=1.5, gt=0)
    tags: list[str] = Field(default_factory=list)
    origin: Point | None = None
    limits: dict[str, int] = Field(default_factory=dict)
    raw: Annotated[dict[str, str], NoDecode] = Field(default_factory=dict)

    @field_validator("raw", mode="before")
    @classmethod
    def _pairs(cls, value: Any) -> Any:
        if isinstance(value, str):
            return dict(part.split("=", 1) for part in value.split(";") if part)
        return value


def shop(**overrides: Any) -> ShopSettings:
    return Settings.from_env().section("shop", ShopSettings, **overrides)


# The kernel's own settings and the sections every `assay ask` reads, by section name.
START_UP = {
    "kernel": Settings,
    "agent": AgentSettings,
    "openai": OpenAISettings,
    "artifact": EvidenceSettings,
}


def read(name: str) -> BaseSettings:
    return (
        Settings.from_env()
        if name == "kernel"
        else Settings.from_env().section(name, START_UP[name])
    )


def named_fields(error: ConfigError) -> list[str]:
    """The fields a settings ``ConfigError`` names: ``settings section [x]: a: ...; b: ...``."""
    return [part.split(":", 1)[0] for part in error.message.split("]: ", 1)[-1].split("; ")]


def set_variables(monkeypatch, name: str, variables: dict[str, str]) -> None:
    prefix = START_UP[name].model_config["env_prefix"]
    for field, value in variables.items():
        monkeypatch.setenv(prefix + field, value)


def test_fields_are_read_from_prefixed_variables_whatever_their_case(monkeypatch):
    monkeypatch.setenv("assay_shop_NAME", "harbour")
    monkeypatch.setenv("ASSAY_SHOP_OPEN", "yes")
    section = shop()
    assert (section.name, section.open) == ("harbour", True)
    assert section.model_fields_set == {"name", "open"}


def test_keyword_arguments_beat_the_environment(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_NAME", "harbour")
    assert shop(name="market").name == "market"


def test_a_dict_given_as_keyword_and_variable_merges_key_by_key(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_LIMITS", '{"a": 1, "b": 2}')
    assert shop(limits={"b": 3}).limits == {"a": 1, "b": 3}
    monkeypatch.setenv("ASSAY_LLM_OPTIONS", '{"temperature": 0.2, "top_p": 0.9}')
    assert Settings.from_env().section("llm", LLMSettings, options={"top_p": 0.5}).options == {
        "temperature": 0.2,
        "top_p": 0.5,
    }


def test_collection_and_model_fields_read_their_variable_as_json(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_TAGS", '["fish", "bread"]')
    monkeypatch.setenv("ASSAY_SHOP_ORIGIN", '{"x": 1, "y": 2}')
    section = shop()
    assert section.tags == ["fish", "bread"] and section.origin == Point(x=1, y=2)


def test_a_no_decode_field_gets_the_variable_text(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_RAW", "a=1;b=2")
    assert shop().raw == {"a": "1", "b": "2"}
    monkeypatch.setenv(
        "ASSAY_SQL_DATABASES", "retail=sqlite:///retail.db; scratch=sqlite:///scratch.db"
    )
    databases = Settings.from_env().section("sql", SqlSettings).databases
    assert {name: d.url for name, d in databases.items()} == {
        "retail": "sqlite:///retail.db",
        "scratch": "sqlite:///scratch.db",
    }


def test_a_variable_that_is_not_json_is_a_config_error_naming_its_field(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_TAGS", "fish, bread")
    with pytest.raises(ConfigError) as caught:
        shop()
    assert "[shop]" in caught.value.message and "tags" in caught.value.message


def test_a_bad_value_is_a_config_error_naming_its_field(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_RATE", "0")
    with pytest.raises(ConfigError) as caught:
        shop()
    assert caught.value.message.startswith("settings section [shop]: ")
    assert named_fields(caught.value) == ["rate"]


@pytest.mark.parametrize(
    ("name", "variables", "expected"),
    [
        (
            "kernel",
            {"LOAD_PLUGINS": "", "Log_Level": "DEBUG", "HOME": "/tmp/x"},
            {
                "load_plugins": "",
                "log_level": "DEBUG",
                "home": Path("/tmp/x"),
                "strict_plugins": False,
            },
        ),
        (
            "agent",
            {"MAX_STEPS": "3", "COMPACT_AT": "0.5", "MODEL": "scripted"},
            {"max_steps": 3, "compact_at": 0.5, "model": "scripted", "token_budget": 100_000},
        ),
        (
            "openai",
            {"BASE_URL": "http://127.0.0.1:1/v1", "API_KEY": "sk", "STREAM": "off"},
            {
                "base_url": "http://127.0.0.1:1/v1",
                "stream": False,
                "temperature": 0.0,
                "max_tokens": 4096,
            },
        ),
        (
            "artifact",
            {"STORE": "s3", "MAX_BYTES": "12"},
            {"store": "s3", "max_bytes": 12, "preview_rows": 100},
        ),
    ],
)
def test_the_start_up_sections_read_their_variables(name, variables, expected, monkeypatch):
    set_variables(monkeypatch, name, variables)
    settings = read(name)
    assert {field: getattr(settings, field) for field in expected} == expected
    assert settings.model_fields_set == {field.lower() for field in variables}


def test_the_openai_key_is_read_as_a_secret(monkeypatch):
    set_variables(monkeypatch, "openai", {"API_KEY": "sk"})
    key = read("openai").api_key
    assert key is not None and key.get_secret_value() == "sk" and "sk" not in repr(key)


@pytest.mark.parametrize(
    ("name", "variables", "bad"),
    [
        (
            "kernel",
            {"LOAD_PLUGINS": "", "STRICT_PLUGINS": "perhaps", "Log_Level": "DEBUG"},
            ["strict_plugins"],
        ),
        ("agent", {"MAX_STEPS": "3", "COMPACT_AT": "0.5", "TOKEN_BUDGET": "10"}, ["token_budget"]),
        (
            "openai",
            {"API_KEY": "sk", "TEMPERATURE": "", "MAX_TOKENS": "-1", "STREAM": "off"},
            ["temperature", "max_tokens"],
        ),
        (
            "artifact",
            {"STORE": "s3", "PREVIEW_ROWS": "1000", "preview_bytes": "nope"},
            ["preview_rows", "preview_bytes"],
        ),
    ],
)
def test_a_bad_start_up_setting_is_a_config_error_naming_each_bad_field(
    name, variables, bad, monkeypatch
):
    set_variables(monkeypatch, name, variables)
    with pytest.raises(ConfigError) as caught:
        read(name)
    assert named_fields(caught.value) == bad


@pytest.mark.parametrize("name", list(START_UP))
def test_the_start_up_sections_defaults_hold_and_variables_naming_no_field_are_ignored(
    name, monkeypatch
):
    model = START_UP[name]
    others = {field.upper() for other in START_UP.values() for field in other.model_fields} - {
        field.upper() for field in model.model_fields
    }
    set_variables(monkeypatch, name, {"NOT_A_FIELD": "1", **dict.fromkeys(others, "nope")})
    monkeypatch.delenv("ASSAY_HOME")
    settings = read(name)
    defaults = {
        field: info.get_default(call_default_factory=True)
        for field, info in model.model_fields.items()
    }
    assert settings.model_dump() == model.model_validate(defaults).model_dump()
    assert settings.model_fields_set == set()


def test_a_section_takes_its_config_table_under_the_environment(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text(
        '[shop]\nname = "from_file"\nrate = 2.5\n\n[agent]\nmodel = "from_file"\nmax_steps = 5\n'
    )
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    monkeypatch.setenv("ASSAY_SHOP_NAME", "from_env")
    monkeypatch.setenv("ASSAY_AGENT_MODEL", "from_env")
    section = shop()
    assert (section.name, section.rate) == ("from_env", 2.5)
    agent = Settings.from_env().section("agent", AgentSettings)
    assert (agent.model, agent.max_steps, agent.max_wall_s) == ("from_env", 5, 900.0)


def test_config_table_keys_name_their_fields_whatever_their_case(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text('[kernel]\nLog_Level = "ERROR"\n\n[agent]\nMax_Steps = 5\n')
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    settings = Settings.from_env()
    assert settings.log_level == "ERROR"
    assert settings.section("agent", AgentSettings).max_steps == 5


def test_a_bad_value_in_the_config_table_is_a_config_error_naming_its_field(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text('[kernel]\nstrict_plugins = "perhaps"\n\n[agent]\nmax_steps = 0\n')
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    with pytest.raises(ConfigError, match="strict_plugins"):
        Settings.from_env()
    monkeypatch.setenv("ASSAY_STRICT_PLUGINS", "0")  # the environment beats the table
    with pytest.raises(ConfigError, match=r"\[agent\]: max_steps"):
        Settings.from_env().section("agent", AgentSettings)
