"""Settings from the environment, `assay config` masking, structlog JSON tool-call logs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from assay import ConfigError, Settings, hookimpl, tool
from assay.kernel.cli import build_cli
from assay.kernel.log import configure_logging


class WarehouseSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="ASSAY_WAREHOUSE_")
    url: str = "sqlite://"
    password: SecretStr | None = None
    api_key: str = ""
    rows: int = 10


class WarehousePlugin:
    __name__ = "warehouse"

    @hookimpl
    def register_tools(self, settings):
        settings.section("warehouse", WarehouseSettings)


def test_settings_read_assay_environment(monkeypatch):
    monkeypatch.setenv("ASSAY_DISABLE_PLUGINS", "x,y")
    monkeypatch.setenv("ASSAY_STRICT_PLUGINS", "true")
    s = Settings.from_env()
    assert s.disable_plugins == "x,y" and s.strict_plugins is True


def test_plugin_section_reads_its_prefix_and_config_file(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text('[warehouse]\nrows = 7\nurl = "postgresql://file/db"\n')
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    monkeypatch.setenv("ASSAY_WAREHOUSE_URL", "postgresql://env/db")
    section = Settings.from_env().section("warehouse", WarehouseSettings)
    assert section.url == "postgresql://env/db"  # the environment beats the file
    assert section.rows == 7


def test_invalid_setting_is_a_config_error(monkeypatch):
    monkeypatch.setenv("ASSAY_STRICT_PLUGINS", "perhaps")
    with pytest.raises(ConfigError) as caught:
        Settings.from_env()
    assert "strict_plugins" in caught.value.message


def test_assay_config_shows_effective_settings_with_secrets_masked(make_assay_kernel, monkeypatch):
    monkeypatch.setenv("ASSAY_WAREHOUSE_URL", "postgresql://analyst:hunter2@db.example/sales")
    monkeypatch.setenv("ASSAY_WAREHOUSE_PASSWORD", "s3cret")
    monkeypatch.setenv("ASSAY_WAREHOUSE_API_KEY", "sk-live-123")
    kernel = make_assay_kernel(WarehousePlugin())
    result = CliRunner().invoke(build_cli(kernel), ["config"], obj={"kernel": kernel})
    assert result.exit_code == 0
    shown = json.loads(result.output)
    assert shown["warehouse"]["url"] == "postgresql://analyst:***@db.example/sales"
    assert shown["warehouse"]["password"] == "***" and shown["warehouse"]["api_key"] == "***"
    assert shown["kernel"]["strict_plugins"] is False
    for secret in ("hunter2", "s3cret", "sk-live-123"):
        assert secret not in result.output


def test_kernel_table_is_read_and_the_environment_beats_it(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text('[kernel]\nlog_level = "ERROR"\ndisable_plugins = "from_file"\n')
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    monkeypatch.setenv("ASSAY_DISABLE_PLUGINS", "from_env")
    s = Settings.from_env()
    assert s.log_level == "ERROR" and s.disable_plugins == "from_env"
    assert Settings.from_env(log_level="DEBUG").log_level == "DEBUG"  # keywords beat both


def test_a_missing_or_broken_config_file_is_a_config_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "nope.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        Settings.from_env()
    broken = tmp_path / "broken.toml"
    broken.write_text("[kernel\n")
    monkeypatch.setenv("ASSAY_CONFIG", str(broken))
    with pytest.raises(ConfigError, match="not valid TOML"):
        Settings.from_env()


def test_assay_config_shows_the_sandbox_section_from_file_and_environment(
    make_assay_kernel, monkeypatch, tmp_path
):
    config = tmp_path / "assay.toml"
    config.write_text("[sandbox]\ntimeout = 12\nmax_processes = 5\n")
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    monkeypatch.setenv("SANDBOX_MAX_PROCESSES", "7")
    kernel = make_assay_kernel()
    result = CliRunner().invoke(build_cli(kernel), ["config"], obj={"kernel": kernel})
    assert result.exit_code == 0, result.output
    sandbox = json.loads(result.output)["sandbox"]
    assert sandbox["timeout"] == 12.0  # from the [sandbox] table
    assert sandbox["max_processes"] == 7  # SANDBOX_MAX_PROCESSES beats the table
    assert sandbox["memory_limit"] == 256 * 1024**2  # the default


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


class AddPlugin:
    __name__ = "adder"

    @hookimpl
    def register_tools(self, register):
        register(add)


def test_tool_calls_are_logged_as_json_with_tool_plugin_duration_outcome(make_assay_kernel, capsys):
    configure_logging("INFO", "json")  # what the assay command does with ASSAY_LOG_LEVEL / _FORMAT
    kernel = make_assay_kernel(AddPlugin())
    kernel.call_tool("add", {"a": 1, "b": 2})
    kernel.call_tool("add", {"a": "x"})
    err = capsys.readouterr().err
    events = [json.loads(line) for line in err.splitlines() if '"tool_call"' in line]
    assert [e["outcome"] for e in events] == ["ok", "TOOL_ARGUMENTS_INVALID"]
    for event in events:
        assert event["tool"] == "add" and event["plugin"] == "adder" and event["level"] == "info"
        assert isinstance(event["duration_ms"], float)
    assert capsys.readouterr().out == ""  # logs never pollute stdout


def test_tool_call_logs_are_filtered_below_the_level(make_assay_kernel, capsys):
    configure_logging("WARNING", "json")
    kernel = make_assay_kernel(AddPlugin())
    kernel.call_tool("add", {"a": 1, "b": 2})
    assert "tool_call" not in capsys.readouterr().err


def test_console_format_is_readable_not_json(make_assay_kernel, capsys):
    configure_logging("INFO", "console")
    kernel = make_assay_kernel(AddPlugin())
    kernel.call_tool("add", {"a": 1, "b": 2})
    line = [ln for ln in capsys.readouterr().err.splitlines() if "tool_call" in ln][0]
    assert not line.startswith("{") and "tool=add" in line


def test_a_started_kernel_leaves_a_hosts_structlog_configuration_alone(make_assay_kernel):
    import structlog

    marker = structlog.processors.KeyValueRenderer()
    structlog.configure(processors=[marker])
    try:
        kernel = make_assay_kernel(AddPlugin(), log_level="INFO", log_format="json")
        kernel.call_tool("add", {"a": 1, "b": 2})
        kernel.call_tool("add", {"a": "x"})
        assert structlog.get_config()["processors"] == [marker]
    finally:
        structlog.reset_defaults()


def test_kernel_events_reach_the_hosts_stdlib_logging_handlers(make_assay_kernel, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="assay")
    kernel = make_assay_kernel(AddPlugin())
    kernel.call_tool("add", {"a": "x"})
    [record] = [r for r in caplog.records if r.getMessage() == "tool_call"]
    assert record.name == "assay.kernel" and record.levelno == logging.INFO
    assert record.assay["tool"] == "add" and record.assay["outcome"] == "TOOL_ARGUMENTS_INVALID"


def test_the_kernel_prints_nothing_of_its_own_without_the_cli(make_assay_kernel, capsys):
    import logging

    kernel = make_assay_kernel(AddPlugin(), log_level="INFO", log_format="json")
    kernel.call_tool("add", {"a": 1, "b": 2})
    assert "tool_call" not in capsys.readouterr().err
    assert not [h for h in logging.getLogger("assay").handlers if getattr(h, "_assay_own", False)]
