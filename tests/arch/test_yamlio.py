"""Units and line maps of the YAML helpers."""

import pytest
import yaml

from costmodel.errors import UserError
from costmodel.yamlio import (
    MAX_ALIAS_NODES,
    MAX_DEPTH,
    format_path,
    load_data,
    load_yaml,
    parse_frequency,
    parse_size,
)


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


MERGES = """\
base: &b {kind: sram, word_bits: 8, ports: 2}
more: &m {word_bits: 16, read_bw: 4}
levels:
  - <<: *b
    name: own
    word_bits: 32
  - <<: [*m, *b]
    name: merged
"""


def test_merge_keys_follow_yaml(tmp_path):
    """Own keys win over merged ones, earlier merged mappings over later ones (the YAML 1.1 merge
    key's spec; PyYAML 6.0's own loader lets the later one win when the two key strings are
    distinct objects); lines point into the anchored mapping."""
    p = tmp_path / "m.yaml"
    p.write_text(MERGES)
    data, lines = load_yaml(p)
    assert data["levels"][0] == {"name": "own", "word_bits": 32, "kind": "sram", "ports": 2}
    assert data["levels"][1]["word_bits"] == 16 and data["levels"][1]["ports"] == 2
    assert lines.line(("levels", 0, "word_bits")) == 6 and lines.line(("levels", 0, "kind")) == 1
    assert lines.line(("levels", 1, "read_bw")) == 2 and lines.line(("levels", 1, "name")) == 8
    assert lines.line(("levels", 0)) == 4


@pytest.mark.parametrize(("text", "line", "message"), [
    ("a: &x {b: 1}\nc:\n  <<: 5\n", 3, "c: a merge key '<<' takes a mapping or a list of mappings"),
    ("a: !!python/object:os.system {}\n", 1, "a: unsupported YAML tag"),
    ("a: !!python/name:os.system\n", 1, "a: unsupported YAML value or tag"),
    ("a: &x {b: *x}\n", 1, "a.b: an alias refers to a mapping or list that contains it"),
    ("? [1, 2]\n: 3\n", 1, "(top level): expected a plain key"),
    ("a: 1\n1: x\n1.0: y\n", 3, "1.0: duplicate key (first given on line 2)"),  # 1 and 1.0 are one key
    ("word_bits: !!int eight\n", 1, "word_bits: 'eight' is not a valid int"),
    ("t: !!timestamp foo\n", 1, "t: 'foo' is not a valid timestamp"),
    ("a: !!int\n", 1, "a: '' is not a valid int"),
    ("b1: &b1 {x: 1}\nb2: &b2 {x: 2}\nc:\n  <<: *b1\n  <<: *b2\n", 5, "c: duplicate key '<<' (first given on line 4)"),
])
def test_yaml_beyond_plain_data_is_one_line(tmp_path, text, line, message):
    p = tmp_path / "m.yaml"
    p.write_text(text)
    with pytest.raises(UserError) as err:
        load_yaml(p)
    assert str(err.value).startswith(f"{p}:{line}: {message}"), str(err.value)
    assert "\n" not in str(err.value)


def test_nested_aliases_are_refused_before_they_expand(tmp_path):
    """A "billion laughs" file (10 levels of 10 aliases: 10**10 nodes) stops at the limit, at once."""
    rows = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    p = tmp_path / "lol.yaml"
    p.write_text("\n".join(rows) + "\n")
    with pytest.raises(UserError, match=f"aliases expand to more than {MAX_ALIAS_NODES:,} nodes"):
        load_yaml(p)
    ok = tmp_path / "ok.yaml"  # the same aliases three levels deep: 1,110 nodes, read as YAML says
    ok.write_text("\n".join(rows[:3]) + "\n")
    assert load_yaml(ok)[0] == yaml.safe_load(ok.read_text())


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("depth", [MAX_DEPTH, MAX_DEPTH + 1, 600, 999])
def test_deep_nesting_is_one_line_not_a_recursion_error(tmp_path, suffix, depth):
    """Lists nested 600 deep ran out of Python's recursion limit in the converter (YAML) and at
    1,000 in json.loads, with a traceback; up to MAX_DEPTH they load as they are."""
    p = tmp_path / f"deep{suffix}"
    p.write_text("[" * depth + "]" * depth + "\n")
    if depth <= MAX_DEPTH:
        data, _ = load_data(p)
        for _ in range(depth - 1):
            assert isinstance(data, list) and len(data) == 1
            data = data[0]
        assert data == []
        return
    with pytest.raises(UserError) as err:
        load_data(p)
    line = ":1" if suffix == ".yaml" else ""
    assert str(err.value) == f"{p}{line}: nested more than {MAX_DEPTH} levels deep"


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_a_byte_order_mark_is_read_past(tmp_path, suffix):
    p = tmp_path / f"bom{suffix}"
    p.write_bytes(b"\xef\xbb\xbf" + b'{"levels": [{"temporal": {"P": 4}}]}\n')
    assert load_data(p)[0] == {"levels": [{"temporal": {"P": 4}}]}
    p.write_bytes(b"\xef\xbb\xbfa: 1\n\nc: \xff\n")  # (a bad byte after it: its own line and value)
    with pytest.raises(UserError, match=r":3: expected UTF-8 text, got byte 0xff$"):
        load_data(p)


def test_exponent_numbers_without_a_dot_are_floats(tmp_path):
    """YAML 1.2 reads an unquoted 1e-3 as a number; PyYAML's 1.1 rules wanted 1.0e-3 and gave the
    string '1e-3', which a config then refused ("expected a number, got '1e-3'"). Quoted stays text."""
    p = tmp_path / "e.yaml"
    p.write_text("a: 1e-3\nb: 2E4\nc: -.5e+2\nd: '1e-3'\ne: 1e\nf: e5\n")
    assert load_yaml(p)[0] == {"a": 0.001, "b": 20000.0, "c": -50.0, "d": "1e-3", "e": "1e", "f": "e5"}


def test_numbers_that_yaml_1_1_and_1_2_read_differently(tmp_path, monkeypatch):
    """A leading zero (octal in YAML 1.1: ``capacity: 010`` loaded as 8 words) and base 60 (``1:30``
    as 90) are refused at their line; YAML 1.2's ``0o`` octal is read; hex, underscores and
    quoted text are as before."""
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "n.yaml"
    p.write_text("a: 0x40\nb: 1_000\nc: 0o20\nd: -0o7\ne: '010'\nf: 0\ng: 10\nh: 1.05\ni: 0.5\n")
    assert load_yaml(p)[0] == {"a": 64, "b": 1000, "c": 16, "d": -7, "e": "010", "f": 0, "g": 10, "h": 1.05,
                               "i": 0.5}
    for text, line, message in [
        ("a: 1\nm: 064\n", 2, r"m: 064: a number with a leading zero \(YAML 1\.1 reads octal 52\); write 64,"),
        ("x:\n  - 08\n", 2, r"x\[0\]: 08: a number with a leading zero; write 8, or quote it if it is text"),
        ("k: 1:00\n", 1, r"k: 1:00: YAML 1\.1 reads this as a base-60 number \(60\); write the number"),
        ("k: 1:30.5\n", 1, r"k: 1:30.5: YAML 1\.1 reads this as a base-60 number \(90\.5\)"),
    ]:
        p.write_text(text)
        with pytest.raises(UserError, match=rf"^n\.yaml:{line}: {message}"):
            load_yaml(p)


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f", "\ufffe"])
def test_a_character_yaml_does_not_allow_is_a_user_error_at_its_line(tmp_path, monkeypatch, char):
    """PyYAML's ReaderError is not a MarkedYAMLError: it escaped as a traceback (exit 1). libyaml
    reports its position in bytes, so text before it that is not ASCII must not move the line."""
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "c.yaml"
    p.write_text(f"name: \u00e9\u00e9\u00e9\u00e9\nk: 3\ncomment: a{char}b\n")
    with pytest.raises(UserError, match=rf"^c\.yaml:3: YAML syntax error: character #x{ord(char):04x} is not allowed"):
        load_yaml(p)


def test_json_duplicate_keys_are_refused(tmp_path):
    p = tmp_path / "m.json"
    p.write_text('{"levels": [{"temporal": {"P": 4}, "temporal": {"P": 2}}]}')
    with pytest.raises(UserError, match=r"m.json: duplicate key 'temporal' in a JSON object"):
        load_data(p)
    p.write_text('{"levels": [{"temporal": {"P": 4}}]}')
    assert load_data(p)[0] == {"levels": [{"temporal": {"P": 4}}]}


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
