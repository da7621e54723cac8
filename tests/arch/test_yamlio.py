"""Units and line maps of the YAML helpers."""

import pytest

from costmodel.yamlio import format_path, load_yaml, parse_frequency, parse_size


@pytest.mark.parametrize(
    ("value", "bits", "words"),
    [
        (64, 8, 64),  # bare number = words
        ("64 KiB", 8, 65536),  # 64 x 1024 bytes of 8-bit words
        ("64 KiB", 32, 16384),  # 65536 bytes / 4 bytes per word
        ("2 MB", 8, 2 * 1024 * 1024),  # MB is binary (JEDEC), as SRAM sizes are quoted
        ("1.5 KiB", 16, 768),  # 1536 bytes / 2
        ("3 KB", 24, 1024),  # Simba's accumulation buffer: 3072 bytes of 24-bit words
        ("128 words", 8, 128),
    ],
)
def test_parse_size(value, bits, words):
    assert parse_size(value, bits) == words


@pytest.mark.parametrize("value", [-3, 0, "abc", "10 KiB", "1 furlong", True, [1]])
def test_parse_size_rejects(value):
    with pytest.raises((TypeError, ValueError), match="expected a positive size"):
        parse_size(value if value != "10 KiB" else "10 B", 24 if value == "10 KiB" else 8)


def test_parse_frequency():
    assert (
        parse_frequency("1 GHz") == 1e9 and parse_frequency("200 MHz") == 2e8 and parse_frequency(5e8) == 5e8
    )
    with pytest.raises(ValueError):
        parse_frequency("-1 GHz")
    with pytest.raises(TypeError):
        parse_frequency([1])


def test_line_map(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text("# comment\nname: a\nlevels:\n  - name: x\n    size: 3\n  - {name: y, size: 4}\n")
    data, lines = load_yaml(p)
    assert data["levels"][1] == {"name": "y", "size": 4}
    assert lines.line(("name",)) == 2 and lines.line(("levels", 0, "size")) == 5
    assert lines.line(("levels", 1, "size")) == 6
    assert lines.line(("levels", 1, "missing")) == 6  # falls back to the parent
    assert format_path(("levels", 1, "size")) == "levels[1].size"


def test_docs_field_reference_is_current():
    # docs/hwconfig.md embeds `dse schema hw --markdown`; regenerate it when the models change.
    from pathlib import Path

    from costmodel.arch import HwConfig
    from dse.cli.schema_cmd import schema_markdown

    doc = (Path(__file__).resolve().parents[2] / "docs" / "hwconfig.md").read_text()
    assert schema_markdown(HwConfig.model_json_schema()) in doc


def test_every_schema_field_is_described():
    # The JSON Schema is the format's spec (dse schema hw): no field may lack a description.
    from costmodel.arch import HwConfig

    schema = HwConfig.model_json_schema()
    models = [schema, *schema["$defs"].values()]
    missing = [
        (m.get("title"), f)
        for m in models
        for f, p in m.get("properties", {}).items()
        if not p.get("description")
    ]
    assert missing == []
    assert all(m.get("description") for m in models)
