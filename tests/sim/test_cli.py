"""`dse simulate`: outputs saved as .npy, one JSON document with --json, user errors exit 2 in one line."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from compiler.isa.binary import write_binary

from .sim_programs import matmul_program

DSE = [str(Path(sys.executable).with_name("dse"))]


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def run(capsys, monkeypatch):
    """``dse ARGS`` in this process (the console script's main(): UserError -> one line, exit 2)."""
    from dse.cli import main

    def _run(*args: str) -> Ran:
        monkeypatch.setattr(sys, "argv", ["dse", *args])
        capsys.readouterr()
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code or 0
        out = capsys.readouterr()
        return Ran(code, out.out, out.err)

    return _run


def test_console_script_exit_status(binary, tmp_path):
    path, a, _ = binary
    ok = subprocess.run([*DSE, "simulate", str(path), "--input", str(a), "--out", str(tmp_path)],
                        check=False, capture_output=True, text=True, timeout=120)
    bad = subprocess.run([*DSE, "simulate", str(a)], check=False, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and (tmp_path / "y.npy").exists()
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "wrong magic" in bad.stderr


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (9, 32)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 16)).astype(np.int8)
    program, _ = matmul_program(a, b, a_zp=2)
    np.save(tmp / "a.npy", a)
    return write_binary(program, tmp / "mm.axb"), tmp / "a.npy", (a.astype(np.int64) - 2) @ b.astype(np.int64)


def test_json_run_saves_outputs(run, binary, tmp_path):
    path, a, want = binary
    p = run("simulate", str(path), "--input", f"a={a}", "--out", str(tmp_path / "o"), "--json",
             "--gemm-timing", "scalesim")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # the whole stdout is one document
    assert doc["gemm_timing"] == "scalesim" and doc["latency_cycles"] > 0
    assert set(doc["engines"]) == {"LD", "EX", "ST"}
    saved = np.load(doc["outputs"]["y"]["path"])
    np.testing.assert_array_equal(saved, want)
    assert not list((tmp_path / "o").glob(".*tmp"))  # no temp file left behind


def test_text_run_prints_cycles(run, binary):
    path, a, want = binary
    p = run("simulate", str(path), "--input", str(a))
    assert p.returncode == 0, p.stderr
    assert "cycles:" in p.stdout and "EX: busy" in p.stdout
    np.testing.assert_array_equal(np.load(path.with_suffix(".out") / "y.npy"), want)


@pytest.mark.parametrize(("mangle", "message"), [
    (lambda d: b"junk" + d[4:], "wrong magic"),
    (lambda d: d[: len(d) // 2], "truncated"),
    (lambda d: d[:-5] + bytes([d[-5] ^ 0xFF]) + d[-4:], "corrupted"),
])
def test_bad_binaries_exit_2_in_one_line(run, binary, tmp_path, mangle, message):
    path, a, _ = binary
    bad = tmp_path / "bad.axb"
    bad.write_bytes(mangle(path.read_bytes()))
    p = run("simulate", str(bad), "--input", str(a))
    assert p.returncode == 2 and message in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_bad_inputs_exit_2(run, binary, tmp_path):
    path, a, _ = binary
    mask = tmp_path / "mask.npy"
    np.save(mask, np.load(a) > 0)  # bool: taken as codes 0/1 by the run, as 1.0 by --check's reference
    for args, message in [((), "missing input"), (("--input", str(tmp_path / "none.npy")), "cannot read"),
                          (("--input", str(a), "--input", str(a)), "unnamed file"),
                          (("--input", str(a), "--hw", "tpu_like"), "built for config fingerprint"),
                          (("--input", f"b={a}"), "the binary has no input 'b'; its inputs are ['a']"),
                          (("--input", str(a), "--no-timing", "--gemm-timing", "scalesim"), "--no-timing turns off"),
                          (("--input", str(mask)), "input 'a': dtype bool, the binary expects int8")]:
        p = run("simulate", str(path), *args)
        assert p.returncode == 2 and message in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_unwritable_outputs_exit_2_before_the_run(run, binary, tmp_path):
    path, a, _ = binary
    (tmp_path / "afile").write_text("x")
    for out, message in [(tmp_path / "afile", "afile is a file, not a folder"),
                         (tmp_path / "afile" / "sub", "Not a directory")]:
        p = run("simulate", str(path), "--input", str(a), "--out", str(out))
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.count("\n") == 1
    before = path.read_bytes()
    p = run("disasm", str(path), "-o", str(path))  # would replace the binary by its text
    assert p.returncode == 2 and "is also an input of this command" in p.stderr
    assert path.read_bytes() == before
    text, hw = tmp_path / "p.s", tmp_path / "hw.yaml"
    assert run("disasm", str(path), "-o", str(text)).returncode == 0
    hw.write_text("not read")
    p = run("asm", str(text), "-o", str(hw), "--hw", str(hw))  # would replace the config by a binary
    assert p.returncode == 2 and "is also an input of this command" in p.stderr and hw.read_text() == "not read"
    folder = tmp_path / "o"  # an output (y.npy) over the input given by name, or by position
    folder.mkdir()
    (folder / "y.npy").write_bytes(a.read_bytes())
    for given in (f"a={folder / 'y.npy'}", str(folder / "y.npy")):
        p = run("simulate", str(path), "--input", given, "--out", str(folder))
        assert p.returncode == 2 and f"{folder / 'y.npy'}: is also an input of this command" in p.stderr, p.stderr
    assert (folder / "y.npy").read_bytes() == a.read_bytes()


def test_outputs_get_the_usual_file_mode(run, binary, tmp_path):
    import os
    import stat

    path, a, _ = binary
    assert run("simulate", str(path), "--input", str(a), "--out", str(tmp_path / "o")).returncode == 0
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE((tmp_path / "o" / "y.npy").stat().st_mode) == 0o666 & ~mask


def _qdq_matmul_onnx(path: Path, b, a_scale, a_zp, b_scale, y_scale, y_zp, rows: int = 9) -> None:
    """float a -> QuantizeLinear -> QLinearMatMul -> DequantizeLinear -> float y (names a, y)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(v, dt), n) for n, v, dt in [
        ("as", a_scale, np.float32), ("az", a_zp, np.int8), ("bs", b_scale, np.float32), ("bz", 0, np.int8),
        ("ys", y_scale, np.float32), ("yz", y_zp, np.int8)]] + [numpy_helper.from_array(b, "b")]
    nodes = [helper.make_node("QuantizeLinear", ["a", "as", "az"], ["aq"]),
             helper.make_node("QLinearMatMul", ["aq", "as", "az", "b", "bs", "bz", "ys", "yz"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [rows, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), path)


def test_check_against_the_onnx_model(run, tmp_path):
    from compiler.sim import quant

    rng = np.random.default_rng(4)
    b = rng.integers(-127, 128, (32, 16)).astype(np.int8)
    a_scale, a_zp, b_scale, y_scale, y_zp = 0.05, 3, 0.01, 0.4, -7
    x = rng.normal(0, 2, (9, 32)).astype(np.float32)  # float input: the simulator quantizes it like ORT
    aq = quant.requantize(x, a_scale, a_zp, np.int8, divide=True)
    scales = np.full(16, quant.output_scale(a_scale, b_scale, y_scale))  # per-tensor: one per column
    program, _ = matmul_program(aq, b, a_zp=a_zp, scales=scales, y_zp=y_zp, a_scale=a_scale, y_scale=y_scale)
    axb = write_binary(program, tmp_path / "q.axb")
    np.save(tmp_path / "x.npy", x)
    _qdq_matmul_onnx(tmp_path / "good.onnx", b, a_scale, a_zp, b_scale, y_scale, y_zp)
    p = run("simulate", str(axb), "--input", str(tmp_path / "x.npy"), "--check", str(tmp_path / "good.onnx"),
            "--json")
    assert p.returncode == 0, p.stderr
    check = json.loads(p.stdout)["check"]
    out = check["outputs"][0]
    assert check["passed"] and out["max_lsb_ort"] == 0 and out["max_lsb_reference"] == 0 and out["elements"] == 144
    _qdq_matmul_onnx(tmp_path / "bad.onnx", b, a_scale, a_zp, b_scale, y_scale * 1.5, y_zp)  # another model
    p = run("simulate", str(axb), "--input", str(tmp_path / "x.npy"), "--check", str(tmp_path / "bad.onnx"))
    assert p.returncode == 1 and "check failed" in p.stderr and "LSB vs onnxruntime" in p.stdout
    _qdq_matmul_onnx(tmp_path / "other.onnx", b, a_scale, a_zp, b_scale, y_scale, y_zp, rows=7)  # another shape
    p = run("simulate", str(axb), "--input", str(tmp_path / "x.npy"), "--check", str(tmp_path / "other.onnx"))
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert "the model's input 'a' has shape [7, 32], the binary's [9, 32]" in p.stderr, p.stderr
    # the float model (the one given to `dse compile`, not its .q.onnx): a note says what to check against
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array((b.astype(np.float32) * np.float32(b_scale)), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], "f",
                              [helper.make_tensor_value_info("a", TensorProto.FLOAT, [9, 32])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10),
              tmp_path / "float.onnx")
    p = run("simulate", str(axb), "--input", str(tmp_path / "x.npy"), "--check", str(tmp_path / "float.onnx"))
    assert "note: this model quantizes nothing (a float model)" in p.stdout, p.stdout
    p = run("simulate", str(axb), "--input", str(tmp_path / "x.npy"), "--check", str(tmp_path / "good.onnx"))
    assert p.returncode == 0 and "quantizes nothing" not in p.stdout


def test_asm_refuses_a_program_that_cannot_run_and_simulate_names_the_binary(run, binary, tmp_path):
    """`dse asm` writes only programs the simulator accepts to their end (a FINISH last and nowhere
    else); the simulator's complaint about a binary starts with the binary's path."""
    import re

    path, a, _ = binary
    text = tmp_path / "p.s"
    assert run("disasm", str(path), "-o", str(text)).returncode == 0
    lines = text.read_text().splitlines(keepends=True)
    fin = [i for i, line in enumerate(lines) if line.split(";")[0].strip().lower() == "finish"]
    assert len(fin) == 1
    for name, body in [("none.s", lines[:fin[0]] + lines[fin[0] + 1:]), ("empty.s", []),
                       ("early.s", lines[:fin[0]] + ["finish\n"] + lines[fin[0]:])]:
        src = tmp_path / name
        src.write_text("".join(body))
        p = run("asm", str(src), "-o", str(tmp_path / "x.axb"))
        assert p.returncode == 2 and p.stderr.startswith(f"error: {src}: ") and "FINISH" in p.stderr, p.stderr
        assert not (tmp_path / "x.axb").exists()
    far = tmp_path / "far.s"
    far.write_text(re.sub(r"dram_addr=\w+", "dram_addr=0x99999999", text.read_text(), count=1))
    assert run("asm", str(far), "-o", str(tmp_path / "far.axb")).returncode == 0
    p = run("simulate", str(tmp_path / "far.axb"), "--input", f"a={a}", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and p.stderr.startswith(f"error: {tmp_path / 'far.axb'}: ") and "memory map" in p.stderr


def test_outputs_whose_names_give_one_file_name_are_both_saved(run, tmp_path):
    """`y:1` and `y_1` both cleaned to y_1.npy: the second output had replaced the first, exit 0."""
    source = tmp_path / "two.s"
    io = ('{{"addr":{a},"direction":"output","dtype":"uint8","layout":"NC","name":"{n}","scale":1.0,'
          '"shape":[1,16],"zero_point":0}}')
    source.write_text(".isa 1\n.memmap dram_size=32 const_base=0\n"
                      f".io {io.format(a=0, n='y:1')}\n.io {io.format(a=16, n='y_1')}\n"
                      ".const " + "01" * 16 + "02" * 16 + "\nfinish\n")
    binary = tmp_path / "two.out"  # (also: the default folder would be the binary itself)
    assert run("asm", str(source), "-o", str(binary)).returncode == 0
    p = run("simulate", str(binary), "--json")
    assert p.returncode == 0, p.stderr
    paths = {name: Path(o["path"]) for name, o in json.loads(p.stdout)["outputs"].items()}
    assert paths["y:1"] != paths["y_1"] and paths["y:1"].parent == tmp_path / "two.out.out"
    np.testing.assert_array_equal(np.load(paths["y:1"]), np.ones((1, 16), np.uint8))
    np.testing.assert_array_equal(np.load(paths["y_1"]), np.full((1, 16), 2, np.uint8))


def test_timing_summary_takes_the_median_of_an_even_count():
    """An even number of layers: the median is the mean of the two middle ratios (it printed the
    upper one: 1.018 for mobilenet_v2, whose 36 ratios have median 1.0166)."""
    from dse.cli.simulate_cmd import timing_summary

    rows = [{"ratio": r} for r in (1.30, 0.95, 1.00, 1.02)]
    assert timing_summary(rows).startswith("simulated/analytical: median 1.010, range [0.950, 1.300], 3 of 4 ")
    assert timing_summary(rows[:3]).startswith("simulated/analytical: median 1.000, range [0.950, 1.300], 2 of 3 ")


@pytest.mark.parametrize(("text", "message"), [
    ("{", "not a mapping file written by dse compile"),
    ("[1]", "expected an object with a 'layers' list"),
    ('{"layers": {}}', "expected an object with a 'layers' list"),
    ('{"layers": [1, 2]}', "layers[0]: expected an object with 'node' and 'op' strings, got 1"),
    ('{"layers": [{"node": "a", "op": "Conv", "analytical_cycles": "abc"}]}',
     "layers[0].analytical_cycles: expected a positive integer, got 'abc'"),
    ('{"layers": [{"node": "a", "op": "Conv"}, {"node": "b", "op": "Conv", "analytical_cycles": 0}]}',
     "layers[1].analytical_cycles: expected a positive integer, got 0"),
    ('{"layers": [{"node": "a", "op": "Conv", "tiles": -1}]}', "layers[0].tiles: expected a non-negative integer"),
])
def test_a_damaged_mapping_sidecar_is_a_user_error(tmp_path, text, message):
    """`--check` reads the <stem>.map.json next to the binary: a damaged one was a TypeError or
    ValueError from the timing table (exit 1, a failed check's status) or a ratio of inf."""
    from costmodel.errors import UserError
    from dse.cli.simulate_cmd import _sidecar_layers

    side = tmp_path / "m.map.json"
    side.write_text(text)
    with pytest.raises(UserError, match=f"^{side}: .*{re.escape(message)}"):
        _sidecar_layers(side)
    good = [{"node": "a", "op": "QLinearConv", "tiles": 2, "analytical_cycles": 10}, {"node": "b", "op": "Relu"}]
    side.write_text(json.dumps({"layers": good}))
    assert _sidecar_layers(side) == good


def test_an_explicit_out_naming_the_binary_is_refused(binary, run):
    """``--out prog.axb`` asks for the outputs in the binary itself: refused, where the default
    folder's rule for a binary named *.out (<binary>.out) had sent them to prog.axb.out silently."""
    path, a, _ = binary
    p = run("simulate", str(path), "--input", str(a), "--out", str(path))
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and f"({path} is a file, not a folder)" in p.stderr
    assert not path.with_name(path.name + ".out").exists()


@pytest.mark.parametrize(("array", "why"), [
    (np.zeros((9, 31), np.int8), "input 'a': shape [9, 31], the binary expects [9, 32]"),
    (np.full((9, 32), 300, np.int16), "input 'a': values [300, 300] do not fit int8"),
])
def test_an_input_the_binary_cannot_take_names_its_file(run, binary, tmp_path, array, why):
    """Shape, dtype and range errors named the input but not the .npy file it came from."""
    path, _, _ = binary
    np.save(tmp_path / "mine.npy", array)
    p = run("simulate", str(path), "--input", f"a={tmp_path / 'mine.npy'}", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and p.stderr == f"error: {tmp_path / 'mine.npy'}: {why}\n"
