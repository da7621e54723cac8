"""Study files: knob paths, expressions and every documented mistake -> UserError with file:line."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.arch import architecture_from_dict
from costmodel.errors import UserError
from dse.study.expr import ExprError, parse, parse_comparison
from dse.study.knobs import apply_knobs, knob_values
from dse.study.schema import load_study
from tests.study.helpers import small_study

GOOD = """\
name: t
hardware: tiny
workloads:
  - name: net
    layers: [{kind: matmul, m: 8, k: 8, n: 8}]
knobs:
  rows: {path: levels.buffer.fanout.y, choices: [2, 4]}
  glb: {path: "levels[1].capacity", low: 256, high: 4096, log: true}
  pes: {path: mac.count, expr: rows * 2}
objectives:
  - {metric: energy_pj}
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "s.yaml"
    p.write_text(textwrap.dedent(text))
    return p


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(UserError) as exc:
        load_study(_write(tmp_path, text))
    return str(exc.value)


def test_good_study_loads(tmp_path: Path) -> None:
    s = load_study(_write(tmp_path, GOOD))
    assert [k.name for k in s.knobs] == ["rows", "glb", "pes"]
    assert s.knobs[1].path == ("levels", 1, "capacity") and s.knobs[1].is_int and s.knobs[1].log
    assert s.knobs[0].path == ("levels", 1, "fanout", "y")


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        ("levels.buffer.fanout.y", "levels.buffer.fanout.z",
         "s.yaml:7: knobs.rows.path: levels.buffer.fanout.z: unknown field 'z'"),
        ("levels.buffer.fanout.y", "levels.glb.fanout.y",
         "s.yaml:7: knobs.rows.path: levels.glb.fanout.y: no item named 'glb'"),
        ("levels.buffer.fanout.y", "levels.buffer.fanout", "is a group of fields"),
        # an empty name had been skipped: levels..capacity read as levels.capacity ("no item named 'capacity'")
        ("levels.buffer.fanout.y", "levels..fanout.y", ("s.yaml:7: knobs.rows.path: cannot parse field path "
                                                        "'levels..fanout.y': an empty name between dots")),
        # reported at the second use, which is the one to change (it had pointed at the first)
        ("    layers: [{kind: matmul, m: 8, k: 8, n: 8}]",
         "    layers: [{kind: matmul, m: 8, k: 8, n: 8}]\n  - name: net\n    layers: [{kind: matmul, m: 8, k: 8, n: 8}]",
         "s.yaml:6: workloads[1].name: workload name 'net' is used twice (first at workloads[0])"),
        ("low: 256, high: 4096", "low: 4096, high: 256",
         "s.yaml:8: knobs.glb.low: low (4096) is greater than high (256)"),
        # names that become a folder, metric names or expression names ("" wrote into runs/ itself,
        # "../x" two folders up; a dotted or keyword name could not be read back in a constraint)
        ("name: t", "name: ../x", "s.yaml:1: name: study name '../x' names its output folder runs/NAME"),
        ("name: t", "name: ''", "s.yaml:1: name: study name '' names its output folder runs/NAME"),
        ("  - name: net", "  - name: k.ws", "s.yaml:4: workloads[0].name: workload name 'k.ws' must be an identifier"),
        ("  - name: net", "  - name: ''", "s.yaml:4: workloads[0].name: workload name '' must be an identifier"),
        ("  rows: {", "  lambda: {", "s.yaml:7: knobs.lambda: knob name 'lambda' must be an identifier"),
        ("choices: [2, 4]", "choices: [2, 4, 2]", "s.yaml:7: knobs.rows.choices[2]: 2 is listed twice (first at choices[0])"),
        ("{metric: energy_pj}", "{metric: joules}", "s.yaml:11: objectives[0].metric: 'joules' is not a metric"),
        ("layers: [{kind: matmul, m: 8, k: 8, n: 8}]", "model: no_such_net",
         "s.yaml:5: workloads[0].model: 'no_such_net' is not a zoo model"),
        ("layers: [{kind: matmul, m: 8, k: 8, n: 8}]", "model: missing.onnx",
         "s.yaml:5: workloads[0].model: ONNX file 'missing.onnx' does not exist"),
        ("expr: rows * 2", "expr: __import__('os').getpid()", "s.yaml:9: knobs.pes.expr:"),
        ("expr: rows * 2", "expr: rows * depth", "s.yaml:9: knobs.pes.expr: unknown knob(s) depth"),
        ("hardware: tiny", "hardware: no_such_hw", "s.yaml:2: hardware:"),
        ("choices: [2, 4]}", "choices: [2, 4], low: 1, high: 2}", "s.yaml:7: knobs.rows: expected exactly one of"),
        ("name: t", "name: t\nsampler: {kind: annealing}", "s.yaml:2: sampler.kind:"),
        ("name: t", "nme: t", "s.yaml:1: nme: unknown field 'nme'; did you mean 'name'?"),
        ("choices: [2, 4]", "choises: [2, 4]", ("s.yaml:7: knobs.rows.choises: unknown field 'choises'; did you "
         "mean 'choices'?")),
        ("choices: [2, 4]", "choices: []", "s.yaml:7: knobs.rows.choices: expected at least 1 item, got []"),
        ("objectives:\n  - {metric: energy_pj}", "objectives: []",
         "s.yaml:10: objectives: expected at least 1 item, got []"),
        ("workloads:\n  - name: net\n    layers: [{kind: matmul, m: 8, k: 8, n: 8}]", "workloads: []",
         "s.yaml:3: workloads: expected at least 1 item, got []"),
        ("layers: [{kind: matmul, m: 8, k: 8, n: 8}]", "layers: []",
         "s.yaml:5: workloads[0].layers: expected at least 1 item, got []"),
        ("name: t", "name: t\nmapper: {objective: 'energy:x'}",
         "s.yaml:2: mapper.objective: expected one of ['ed2p', 'edp', 'energy', 'latency'] or a mix like"),
        ("name: t", "name: t\ntrials: true", "s.yaml:2: trials: expected an integer, got True"),
        ("name: t", "name: t\ntrials: '40'", "s.yaml:2: trials: expected an integer, got '40'"),
        ("    layers:", "    fps: .inf\n    layers:", "s.yaml:5: workloads[0].fps: expected a finite number, got inf"),
        # a knob named like a column of the trials table made two columns of that name (tracebacks)
        ("  rows: {path", "  feasible: {path", "s.yaml:7: knobs.feasible: knob name 'feasible' must be an identifier"),
        ("  rows: {path", "  trial: {path", "s.yaml:7: knobs.trial: knob name 'trial' must be an identifier"),
        ("  - {metric: energy_pj}", "  - {metric: energy_pj}\nconstraints: [area_mm2 <= 4, energy_pj < 9, area_mm2 <= 4]",
         "s.yaml:12: constraints[2]: constraint 'area_mm2 <= 4' is given twice (first at constraints[0])"),
        ("glb: {path: \"levels[1].capacity\", low: 256, high: 4096, log: true}",
         "glb: {path: \"levels[1].holds\", choices: [[I, O], [I, W, O]]}",
         ("s.yaml:8: knobs.glb.choices[0]: expected a number, string or boolean, got ['I', 'O'] (several fields "
          "at once: presets)")),
        ("low: 256, high: 4096", "low: 256.5, high: 4096, type: int",
         "s.yaml:8: knobs.glb.low: expected a whole number for an integer range, got 256.5"),
        ("  - {metric: energy_pj}", "  - {metric: energy_pj}\nconstraints: ['area_mm2 <= 4 / 0']",
         "s.yaml:12: constraints[0]: '4 / 0' cannot be evaluated: division by zero"),
        ("expr: rows * 2", "expr: rows * 2 / (1 - 1)", "s.yaml:9: knobs.pes.expr: 'rows * 2 / (1 - 1)' divides by zero"),
        ("  - {metric: energy_pj}", "  - {metric: energy_pj}\nconstraints: ['other.latency_ms <= 4']",
         "s.yaml:12: constraints[0]: unknown name(s) other.latency_ms"),
    ],
)
def test_bad_study_names_file_line_field(tmp_path: Path, old: str, new: str, expect: str) -> None:
    assert old in GOOD
    msg = _error(tmp_path, GOOD.replace(old, new))
    assert expect in msg, msg


FREQ = "expected a positive frequency like '1 GHz' or '200 MHz' (or Hz as a number)"


@pytest.mark.parametrize(
    ("old", "new", "expect"),
    [
        ("path: levels.buffer.fanout.y, choices: [2, 4]", "path: clock, choices: [fast, slow]",
         f"s.yaml:7: knobs.rows.choices[0]: clock: {FREQ}, got 'fast'"),
        ("choices: [2, 4]", "choices: [2, eight]",
         "s.yaml:7: knobs.rows.choices[1]: levels.buffer.fanout.y: expected an integer, got 'eight'"),
        ("choices: [2, 4]", "choices: [8.5]",
         "s.yaml:7: knobs.rows.choices[0]: levels.buffer.fanout.y: expected an integer, got 8.5"),
        ("choices: [2, 4]", "choices: [true]",
         "s.yaml:7: knobs.rows.choices[0]: levels.buffer.fanout.y: expected an integer, got True"),
        ("choices: [2, 4]", "choices: [null]",
         "s.yaml:7: knobs.rows.choices[0]: levels.buffer.fanout.y: expected an integer, got None"),
        ("choices: [2, 4]", "choices: [{a: 1}]",
         "s.yaml:7: knobs.rows.choices[0]: levels.buffer.fanout.y: expected an integer, got {'a': 1}"),
        ("choices: [2, 4]", "low: 1, high: 4, step: 0.5",
         "s.yaml:7: knobs.rows.step: expected a whole step for an integer range, got 0.5"),
        ("choices: [2, 4]", "low: 1, high: 4, step: 5",
         "s.yaml:7: knobs.rows.step: expected a step of at most high - low (3), got 5: the range would hold low alone"),
        ("choices: [2, 4]", "low: 1.5, high: 4",
         "s.yaml:7: knobs.rows.low: levels.buffer.fanout.y: expected an integer, got 1.5"),
        ("choices: [2, 4]", "low: 2.0, high: 4.0", ("s.yaml:7: knobs.rows.low: levels.buffer.fanout.y: expected an "
         "integer, got 2.0 (2 is a value of this float range: for an integer field give integer low and high")),
        ("path: levels.buffer.fanout.y, choices: [2, 4]", "path: technology.dram, choices: [LPDDR4, LPDDR9]",
         ("s.yaml:7: knobs.rows.choices[1]: technology.dram: expected 'LPDDR4', 'LPDDR5', 'HBM2', 'DDR4', 'DDR3' or "
         "'GDDR5', got 'LPDDR9'")),
        ("log: true}", "log: true, format: KiB}",
         "s.yaml:8: knobs.glb.format: expected a format with {} where the value goes, like '{} KiB', got 'KiB'"),
        ("log: true}", "log: true, format: '{} KiX'}", ("s.yaml:8: knobs.glb.low: levels[1].capacity: expected a "
         "positive size like '64 KiB', '2 MB' or a word count (units: B, KiB/KB, MiB/MB, GiB/GB, words), got "
         "'256 KiX'")),
        ("log: true}", "log: true, format: '{x}'}", ("s.yaml:8: knobs.glb.format: expected a format like '{} KiB' "
         "that takes the knob's values, got '{x}' (KeyError: 'x')")),
        ("choices: [2, 4]", "choices: ['2', 4]",
         "s.yaml:7: knobs.rows.choices[0]: levels.buffer.fanout.y: expected an integer, got '2'"),
        ("path: levels.buffer.fanout.y, choices: [2, 4]", "path: technology.dram, choices: [LPDDR4, LPDDR5]",
         "s.yaml:7: knobs.rows.choices[0]: expected a number (knobs.pes.expr reads the knob), got 'LPDDR4'"),
        ("knobs:\n", "knobs:\n  speed: {presets: {fast: {clock: 1 GHz}, slow: {clock: slow}}}\n",
         f"s.yaml:7: knobs.speed.presets.slow: clock: {FREQ}, got 'slow'"),
    ],
)
def test_knob_values_checked_at_load(tmp_path: Path, old: str, new: str, expect: str) -> None:
    """Every value a knob takes is applied to the template and checked as a trial's config is, so a
    value of the wrong type fails at load (naming the knob's line and the config field), not as a
    pruned or failed trial each time it is drawn."""
    assert old in GOOD
    msg = _error(tmp_path, GOOD.replace(old, new, 1))
    assert expect in msg, msg


def test_values_valid_with_other_knobs_load(tmp_path: Path) -> None:
    """Rules across fields are the trials' to check: a sampled MAC count that matches only some
    fan-outs loads (those designs are pruned), and a bool field takes true/false."""
    text = GOOD.replace("expr: rows * 2", "choices: [4, 8]").replace(
        "knobs:\n", "knobs:\n  db: {path: levels.buffer.double_buffered, choices: [true, false]}\n")
    s = load_study(_write(tmp_path, text))
    assert [k.choices for k in s.knobs if k.name in ("db", "pes")] == [(True, False), (4, 8)]
    # the supply's range depends on the node: 0.4 V is below 45 nm's (the template's) but within 7 nm's
    text = GOOD.replace("knobs:\n", "knobs:\n  node: {path: technology.node_nm, choices: [7, 45]}\n"
                                    "  vdd: {path: technology.vdd, choices: [0.4, 1.0]}\n")
    s = load_study(_write(tmp_path, text))
    assert [k.choices for k in s.knobs if k.name in ("node", "vdd")] == [(7, 45), (0.4, 1.0)]


def test_invalid_template_fails_at_load(tmp_path: Path) -> None:
    from costmodel.arch import HWCONFIGS

    hw = (HWCONFIGS / "tiny.yaml").read_text().replace("    word_bits: 8\n    block_words: 4",
                                                       "    word_bits: eight\n    block_words: 4")
    (tmp_path / "my_hw.yaml").write_text(hw)
    msg = _error(tmp_path, GOOD.replace("hardware: tiny", "hardware: my_hw.yaml"))
    assert "s.yaml:2: hardware: " in msg and msg.endswith(
        "my_hw.yaml:20: levels[1].word_bits: expected an integer, got 'eight'"), msg


def test_too_short_wording_is_generic() -> None:
    """validation_error words pydantic's too_short for every format (here a hwconfig's levels)."""
    from costmodel.arch import HWCONFIGS
    from costmodel.yamlio import load_yaml

    data, _ = load_yaml(HWCONFIGS / "tiny.yaml")
    with pytest.raises(UserError, match=r"levels: expected at least 1 item, got \[\]$"):
        architecture_from_dict({**data, "levels": []})


def test_bad_constraints(tmp_path: Path) -> None:
    msg = _error(tmp_path, GOOD + "constraints: [area_mm2 <= 4, watts < 2]\n")
    assert "s.yaml:12: constraints[1]: unknown name(s) watts" in msg, msg
    msg = _error(tmp_path, GOOD + "constraints: [area_mm2 + 4]\n")
    assert "constraints[0]: expected 'METRIC <= VALUE'" in msg, msg
    msg = _error(tmp_path, GOOD + f"constraints: [area_mm2 <= {'9' * 401}]\n")
    assert "s.yaml:12: constraints[0]: " in msg and "a number past the float range" in msg, msg
    bad_fps = GOOD.replace("    layers:", "    constraints: ['latency_ms <= 1000 / fps']\n    layers:")
    assert "workloads[0].fps: a constraint uses fps" in _error(tmp_path, bad_fps)


def test_knob_name_must_not_be_a_metric(tmp_path: Path) -> None:
    text = GOOD.replace("  rows: {", "  area_mm2: {")
    assert "s.yaml:7: knobs.area_mm2: knob name 'area_mm2' must be an identifier" in _error(tmp_path, text)


def test_derived_cycle(tmp_path: Path) -> None:
    text = GOOD.replace("expr: rows * 2", "expr: other + 1}\n  other: {path: mac.energy_pj, expr: pes * 2")
    assert "cycle" in _error(tmp_path, text)


def test_grid_needs_finite_knobs(tmp_path: Path) -> None:
    # (a float field: a float range of capacities now fails at load, a fraction of a word being no capacity)
    text = GOOD.replace("capacity", "read_pj").replace("log: true", "type: float")
    text += "sampler: {kind: grid}\n"
    assert "knobs.glb: knob 'glb': the grid sampler needs choices or an integer range" in _error(tmp_path, text)


def test_knobs_write_the_config(tmp_path: Path) -> None:
    """Values land at their paths: the resolved Architecture shows them (4 KiB of 8-bit words = 4096)."""
    s = load_study(small_study(tmp_path))
    values = knob_values(s.knobs, {"rows": 4, "cols": 2, "glb": 4})
    assert values["pes"] == 8
    arch = architecture_from_dict(apply_knobs(s.base_config, s.knobs, values))
    buf = arch.level("buffer")
    assert (buf.fanout_y, buf.fanout_x, buf.capacity_words, arch.num_pes) == (4, 2, 4096, 8)
    assert s.base_config["levels"][1]["fanout"] == {"x": 2, "y": 2}  # the base stays untouched


_ops = st.sampled_from(["+", "-", "*", "/", "//", "%", "**"])


@st.composite
def _expressions(draw: st.DrawFn, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(st.sampled_from(["a", "b", "c", "2", "3.5", "7"]))
    op = draw(_ops)
    right = draw(_expressions(depth - 1)) if op != "**" else draw(st.sampled_from(["2", "3"]))
    return f"({draw(_expressions(depth - 1))} {op} {right})"


@settings(max_examples=150, deadline=None)
@given(_expressions(), st.integers(1, 9), st.integers(1, 9), st.floats(0.5, 9))
def test_expressions_match_python(text: str, a: int, b: int, c: float) -> None:
    """The safe evaluator agrees with Python's own arithmetic on generated (trusted) expressions."""
    env = {"a": a, "b": b, "c": c}
    try:
        want = eval(text, {"__builtins__": {}}, env)  # the reference, on generated (trusted) text
    except (ZeroDivisionError, OverflowError):
        want = None
    if want is None or isinstance(want, complex) or not math.isfinite(want):  # (reported, not returned)
        with pytest.raises(ExprError):
            parse(text).evaluate(env)
        return
    assert parse(text).evaluate(env) == want
    assert parse(text).names <= {"a", "b", "c"}


@pytest.mark.parametrize("text", ["__import__('os')", "a.b.c", "(a + b).c", "a[0]", "lambda: 1", "'s' * 3",
                                  "a if b else c", "open('x')", "min(a, key=b)", "True + 1"])
def test_expressions_reject_non_arithmetic(text: str) -> None:
    with pytest.raises(ExprError):
        parse(text)


def test_a_workloads_metric_is_one_name() -> None:
    e = parse("eyeseg.latency_ms + gaze.latency_ms / 2")
    assert e.names == {"eyeseg.latency_ms", "gaze.latency_ms"}
    assert e.evaluate({"eyeseg.latency_ms": 3.0, "gaze.latency_ms": 5.0}) == 5.5


@pytest.mark.parametrize(("text", "why"), [
    ("4 / 0", "'4 / 0' cannot be evaluated: division by zero"),
    ("rows * cols / 0", "'rows * cols / 0' divides by zero"),
    ("rows % (2 - 2)", "divides by zero"),
    ("min(rows, sqrt(-1))", "'sqrt(-1)' cannot be evaluated: math domain error"),
    ("max() + rows", "'max()' cannot be evaluated"),
    ("rows + (-1) ** 0.5", "not a finite real number"),
    ("rows + 1e308 * 10", "is inf: not a finite real number"),
    # an integer past the float range: math.isfinite raised OverflowError (a traceback, exit 1)
    ("rows + " + "9" * 401, "a number past the float range"),
    ("rows + 1e400", "a number past the float range"),  # (it read '1e309' is inf)
    ("10 ** 300 * 10 ** 300 + rows", "'10 ** 300 * 10 ** 300' is an integer of 601 digits: not a finite"),
    ("rows + " + "+".join(["1"] * 5000), "is nested too deeply (or too long) to read"),  # (a RecursionError)
])
def test_parts_without_names_are_evaluated_when_parsed(text: str, why: str) -> None:
    """They fail for every design: the file's mistake, not each trial's."""
    with pytest.raises(ExprError, match=re.escape(why)):
        parse(text)
    assert parse("rows / (2 - 1) + sqrt(4)").evaluate({"rows": 6}) == 8


def test_comparison() -> None:
    lhs, op, rhs = parse_comparison("latency_ms <= 1000 / fps")
    assert op == "<=" and lhs.names == {"latency_ms"} and rhs.evaluate({"fps": 40}) == 25


@pytest.mark.parametrize(("text", "env", "why"), [
    ("4 // (buf - buf)", {"buf": 2}, "cannot be evaluated for buf = 2: integer division or modulo by zero"),
    ("sqrt(0 - buf)", {"buf": 2}, "cannot be evaluated for buf = 2: math domain error"),
    ("2 ** 2000", {}, "2 ** 2000 is above 2**1024"),
    ("10 ** 10 ** 10", {}, "is above 2**1024"),  # (Python computed every digit: the sweep hung)
    ("buf * buf", {"buf": 1e300}, "is inf for buf = 1e+300: not a finite real number"),
    ("(buf - 8) ** 0.5", {"buf": 4}, "for buf = 4: not a finite real number"),  # (a complex number)
    ("max()", {}, "max expected at least 1 argument"),
])
def test_arithmetic_that_fails_for_some_values_is_an_expr_error(text: str, env: dict, why: str) -> None:
    """A text that parses but whose value fails for a design's knob values: an ExprError the design
    reports (see test_runner), not a ZeroDivisionError, an int too large for the results table, or a
    hang."""
    with pytest.raises(ExprError, match=re.escape(why)):
        parse(text).evaluate(env)
    assert parse("1.05 ** 100").evaluate({}) == pytest.approx(131.50125784630401)  # (small powers stay)
    # a constraint's bound may pass int64 (energy x latency); a derived knob's value may not
    assert parse("e * t").evaluate({"e": 1e12, "t": 1e9}) == 1e21 and parse("2 ** 70").evaluate({}) == 2**70
    with pytest.raises(ExprError, match=re.escape("'2 ** 63' is 9.223e+18 for its constants: out of range")):
        parse("2 ** 63").evaluate_int64({})


@pytest.mark.parametrize("objective", ["ed2p", "energy:1,latency:2", "latency"])
def test_the_mapper_objective_takes_what_dse_map_takes(tmp_path: Path, objective: str) -> None:
    """A study's mapper objective had been edp, energy or latency only; ed2p and mixes were refused."""
    from dse.mappers.objectives import Objective

    s = load_study(_write(tmp_path, GOOD.replace("name: t", f"name: t\nmapper: {{objective: '{objective}'}}")))
    assert Objective.parse(s.spec.mapper.objective) == Objective.parse(objective)


def test_float_ranges_a_step_of_exactly_high_minus_low_and_no_integer_hint(tmp_path: Path) -> None:
    """1.2 - 1.1 is 0.0999... in floats: a step of 0.1 is still at most high - low. A float range's
    bad bound gets the 'for an integer field' hint only where the field wants an integer."""
    knob = "rows: {path: levels.buffer.read_bw, low: 1.1, high: 1.2, step: 0.1}"
    s = load_study(_write(tmp_path, GOOD.replace("rows: {path: levels.buffer.fanout.y, choices: [2, 4]}", knob)
                          .replace("expr: rows * 2", "expr: '8'")))
    assert s.knobs[0].step == 0.1
    msg = _error(tmp_path, GOOD.replace("path: levels.buffer.fanout.y, choices: [2, 4]",
                                        "path: levels.buffer.read_bw, low: 0.0, high: 4.0"))
    assert msg.endswith("s.yaml:7: knobs.rows.low: levels.buffer.read_bw: expected a number > 0, got 0.0"), msg


def test_presets_set_several_fields(tmp_path: Path) -> None:
    text = GOOD.replace("knobs:\n", "knobs:\n  flavour:\n    presets:\n"
                        "      fast: {clock: 1 GHz, technology.dram: LPDDR5}\n"
                        "      slow: {clock: 100 MHz, 'levels.rf.holds': [W]}\n")
    s = load_study(_write(tmp_path, text))
    k = s.knobs[0]
    assert k.choices == ("fast", "slow")
    base = s.base_config
    slow = apply_knobs(base, [k], {"flavour": "slow"})
    assert slow["clock"] == "100 MHz" and slow["levels"][2]["holds"] == ["W"] and base["levels"][2]["holds"] != ["W"]
    fast = architecture_from_dict(apply_knobs(base, [k], {"flavour": "fast"}))
    assert fast.clock_hz == 1e9 and fast.dram_type == "LPDDR5"
    bad = text.replace("technology.dram", "technology.dramm")
    assert "s.yaml:9: knobs.flavour.presets.fast: technology.dramm: unknown field 'dramm'" in _error(tmp_path, bad)


def test_schema_study_cli(tmp_path: Path) -> None:
    """`dse schema study` prints the JSON Schema of exactly the fields the loader accepts; --check
    says OK for every shipped study and gives the loader's file:line error (exit 2) for a bad one."""
    import json

    from typer.testing import CliRunner

    from dse.cli import app
    from dse.study.schema import StudySpec

    r = CliRunner().invoke(app, ["schema", "study"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert set(doc["properties"]) == set(StudySpec.model_fields)
    assert set(doc["required"]) == {"name", "hardware", "workloads", "objectives"}
    assert doc["additionalProperties"] is False  # an unknown field is an error, as in load_study
    sampler = doc["$defs"]["SamplerSpec"]["properties"]["kind"]
    assert sampler["enum"] == ["grid", "random", "tpe", "nsga2"]
    assert set(doc["$defs"]["KnobSpec"]["properties"]) >= {"path", "choices", "low", "high", "expr", "presets"}
    repo = Path(__file__).resolve().parents[2]
    for f in sorted((repo / "studies").glob("*.yaml")):
        r = CliRunner().invoke(app, ["schema", "study", "--check", str(f)])
        assert r.exit_code == 0 and r.stdout.startswith(f"OK {f}: {f.stem},"), r.output
    bad = _write(tmp_path, GOOD.replace("{metric: energy_pj}", "{metric: joules}"))
    r = CliRunner().invoke(app, ["schema", "study", "--check", str(bad)])
    assert isinstance(r.exception, UserError)  # the CLI's entry point prints it as one line, exit 2
    assert "s.yaml:11: objectives[0].metric: 'joules' is not a metric" in str(r.exception)


def test_sweep_flags_are_checked(tmp_path: Path) -> None:
    """--workers must be >= 1 (typer's usage error, exit 2)."""
    from typer.testing import CliRunner

    from dse.cli import app

    r = CliRunner().invoke(app, ["sweep", str(small_study(tmp_path)), "--workers", "0"])
    assert r.exit_code == 2 and "--workers" in r.output
    assert not (tmp_path / "out").exists()


def test_strict_comparisons_fail_at_equality_and_workload_metrics_constrain(tmp_path: Path) -> None:
    """`rows < 4` with rows = 4 is violated (it had counted as met: a violation of 0); a global
    constraint may read a workload's metric (net.latency_ms), as an objective may."""
    from dse.study.schema import STRICT_EQUAL

    text = GOOD + "constraints: ['rows < 4', 'rows > 2', 'net.latency_ms + area_mm2 <= 3', 'rows <= 4']\n"
    s = load_study(_write(tmp_path, text))
    lt, gt, mixed, le = s.constraints
    assert lt.violation({"rows": 4}) == STRICT_EQUAL > 0 and lt.violation({"rows": 2}) == -0.5
    assert gt.violation({"rows": 2}) == STRICT_EQUAL and gt.violation({"rows": 4}) == -1
    assert le.violation({"rows": 4}) == 0
    assert mixed.lhs.names == {"net.latency_ms", "area_mm2"}
    assert mixed.violation({"net.latency_ms": 2.0, "area_mm2": 2.0}) == pytest.approx(1 / 3)
