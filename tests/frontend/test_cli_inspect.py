"""`dse inspect` end to end (subprocesses): bad input exits 2 with one line; good input prints a
table or one JSON document; missing weights and symbolic dims import with warnings on stderr."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.frontend.onnx_builders import FLOAT, save, weight

DSE = [sys.executable, "-c", "from dse.cli import main; main()"]


def dse(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*DSE, *args], check=False, capture_output=True, text=True, timeout=120)


def _conv_model(path, *, batch="1", strip=False):
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    inits = [] if strip else [weight("w", 4, 2, 3, 3)]
    inputs = [("x", FLOAT, [int(batch) if batch.isdigit() else batch, 2, 6, 6])]
    if strip:  # weights removed: only the graph input's declared shape is left
        inputs.append(("w", FLOAT, [4, 2, 3, 3]))
    return save(path, nodes, inputs, [("y", FLOAT, None)], inits)


def _assert_one_line_error(proc, *needles):
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_not_onnx_file(tmp_path):
    p = tmp_path / "notes.onnx"
    p.write_text("these are my notes, not a model\n")
    _assert_one_line_error(dse("inspect", str(p)), str(p), "not an ONNX model")


def test_truncated_file(tmp_path):
    full = _conv_model(tmp_path / "full.onnx").read_bytes()
    p = tmp_path / "cut.onnx"
    p.write_bytes(full[: len(full) * 2 // 3])
    _assert_one_line_error(dse("inspect", str(p)), str(p), "truncated")


def test_unknown_op(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("FancyOp", ["r"], ["y"], name="mystery", domain="com.example")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    p = tmp_path / "odd.onnx"
    onnx.save(model, str(p))
    _assert_one_line_error(dse("inspect", str(p)), "com.example::FancyOp", "'mystery'")
    # allowed: a zero-cost host layer, and a warning on stderr
    proc = dse("inspect", str(p), "--json", "--allow-unsupported")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    host = [x for x in doc["layers"] if x["kind"] == "host"]
    assert [x["name"] for x in host] == ["mystery"] and host[0]["macs"] == 0
    assert "warning:" in proc.stderr and "FancyOp" in proc.stderr


def test_shapes_that_cannot_be_inferred(tmp_path):
    # Reshape to a shape given at run time, then a Conv that needs to know it
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"], name="reshape"),
             helper.make_node("Conv", ["r", "w"], ["y"], name="conv")]
    p = save(tmp_path / "dyn.onnx", nodes, [("x", FLOAT, [1, 32]), ("s", TensorProto.INT64, [4])],
             [("y", FLOAT, None)], [weight("w", 2, 2, 1, 1)])
    _assert_one_line_error(dse("inspect", str(p)), str(p), "'reshape'", "cannot infer the shape of tensor 'r'")


def test_missing_file(tmp_path):
    _assert_one_line_error(dse("inspect", "/nonexistent/model.onnx"), "/nonexistent/model.onnx", "no such file")
    _assert_one_line_error(dse("inspect", str(tmp_path)), str(tmp_path), "a folder, not an ONNX file")


def test_table_and_json(tmp_path):
    p = _conv_model(tmp_path / "m.onnx")
    table = dse("inspect", str(p))
    assert table.returncode == 0, table.stderr
    assert "conv" in table.stdout and "Conv+Relu" in table.stdout
    proc = dse("inspect", str(p), "--json")
    doc = json.loads(proc.stdout)  # exactly one JSON document on stdout
    # conv K4 C2 3x3 pad 1 on 6x6: 4*2*9*36 = 2592 MACs; 72 weights
    assert doc["totals"]["macs"] == 2592 and doc["totals"]["params"] == 72
    (layer,) = doc["layers"]
    assert layer["problem"]["dims"] == {"N": 1, "G": 1, "K": 4, "C": 2, "P": 6, "Q": 6, "R": 3, "S": 3}
    assert layer["input_shapes"] == [[1, 2, 6, 6]] and layer["output_shapes"] == [[1, 4, 6, 6]]


def test_stripped_weights_and_symbolic_batch_warn_but_import(tmp_path):
    p = _conv_model(tmp_path / "s.onnx", batch="batch", strip=True)
    proc = dse("inspect", str(p), "--json")
    assert proc.returncode == 0, proc.stderr
    warnings = proc.stderr.strip().splitlines()
    assert any("symbolic input dims fixed to 1" in w and "x[0]=batch" in w for w in warnings)
    assert any("no data" in w for w in warnings)
    doc = json.loads(proc.stdout)
    assert doc["totals"]["macs"] == 2592 and doc["totals"]["weights"] == 72


def test_missing_external_data_file(tmp_path):
    from onnx.external_data_helper import convert_model_to_external_data

    model = onnx.load(str(_conv_model(tmp_path / "e.onnx")))
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="e.onnx.data", size_threshold=0)
    onnx.save(model, str(tmp_path / "e.onnx"))
    assert (tmp_path / "e.onnx.data").exists()
    (tmp_path / "e.onnx.data").unlink()
    from compiler.frontend import import_onnx

    with pytest.warns(UserWarning, match="e.onnx.data not found"):
        wl = import_onnx(tmp_path / "e.onnx")
    assert wl.total_macs == 2592 and wl.total_params == 72
    assert np.prod(wl.layers()[0].input_shapes[0]) == 72


def test_names_with_brackets_are_shown_as_written(tmp_path):
    """Node names are text, not rich markup: "out[/]" had been a MarkupError traceback (exit 1) and
    "blocks[bold]/fc1" had lost its "[bold]"; so had a map table's title of a graph named "net[/v2]"."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="blocks[bold]/fc1"),
             helper.make_node("MatMul", ["h", "w2"], ["y"], name="out[/]")]
    path = save(tmp_path / "b.onnx", nodes, [("x", FLOAT, [2, 4])], [("y", FLOAT, None)],
                [weight("w1", 4, 4), weight("w2", 4, 3)])
    model = onnx.load(str(path))
    model.graph.name = "net[/v2]"
    onnx.save(model, str(path))
    proc = dse("inspect", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "blocks[bold]/fc1" in proc.stdout and "out[/]" in proc.stdout and "net[/v2]" in proc.stdout
    proc = dse("map", str(path), "--hw", "tiny", "--no-db", "--max-evaluations", "50")
    assert proc.returncode == 0, proc.stderr
    assert "net[/v2] on tiny" in proc.stdout and "blocks[bold]/fc1" in proc.stdout
