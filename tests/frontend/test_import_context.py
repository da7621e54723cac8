"""Errors from building a layer's Problem name the file and the node (and the symbolic dims fixed to 1
when those are the likely cause); a PyTorch export's default graph name gives way to the file's name."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from onnx import helper

from compiler.frontend import import_onnx
from costmodel.errors import UserError
from tests.frontend.onnx_builders import FLOAT, save, weight

DSE = [sys.executable, "-c", "from dse.cli import main; main()"]


def _conv(path: Path, x_shape: list) -> Path:
    """One 3x3 Conv named conv0 reading ``x``."""
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv0")
    return save(path, [node], [("x", FLOAT, x_shape)], [("y", FLOAT, None)], [weight("w", 4, 8, 3, 3)])


def test_problem_error_names_file_node_and_fixed_dims(tmp_path: Path) -> None:
    path = _conv(tmp_path / "dyn.onnx", ["N", 8, "H", "W"])
    with pytest.warns(UserWarning, match=r"symbolic input dims fixed to 1: x\[0\]=N, x\[2\]=H, x\[3\]=W"), \
            pytest.raises(UserError) as err:
        import_onnx(path)
    assert re.match(rf"{re.escape(str(path))}: node 'conv0' \(Conv\): field 'kernel': .*; the symbolic input dims "
                    r"x\[0\]=N, x\[2\]=H, x\[3\]=W were fixed to 1", str(err.value)), err.value


def test_cli_prints_the_warning_then_one_error_line(tmp_path: Path) -> None:
    path = _conv(tmp_path / "dyn.onnx", ["N", 8, "H", "W"])
    proc = subprocess.run([*DSE, "inspect", str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    warning, error = proc.stderr.strip().splitlines()
    assert warning.startswith(f"warning: {path}: symbolic input dims fixed to 1")
    assert error.startswith(f"error: {path}: node 'conv0' (Conv): field 'kernel'")


def test_fixed_shapes_import(tmp_path: Path) -> None:
    path = _conv(tmp_path / "dyn.onnx", ["N", 8, "H", "W"])
    (layer,) = import_onnx(path, input_shapes={"x": (1, 8, 6, 6)}).layers()
    assert layer.output_shapes == ((1, 4, 4, 4),)


@pytest.mark.parametrize("graph_name, expected", [("main_graph", "kws"), ("torch_jit", "kws"), ("encoder", "encoder")])
def test_exporter_default_graph_name_gives_way_to_the_file_name(tmp_path: Path, graph_name: str,
                                                                 expected: str) -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    path = save(tmp_path / "kws.onnx", [node], [("x", FLOAT, [1, 4])], [("y", FLOAT, None)], graph_name=graph_name)
    assert import_onnx(path).name == expected


def test_compile_warns_of_the_dims_it_fixes_too(tmp_path: Path) -> None:
    """`dse compile` quantizes before it imports: it fixed a symbolic batch dim to 1 without a word."""
    from compiler.quantize import quantize_model

    path = _conv(tmp_path / "dyn.onnx", ["batch", 8, 6, 6])
    with pytest.warns(UserWarning, match=rf"{re.escape(str(path))}: symbolic input dims fixed to 1: x\[0\]=batch"):
        quantize_model(path, tmp_path / "dyn.q.onnx")
