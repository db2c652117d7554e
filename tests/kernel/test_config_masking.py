"""`assay config`: secrets masked by their declaration, numbers shown whatever their name, every
plugin's section present (the report writer's too)."""

from __future__ import annotations

import json

from pydantic import BaseModel, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from assay import hookimpl
from tests.conftest import run_assay


def config(env: dict[str, str] | None = None) -> dict:
    result = run_assay("config", env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_token_counts_and_limits_are_shown_not_masked():
    shown = config(
        {
            "ASSAY_AGENT_TOKEN_BUDGET": "12000",
            "ASSAY_OPENAI_MAX_TOKENS": "512",
            "ASSAY_OPENAI_API_KEY": "sk-live-secret-9",
        }
    )
    assert shown["agent"]["token_budget"] == 12000 and shown["agent"]["chars_per_token"] == 4.0
    assert isinstance(shown["agent"]["prompt_tokens"], int)
    assert shown["openai"]["max_tokens"] == 512 and shown["openai"]["api_key"] == "***"


def test_the_report_writers_settings_are_shown():
    shown = config({"ASSAY_REPORT_MAX_STEPS": "7"})
    assert shown["report"]["max_steps"] == 7 and shown["report"]["timeout_s"] == 300.0


def test_a_datasource_password_inside_a_nested_setting_is_masked():
    output = run_assay(
        "config", env={"ASSAY_SQL_DATABASES": "shop=postgresql://analyst:hunter2@db.invalid/shop"}
    )
    assert output.exit_code == 0 and "hunter2" not in output.stdout
    assert (
        json.loads(output.stdout)["sql"]["databases"]["shop"]["url"]
        == "postgresql://analyst:***@db.invalid/shop"
    )


class _Vault(BaseModel):
    passphrase: SecretStr
    region: str = "eu"


class _VaultSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_VAULT_")
    vaults: dict[str, _Vault] = {}
    max_tokens: int = 3


class _VaultPlugin:
    __name__ = "vault"

    @hookimpl
    def register_tools(self, settings):
        settings.section("vault", _VaultSettings)


def test_a_declared_secret_is_masked_at_any_depth(make_assay_kernel, monkeypatch):
    monkeypatch.setenv("ASSAY_VAULT_VAULTS", '{"main": {"passphrase": "open sesame"}}')
    kernel = make_assay_kernel(_VaultPlugin())
    kernel.start()
    shown = kernel.settings.masked()["vault"]
    assert shown == {"vaults": {"main": {"passphrase": "***", "region": "eu"}}, "max_tokens": 3}
