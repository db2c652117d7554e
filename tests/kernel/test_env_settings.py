"""EnvSettings: settings read from the environment without pydantic-settings, by pydantic-settings' rules."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from assay.kernel.agent.settings import AgentSettings
from assay.kernel.env_settings import EnvConfigDict, EnvSettings, NoDecode
from assay.kernel.evidence.settings import EvidenceSettings
from assay.plugins.models.openai_settings import OpenAISettings
from pydantic import BaseModel, Field, ValidationError, create_model, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from assay import Settings
from tests.conftest import imported_by


class Point(BaseModel):
    x: int
    y: int


class ShopSettings(EnvSettings):
    model_config = EnvConfigDict(env_prefix="ASSAY_SHOP_", extra="ignore")

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


def pydantic_settings_twin(model: type[EnvSettings]) -> type[BaseSettings]:
    """The same fields and prefix in a pydantic-settings class."""

    class Twin(BaseSettings):
        model_config = SettingsConfigDict(env_prefix=model.model_config["env_prefix"], extra="ignore")

    fields: Any = {name: (info.annotation, info) for name, info in model.model_fields.items()}
    return create_model(f"{model.__name__}Twin", __base__=Twin, **fields)


def outcome(model: type[BaseModel]) -> Any:
    try:
        return model().model_dump()
    except ValidationError as exc:
        return [(e["loc"], e["type"]) for e in exc.errors()]


def test_fields_are_read_from_prefixed_variables_whatever_their_case(monkeypatch):
    monkeypatch.setenv("assay_shop_NAME", "harbour")
    monkeypatch.setenv("ASSAY_SHOP_OPEN", "yes")
    shop = ShopSettings()
    assert (shop.name, shop.open) == ("harbour", True)
    assert shop.model_fields_set == {"name", "open"}


def test_keyword_arguments_beat_the_environment(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_NAME", "harbour")
    assert ShopSettings(name="market").name == "market"


def test_a_dict_given_as_keyword_and_variable_merges_key_by_key(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_LIMITS", '{"a": 1, "b": 2}')
    assert ShopSettings(limits={"b": 3}).limits == {"a": 1, "b": 3}


def test_collection_and_model_fields_read_their_variable_as_json(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_TAGS", '["fish", "bread"]')
    monkeypatch.setenv("ASSAY_SHOP_ORIGIN", '{"x": 1, "y": 2}')
    shop = ShopSettings()
    assert shop.tags == ["fish", "bread"] and shop.origin == Point(x=1, y=2)


def test_a_no_decode_field_gets_the_variable_text(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_RAW", "a=1;b=2")
    assert ShopSettings().raw == {"a": "1", "b": "2"}


def test_a_variable_that_is_not_json_fails_validation_naming_its_field(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_TAGS", "fish, bread")
    with pytest.raises(ValidationError) as caught:
        ShopSettings()
    assert caught.value.errors()[0]["loc"] == ("tags",)


def test_a_bad_value_fails_validation_naming_its_field(monkeypatch):
    monkeypatch.setenv("ASSAY_SHOP_RATE", "0")
    with pytest.raises(ValidationError) as caught:
        ShopSettings()
    assert [e["loc"] for e in caught.value.errors()] == [("rate",)]


@pytest.mark.parametrize("model", [Settings, AgentSettings, OpenAISettings, EvidenceSettings])
@pytest.mark.parametrize("variables", [
    {},
    {"MAX_STEPS": "3", "COMPACT_AT": "0.5", "MODEL": "scripted", "TOKEN_BUDGET": "10"},
    {"BASE_URL": "http://127.0.0.1:1/v1", "API_KEY": "sk", "TEMPERATURE": "", "MAX_TOKENS": "-1", "STREAM": "off"},
    {"STORE": "s3", "MAX_BYTES": "12", "PREVIEW_ROWS": "1000", "preview_bytes": "nope"},
    {"LOAD_PLUGINS": "", "STRICT_PLUGINS": "perhaps", "Log_Level": "DEBUG", "HOME": "/tmp/x"},
])
def test_the_start_up_sections_read_the_environment_as_pydantic_settings_would(model, variables, monkeypatch):
    prefix = model.model_config["env_prefix"]
    for name, value in variables.items():
        monkeypatch.setenv(prefix + name, value)
    assert outcome(model) == outcome(pydantic_settings_twin(model))


def test_an_env_settings_section_takes_its_config_table_under_the_environment(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text('[shop]\nname = "from_file"\nrate = 2.5\n')
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    monkeypatch.setenv("ASSAY_SHOP_NAME", "from_env")
    shop = Settings.from_env().section("shop", ShopSettings)
    assert (shop.name, shop.rate) == ("from_env", 2.5)


def test_reading_the_sections_of_assay_ask_imports_no_pydantic_settings():
    code = ("import assay; k = assay.Kernel(); k.start()\n"
            "from assay.kernel.agent.loop import agent_settings; agent_settings(k)\n"
            "from assay.kernel.evidence.settings import evidence_settings; evidence_settings(k.settings)\n"
            "from assay.plugins.models.openai_compatible import OpenAICompatibleModel\n"
            "OpenAICompatibleModel.from_settings(k)\n"
            "from assay.plugins.sql.settings import SqlSettings; k.settings.section('sql', SqlSettings)")
    assert imported_by(code, ["pydantic_settings"]) == []
