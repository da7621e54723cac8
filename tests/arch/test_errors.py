"""Bad configs: each gives one UserError naming the file, line, field path and what was expected."""

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.arch import load_architecture
from costmodel.errors import UserError

GOOD = """\
name: t
clock: 1 GHz
technology: {node_nm: 45}
mac: {datatype: int8, count: 4}
levels:
  - name: DRAM
    kind: dram
    holds: [I, W, O]
    word_bits: 8
  - name: buf
    kind: sram
    holds: [I, W, O]
    capacity: 4 KiB
    word_bits: 8
    read_bw: 4
    fanout: {x: 2, y: 2}
  - name: rf
    kind: regfile
    holds: [I, O]
    capacity: 16
    word_bits: 8
constraints:
  - level: rf
    keep: [I]
"""
# Line numbers of GOOD (1-based): 13 capacity of buf, 15 read_bw, 16 fanout, 19 holds of rf, 4 mac.


def _load(tmp_path: Path, text: str):
    p = tmp_path / "x.yaml"
    p.write_text(text)
    return load_architecture(p), p


def _error(tmp_path: Path, old: str, new: str, count: int = 1) -> tuple[str, Path]:
    assert GOOD.count(old) >= 1, old
    with pytest.raises(UserError) as exc:
        _load(tmp_path, GOOD.replace(old, new, count))
    msg = str(exc.value)
    assert "\n" not in msg
    return msg, tmp_path / "x.yaml"


def test_good_config_loads(tmp_path):
    arch, _ = _load(tmp_path, GOOD)
    assert arch.num_pes == 4 and arch.level("buf").capacity_words == 4096


CASES = [
    # (old, new, line, field path, expected text)
    (
        "    capacity: 4 KiB",
        "    capacity: -3",
        13,
        "levels[1].capacity",
        "expected a positive size like '64 KiB', '2 MB' or a word count, got -3",
    ),
    (
        "    capacity: 4 KiB",
        "    capcity: 4 KiB",
        13,
        "levels[1].capcity",
        "unknown field 'capcity'; did you mean 'capacity'?",
    ),
    ("    capacity: 4 KiB\n", "", 10, "levels[1].capacity", "required for a sram level"),
    ("    holds: [I, O]", "    holds: []", 19, "levels[2].holds", "expected at least one tensor role"),
    ("    read_bw: 4", "    read_bw: 0", 15, "levels[1].read_bw", "expected a number > 0, got 0"),
    ("    holds: [I, O]", "    holds: [I, X]", 19, "levels[2].holds[1]", "expected 'I', 'W' or 'O', got 'X'"),
    (
        "    word_bits: 8\n    read_bw",
        "    word_bits: eight\n    read_bw",
        14,
        "levels[1].word_bits",
        "expected an integer, got 'eight'",
    ),
    ("count: 4", "count: 6", 4, "mac.count", "expected the product of all fan-outs (2x2 = 4), got 6"),
    ("name: t\n", "", 1, "name", "required field is missing"),
    (
        "    kind: dram",
        "    kind: sram\n    capacity: 1 MiB",
        7,
        "levels[0].kind",
        "expected the outermost level (levels[0]) to be kind 'dram'",
    ),
    ("    kind: regfile", "    kind: dram", 18, "levels[2].kind", "DRAM must be the outermost level"),
    (
        "  - level: rf",
        "  - level: rff",
        23,
        "constraints[0].level",
        "expected a level name (DRAM, buf, rf), got 'rff'",
    ),
    (
        "    keep: [I]",
        "    keep: [W]",
        24,
        "constraints[0].keep",
        "expected tensors that level 'rf' holds (I, O), got 'W'",
    ),
    ("clock: 1 GHz", "clock: fast", 2, "clock", "expected a positive frequency"),
    (
        "fanout: {x: 2, y: 2}",
        "fanout: {x: 2, y: -1}",
        16,
        "levels[1].fanout.y",
        "expected a number > 0, got -1",
    ),
    ("  - name: rf", "  - name: buf", 17, "levels[2].name", "duplicate level name 'buf'"),
    ("  - name: rf", "  - name: total", 17, "levels[2].name", "expected a level name other than"),
    ("{datatype: int8, count: 4}", "{datatype: int4, count: 4}", 4, "mac.datatype", "got 'int4'"),
    (
        "technology: {node_nm: 45}",
        "technology: {node_nm: 45, dram: DDR9}",
        3,
        "technology.dram",
        "got 'DDR9'",
    ),
    # not finite, or past what the int64 counts hold: YAML reads .inf / .nan / 1e400 as floats
    ("clock: 1 GHz", "clock: .inf", 2, "clock", "expected a positive frequency"),
    ("    read_bw: 4", "    read_bw: .nan", 15, "levels[1].read_bw", "expected a finite number, got nan"),
    ("    read_bw: 4", "    read_bw: 4\n    read_pj: .inf", 16, "levels[1].read_pj", "expected a finite number"),
    # finite, but products of them overflowed to inf (an energy of Infinity: invalid JSON)
    ("    read_bw: 4", "    read_bw: 4\n    read_pj: 1.0e+308", 16, "levels[1].read_pj",
     "expected a number <= 1e+12, got 1e+308"),
    ("clock: 1 GHz", "clock: 1.0e-300", 2, "clock", "from 1 Hz up to 1 PHz, got 1e-300"),
    ("    capacity: 4 KiB", "    capacity: .nan", 13, "levels[1].capacity", "expected a positive size"),
    ("    capacity: 4 KiB", "    capacity: 1e400 KiB", 13, "levels[1].capacity", "got '1e400 KiB'"),
    ("    capacity: 4 KiB", "    capacity: 1" + "0" * 400, 13, "levels[1].capacity", "(401 characters)"),
    ("    capacity: 4 KiB", "    capacity: 1e17", 13, "levels[1].capacity", "of at most 2**53 words, got 1e+17"),  # (a float: YAML 1.2)
    (
        "    word_bits: 8\n    read_bw",
        "    word_bits: 1" + "0" * 400 + "\n    read_bw",
        14,
        "levels[1].word_bits",
        "expected a number <= 1000000000, got 1" + "0" * 29 + "... (401 characters)",
    ),
    # YAML forbids a repeated key; PyYAML would keep the last one silently
    ("    read_bw: 4", "    read_bw: 4\n    read_bw: 8", 16, "levels[1].read_bw", "duplicate key (first given on line 15)"),
    # YAML's true is no number (pydantic would take it as 1) and 'off' no boolean
    ("    read_bw: 4", "    read_bw: true", 15, "levels[1].read_bw", "expected a number, got True"),
    ("count: 4", "count: true", 4, "mac.count", "expected an integer, got True"),
    ("fanout: {x: 2, y: 2}", "fanout: {x: true, y: 2}", 16, "levels[1].fanout.x", "expected an integer, got True"),
    # nor a quoted number a number, nor 4.0 an integer (pydantic would take both; layer and
    # mapping files refuse them too)
    ("    read_bw: 4", '    read_bw: "4"', 15, "levels[1].read_bw", "expected a number, got '4'"),
    ("count: 4", "count: 4.0", 4, "mac.count", "expected an integer, got 4.0"),
    ("fanout: {x: 2, y: 2}", 'fanout: {x: "2", y: 2}', 16, "levels[1].fanout.x", "expected an integer, got '2'"),
    ("technology: {node_nm: 45}", 'technology: {node_nm: "45"}', 3, "technology.node_nm", "expected a number, got '45'"),
    ("    read_bw: 4", "    read_bw: 4\n    multicast: 'off'", 16, "levels[1].multicast", "expected true or false, got 'off'"),
    ("    read_bw: 4", "    read_bw: 4\n    double_buffered: 1", 16, "levels[1].double_buffered", "expected true or false"),
    ("  - name: rf", "  - name: '  '", 17, "levels[2].name", "expected a non-empty name, got '  '"),
    ("name: t\n", "name: ''\n", 1, "name", "expected a non-empty name, got ''"),
    # constraints name known dims, each once (checked here, not first when a layer is mapped)
    ("    keep: [I]", "    keep: [I]\n    temporal: {Kx: 1}", 25, "constraints[0].temporal.Kx", "got 'Kx'"),
    ("    keep: [I]", "    keep: [I]\n    spatial_x: [K, Z]", 25, "constraints[0].spatial_x[1]", "got 'Z'"),
    ("    keep: [I]", "    keep: [I]\n    spatial_y: {C: 2, Zq: 3}", 25, "constraints[0].spatial_y.Zq", "got 'Zq'"),
    ("    keep: [I]", "    keep: [I]\n    spatial_y: {C: 0}", 25, "constraints[0].spatial_y.C", "expected a number > 0, got 0"),
    ("    keep: [I]", "    keep: [I]\n    order: [K, C, K]", 25, "constraints[0].order", "expected distinct dims, got ['K', 'C', 'K'] (K twice)"),
    # a supply outside the energy fit's range (at 180 nm the fit is negative below 0.73 V)
    ("technology: {node_nm: 45}", "technology: {node_nm: 180, vdd: 0.6}", 3, "technology.vdd",
     "expected a supply the energy model covers at 180 nm, 0.90-2.70 V, got 0.6"),
    ("technology: {node_nm: 45}", "technology: {node_nm: 45, vdd: 0.05}", 3, "technology.vdd", "0.45-1.35 V, got 0.05"),
    ("technology: {node_nm: 45}", "technology: {node_nm: 45, vdd: 3}", 3, "technology.vdd", "0.45-1.35 V, got 3"),
    ("technology: {node_nm: 45}", "technology: {node_nm: 45, vdd: true}", 3, "technology.vdd", "expected a number, got True"),
    # YAML beyond plain data: an unknown tag, an alias inside itself
    ("clock: 1 GHz", "clock: !freq 1 GHz", 2, "clock", "unsupported YAML value or tag '!freq'"),
    ("technology: {node_nm: 45}", "technology: {node_nm: 45}\ndescription: &d [*d]", 4, "description[0]",
     "an alias refers to a mapping or list that contains it"),
]


@pytest.mark.parametrize(
    ("old", "new", "line", "path", "text"), CASES, ids=[c[3] + ":" + c[4][:20] for c in CASES]
)
def test_bad_config_message(tmp_path, old, new, line, path, text):
    msg, p = _error(tmp_path, old, new)
    assert msg.startswith(f"{p}:{line}: {path}: "), msg
    assert text in msg, msg


@pytest.mark.parametrize(("node", "vdd"), [(7, 1.05), (7, 0.35), (90, 1.8), (180, 0.9), (45, 0.9)])
def test_supply_range_ends_are_allowed(tmp_path, node, vdd):
    """The ends of the range the message and docs/technology.md print (10 mV steps) load."""
    p = tmp_path / "x.yaml"
    p.write_text(GOOD.replace("technology: {node_nm: 45}", f"technology: {{node_nm: {node}, vdd: {vdd}}}"))
    assert load_architecture(p).technology.vdd == vdd


def test_yaml_syntax_error_names_line(tmp_path):
    msg, p = _error(tmp_path, "    holds: [I, O]", "    holds: [I, O")
    assert msg.startswith(f"{p}:") and "YAML syntax error" in msg


def test_not_utf8_names_the_line(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_bytes(GOOD.replace("name: rf", "name: rf  # r\u00e9gistres").encode("latin-1"))
    with pytest.raises(UserError) as exc:
        load_architecture(p)
    assert str(exc.value) == f"{p}:17: expected UTF-8 text, got byte 0xe9"


def test_not_a_mapping(tmp_path):
    p = tmp_path / "x.yaml"
    p.write_text("- 1\n- 2\n")
    with pytest.raises(UserError, match="expected a mapping of config fields"):
        load_architecture(p)


def test_unknown_name_lists_shipped():
    with pytest.raises(UserError, match="no such hardware config .*tpu_like"):
        load_architecture("no_such_config")


def test_cli_check_exit_2_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("    read_bw: 4", "    read_bw: 0"))
    dse = [sys.executable, "-c", "from dse.cli import main; main()"]
    r = subprocess.run(
        [*dse, "schema", "hw", "--check", str(bad)], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == f"error: {bad}:15: levels[1].read_bw: expected a number > 0, got 0"
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    r = subprocess.run(
        [*dse, "schema", "hw", "--check", str(good)], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0 and r.stdout.startswith("OK ")
    r = subprocess.run(  # two things asked at once: say so (--markdown was ignored)
        [*dse, "schema", "hw", "--markdown", "--check", str(good)], capture_output=True, text=True, timeout=60,
        check=False)
    assert r.returncode == 2 and "give one of them" in r.stderr and r.stdout == ""


def test_union_field_error_points_at_the_field(tmp_path):
    # spatial_x accepts a list or a mapping; pydantic's union tags must not leak into the path.
    msg, p = _error(tmp_path, "    keep: [I]", "    spatial_x: 5")
    assert msg.startswith(f"{p}:24: constraints[0].spatial_x: "), msg


LEVEL_KEYS = ["name", "kind", "holds", "capacity", "word_bits", "read_bw", "fanout"]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(LEVEL_KEYS), st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=3))
def test_any_misspelt_level_key_is_reported_on_its_line(tmp_path_factory, key, junk):
    # Rename one key of levels[1] (lines 10-16 of GOOD) to a typo; the error names that exact line.
    lines = GOOD.splitlines(keepends=True)
    idx = next(i for i in range(9, 16) if lines[i].strip().removeprefix("- ").startswith(key + ":"))
    bad = key + junk
    lines[idx] = lines[idx].replace(key + ":", bad + ":", 1)
    p = tmp_path_factory.mktemp("typo") / "x.yaml"
    p.write_text("".join(lines))
    with pytest.raises(UserError) as exc:
        load_architecture(p)
    msg = str(exc.value)
    assert msg.startswith(f"{p}:{idx + 1}: levels[1]."), msg
