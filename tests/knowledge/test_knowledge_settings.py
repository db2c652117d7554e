"""``ASSAY_KNOWLEDGE`` and ``[knowledge.bases.NAME]`` name the bases; anything unclear is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay import ConfigError, Settings
from assay.plugins.knowledge.settings import KnowledgeSettings, parse_bases


def section(monkeypatch, value: str) -> KnowledgeSettings:
    monkeypatch.setenv("ASSAY_KNOWLEDGE", value)
    return Settings.from_env().section("knowledge", KnowledgeSettings)


def test_name_equals_path_pairs_and_lists(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    got = section(monkeypatch, "glossary=./docs/metrics; policies=./a.pdf,./b.md")
    assert got.bases["glossary"].paths == [str(tmp_path / "docs" / "metrics")]
    assert got.bases["policies"].paths == [str(tmp_path / "a.pdf"), str(tmp_path / "b.md")]


def test_a_json_object_and_a_bare_path(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert list(section(monkeypatch, '{"kb": ["./x", "./y.md"]}').bases["kb"].paths) == [
        str(tmp_path / "x"),
        str(tmp_path / "y.md"),
    ]
    assert list(section(monkeypatch, "./docs/Metrics Book/").bases) == ["metrics_book"]


@pytest.mark.parametrize(
    "value", ["bad name=./x", "kb=", "kb=./a; kb=./b", '{"kb": 3}', "{not json"]
)
def test_an_unclear_value_is_a_config_error(monkeypatch, value):
    with pytest.raises(ConfigError) as info:
        section(monkeypatch, value)
    assert "ASSAY_KNOWLEDGE" in info.value.message or "knowledge" in info.value.message


def test_the_config_file_gives_a_table_per_base(monkeypatch, tmp_path):
    config = tmp_path / "assay.toml"
    config.write_text(
        '[knowledge]\nmax_k = 7\n[knowledge.bases.glossary]\npaths = ["/srv/docs"]\n'
        'description = "Metric definitions"\n'
    )
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    got = Settings.from_env().section("knowledge", KnowledgeSettings)
    assert got.max_k == 7 and got.bases["glossary"].description == "Metric definitions"
    assert got.bases["glossary"].paths == [str(Path("/srv/docs"))]


def test_parse_bases_of_nothing_is_no_base():
    assert parse_bases("  ") == {}
