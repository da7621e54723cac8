"""Bad input names what is wrong; `dse compile` writes the binary and the reference and prints a summary."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
import typer
from onnx import TensorProto, helper
from typer.testing import CliRunner

from compiler.compile import compile_model
from compiler.isa import read_binary
from compiler.target import Target
from costmodel.arch import load_architecture
from costmodel.errors import UserError
from dse.cli import compile_cmd
from tests.compiler import graphs
from tests.compiler.models import tiny_cnn


def test_op_without_integer_kernel_names_op_and_node(tmp_path):
    rng = np.random.default_rng(0)
    m = graphs.conv(rng, 4, 4, (1, 1), (1, 1), (0, 0, 0, 0), (5, 5))
    m.graph.node[0].output[0] = "c"
    m.graph.node.append(helper.make_node("Softmax", ["c"], ["y"], name="the_softmax", axis=1))
    onnx.save(m, tmp_path / "m.onnx")
    with pytest.raises(UserError, match=r"the_softmax.*Softmax|Softmax.*the_softmax"):
        compile_model(tmp_path / "m.onnx", Target())


def test_op_of_another_domain_is_named_before_quantizing(tmp_path, capfd):
    """onnxruntime's quantizer would print its own traceback for an op it cannot load, then fail;
    the op is refused first, by name, with nothing on stderr."""
    m = graphs.gemm(np.random.default_rng(0), 1, 8, 4)
    m.graph.node[0].output[0] = "c"
    m.graph.node.append(helper.make_node("Foo", ["c"], ["y"], domain="my.custom"))
    m.opset_import.append(helper.make_opsetid("my.custom", 1))
    onnx.save(m, tmp_path / "m.onnx")
    with pytest.raises(UserError, match=r"node #1 \(unnamed\) has op type my\.custom::Foo, which accel-dse does not "
                       r"support$"):
        compile_model(tmp_path / "m.onnx", Target())
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("defect", ["dangling input", "opset 99"])
def test_an_invalid_model_is_named_before_quantizing(tmp_path, capfd, defect):
    """A node reading a tensor nothing defines, or an opset newer than onnx knows: onnxruntime's
    pre-processing logged its own traceback, then the error named a temp file of its own."""
    m = graphs.gemm(np.random.default_rng(0), 1, 8, 4)
    if defect == "dangling input":
        m.graph.node[0].input[0] = "nowhere"
        message = r"m\.onnx: node '.+' \(\w+\) reads tensor 'nowhere' that no node, initializer or graph input defines"
    else:
        m.opset_import[0].version = 99
        message = rf"m\.onnx: opset 99 is newer than the {onnx.defs.onnx_opset_version()} this toolkit's onnx knows"
    onnx.save(m, tmp_path / "m.onnx")
    capfd.readouterr()
    with pytest.raises(UserError, match=message):
        compile_model(tmp_path / "m.onnx", Target())
    assert capfd.readouterr().err == ""


def test_a_batch_of_images_is_refused_not_cut_to_its_first(tmp_path):
    """4-D tensors are lowered for batch 1: a batch of 2 had compiled, with an output of batch 1."""
    m = graphs.conv(np.random.default_rng(0), 4, 4, (3, 3), (1, 1), (1, 1, 1, 1), (5, 5))
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    onnx.save(m, tmp_path / "b2.onnx")
    with pytest.raises(UserError, match=r"output of shape \[2, 4, 5, 5\], a batch of 2; 4-D tensors are lowered "
                       r"for batch 1 only"):
        compile_model(tmp_path / "b2.onnx", Target())


def test_integer_input_cannot_be_quantized(tmp_path):
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.INT64, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [1, 4])])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "i.onnx")
    with pytest.raises(UserError, match="input 'x'.*float32"):
        compile_model(tmp_path / "i.onnx", Target())


def test_missing_model_and_wrong_calibration(tmp_path):
    with pytest.raises(UserError, match="no such ONNX file"):
        compile_model(tmp_path / "nope.onnx", Target())
    onnx.save(graphs.gemm(np.random.default_rng(0), 1, 8, 4), tmp_path / "g.onnx")
    with pytest.raises(UserError, match=r"^calibration: the model has no input\(s\) \['other'\]; its inputs are \['x'\]"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"other": np.zeros((1, 8), np.float32)})
    with pytest.raises(UserError, match="calibration data lacks model input"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={})
    (tmp_path / "empty.onnx").write_bytes(b"")
    with pytest.raises(UserError, match="empty.onnx: the ONNX model has no graph nodes"):
        compile_model(tmp_path / "empty.onnx", Target())
    with pytest.raises(UserError, match=r"calibration input 'x': shape \(3, 9\), expected \(1, 8\) or \(samples, 1, 8\)$"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"x": np.zeros((3, 9), np.float32)})
    # no samples, or a NaN (its scale would be NaN: onnxruntime's quantizer then failed obscurely)
    with pytest.raises(UserError, match="calibration input 'x': no samples"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"x": np.zeros((0, 1, 8), np.float32)})
    bad = np.zeros((2, 1, 8), np.float32)
    bad[1, 0, 3], bad[0, 0, 0] = np.nan, np.inf
    with pytest.raises(UserError, match="calibration input 'x': 2 elements are NaN or infinite"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"x": bad})
    for odd in (np.zeros((1, 8), np.complex64), np.zeros((1, 8), bool)):
        with pytest.raises(UserError, match=rf"calibration input 'x': {odd.dtype} values; expected real numbers"):
            compile_model(tmp_path / "g.onnx", Target(), calibration={"x": odd})
    with pytest.raises(TypeError, match=r"calibration: expected a dict of input name -> array \(the model's inputs: \['x'\]\)"):
        compile_model(tmp_path / "g.onnx", Target(), calibration=np.zeros((1, 8), np.float32))
    # a constant calibration input compiles (it is legal), with a warning: no range to fit
    with pytest.warns(UserWarning, match=r"calibration input 'x': every value is 0\.0, so the quantizer has no range"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"x": np.zeros((2, 1, 8), np.float32)})


def test_calibration_past_the_float_range_is_blamed(tmp_path, capfd):
    """Calibration values whose activations overflow float32: the error blames the calibration data
    (it named an io tensor's scale of inf, or blamed the graph), and numpy's warnings from inside
    onnxruntime's calibrator ("All-NaN axis encountered") are not printed."""
    onnx.save(graphs.gemm(np.random.default_rng(0), 1, 8, 4), tmp_path / "g.onnx")
    huge = np.random.default_rng(1).uniform(1e37, 3e38, (4, 1, 8)).astype(np.float32)
    capfd.readouterr()
    with pytest.raises(UserError, match=r"g\.onnx: quantization gave tensor '\w+' the scale inf: the calibration "
                       r"data's activations leave float32's range$"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"x": huge})
    assert "RuntimeWarning" not in capfd.readouterr().err


def test_layer_too_big_for_the_scratchpad(tmp_path):
    tiny = Target(spad_bytes=4096, acc_bytes=4096)  # 256 SPAD rows; weights alone need 3*3*4*4*16 rows
    onnx.save(graphs.conv(np.random.default_rng(0), 64, 64, (3, 3), (1, 1), (1, 1, 1, 1), (8, 8)), tmp_path / "c.onnx")
    with pytest.raises(UserError, match="do not fit SPAD"):
        compile_model(tmp_path / "c.onnx", tiny)


def _app() -> typer.Typer:
    app = typer.Typer()
    compile_cmd.register(app)
    app.command("noop")(lambda: None)  # a second command keeps `compile` a subcommand
    return app


def test_cli_compile_writes_binary_and_reference(tmp_path):
    src = tiny_cnn(tmp_path / "tiny.onnx")
    out = tmp_path / "build" / "tiny.axb"  # a folder that does not exist yet is created
    r = CliRunner().invoke(_app(), ["compile", str(src), "--hw", "tpu_like", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    program = read_binary(out)
    assert doc["instructions"] == len(program.instructions)
    assert doc["constants_bytes"] == len(program.constants)
    assert doc["layers"][0]["op"] == "QLinearConv"
    assert doc["predicted_cycles"] > 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["tiny.axb", "tiny.map.json", "tiny.q.onnx"]  # no temp left
    assert sorted(p.name for p in tmp_path.iterdir()) == ["build", "tiny.onnx"]


def test_cli_compile_error_is_a_user_error(tmp_path):
    r = CliRunner().invoke(_app(), ["compile", str(tmp_path / "x.onnx"), "--hw", "tpu_like", "-o",
                                    str(tmp_path / "x.axb")])
    assert isinstance(r.exception, UserError)  # dse.cli.main turns it into one line and exit 2
    assert not (tmp_path / "x.axb").exists()


def test_cli_refuses_bad_outputs_before_compiling(tmp_path):
    src = tiny_cnn(tmp_path / "tiny.onnx")
    before = src.read_bytes()
    (tmp_path / "folder.axb").mkdir()
    (tmp_path / "afile").write_text("")
    for out, message in [(src, "is also an input of this command"),
                         (tmp_path / "folder.axb", "folder.axb: cannot write (is a folder)"),
                         (tmp_path / "afile" / "x.axb", "afile is a file, not a folder")]:
        r = CliRunner().invoke(_app(), ["compile", str(src), "--hw", "tpu_like", "-o", str(out)])
        assert r.exit_code == 1 and isinstance(r.exception, UserError) and message in str(r.exception), r.output
    assert src.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "folder.axb", "tiny.onnx"]  # nothing written
    # nor the config or a calibration file
    hw = tmp_path / "hw.yaml"
    hw.write_text(Path(load_architecture("tpu_like").source).read_text())
    cal = tmp_path / "cal.npy"
    np.save(cal, np.zeros((2, 3, 16, 16), np.float32))
    kept = {p: p.read_bytes() for p in (hw, cal)}
    for args in (["--hw", str(hw), "-o", str(hw)], ["--hw", "tpu_like", "-o", str(cal), "--calibration", f"x={cal}"]):
        r = CliRunner().invoke(_app(), ["compile", str(src), *args])
        assert isinstance(r.exception, UserError) and "is also an input of this command" in str(r.exception), args
    assert all(p.read_bytes() == data for p, data in kept.items())
    r = CliRunner().invoke(_app(), ["compile", str(src), "--hw", "tpu_like", "-o", str(tmp_path / "m.axb"),
                                    "--calibration", f"x={cal}", "--calibration", f"x={cal}"])
    assert isinstance(r.exception, UserError) and "input 'x' given twice" in str(r.exception)  # (as simulate --input)
    for p in (hw, cal):
        p.unlink()
    r = CliRunner().invoke(_app(), ["compile", str(src), "--hw", "tpu_like", "-o", "x.axb", "--seed", "-1"])
    assert r.exit_code == 2 and "--seed" in r.output


def test_not_compilable_config_names_the_ones_that_are():
    with pytest.raises(UserError, match="nothing can be compiled for it; shipped configs that have one: .*tpu_like"):
        Target.from_arch(load_architecture("eyeriss_like"))


def test_compiling_the_reference_keeps_it(tmp_path):
    """`dse compile m.q.onnx -o m.axb`: the reference it would write is the input itself; it stays as is."""
    src = tiny_cnn(tmp_path / "tiny.onnx")
    assert CliRunner().invoke(_app(), ["compile", str(src), "--hw", "tpu_like", "-o", str(tmp_path / "a.axb")]).exit_code == 0
    ref = tmp_path / "a.q.onnx"
    before = ref.read_bytes()
    r = CliRunner().invoke(_app(), ["compile", str(ref), "--hw", "tpu_like", "-o", str(tmp_path / "a.axb"), "--json"])
    assert r.exit_code == 0, r.output
    assert ref.read_bytes() == before and json.loads(r.stdout)["reference"] == str(ref)


def test_a_float_model_named_as_the_reference_is_refused(tmp_path):
    """`dse compile m.q.onnx -o m.axb` with a float m.q.onnx: the quantized reference was never written,
    and the message pointed `--check` at the float model."""
    src = tiny_cnn(tmp_path / "m.q.onnx")
    before = src.read_bytes()
    r = CliRunner().invoke(_app(), ["compile", str(src), "--hw", "tpu_like", "-o", str(tmp_path / "m.axb")])
    assert isinstance(r.exception, UserError) and "a float model named as this build's reference" in str(r.exception)
    assert src.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["m.q.onnx"]


def test_a_binary_the_simulator_refuses_is_not_written(tmp_path):
    """A config whose vector unit lacks QADD: the checking run refuses the program. The binary, its
    reference and map had been written (over the previous build) before that run."""
    text = Path(load_architecture("tpu_like").source).read_text()
    assert "vector_ops" not in text  # (the default: every op)
    hw = tmp_path / "hw.yaml"
    hw.write_text(text.replace("compilable: ", "compilable:\n  vector_ops: [mov]  ", 1))
    src = tmp_path / "add.onnx"
    onnx.save(graphs.add([1, 16]), src)
    out = tmp_path / "add.axb"
    out.write_bytes(b"previous build")
    r = CliRunner().invoke(_app(), ["compile", str(src), "--hw", str(hw), "-o", str(out)])
    assert isinstance(r.exception, UserError) and "does not implement QADD" in str(r.exception), r.output
    assert out.read_bytes() == b"previous build"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["add.axb", "add.onnx", "hw.yaml"]


def test_an_unnamed_node_is_named_by_its_output_in_messages(tmp_path):
    """onnx.helper leaves node names empty: messages read `node  (QLinearConv): group 2 ...`."""
    m = graphs.conv(np.random.default_rng(0), 4, 4, (3, 3), (1, 1), (1, 1, 1, 1), (6, 6), group=2)
    assert not m.graph.node[0].name
    onnx.save(m, tmp_path / "g.onnx")
    with pytest.raises(UserError, match=r"g\.onnx: node \S+ \(QLinearConv\): group 2 with 4 -> 4 channels"):
        compile_model(tmp_path / "g.onnx", "tpu_like")


def test_a_global_average_onnxruntime_would_refuse_is_refused_by_name(tmp_path):
    """MLAS computes QLinearGlobalAveragePool only for 2^-32 <= x_scale / (y_scale n) < 256 (else its
    output is constant): inputs of range +-1000 whose averages are near 0 give ~10^4. The binary had
    been written; onnxruntime then refused its reference at `dse simulate --check`."""
    import onnxruntime as ort

    m = graphs.pool("GlobalAveragePool", 1, None, None, None, (2, 1))
    w = float(numpy_helper_to_array(m, "w").reshape(()))
    onnx.save(m, tmp_path / "g.onnx")
    cal = (np.array([1000.0, -999.9], np.float32) / w).reshape(1, 1, 2, 1)
    with pytest.raises(UserError, match=r"node .* \(global average pool\): x_scale / \(y_scale x 2 elements\) = .* "
                                        r"is outside the \[2\^-32, 256\)"):
        compile_model(tmp_path / "g.onnx", Target(), calibration={"x": cal[None]})
    from compiler.quantize import quantize_model

    q = quantize_model(tmp_path / "g.onnx", tmp_path / "g.q.onnx", calibration={"x": cal[None]})
    with pytest.raises(Exception, match="out of computation range"):
        ort.InferenceSession(str(q)).run(None, {"x": cal})


def numpy_helper_to_array(m, name):
    from onnx import numpy_helper

    return next(numpy_helper.to_array(t) for t in m.graph.initializer if t.name == name)
