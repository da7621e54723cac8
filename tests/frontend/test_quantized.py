"""Quantized graphs keep their integer widths in the layer Problems; float layers get 32 (16 for fp16)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from compiler.frontend import export_onnx, import_onnx
from tests.frontend.onnx_builders import const, save, weight


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.w = torch.nn.Parameter(torch.randn(16, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.conv(x))  # [1, 4, 4, 4]
        return y.reshape(1, 4, 16) @ self.w  # MatMul with a weight: fc rows 4, 16 -> 6


class _Reader(CalibrationDataReader):
    def __init__(self, name: str) -> None:
        rng = np.random.default_rng(0)
        self.batches = iter([{name: rng.standard_normal((1, 3, 4, 4)).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


@pytest.fixture(scope="module")
def float_model(tmp_path_factory):
    torch.manual_seed(0)
    return export_onnx(_Net(), (torch.randn(1, 3, 4, 4),), tmp_path_factory.mktemp("q") / "f.onnx", dynamo=False)


def _quantize(src, dst, fmt, act):
    name = onnx.load(str(src)).graph.input[0].name
    quantize_static(str(src), str(dst), _Reader(name), quant_format=fmt, activation_type=act,
                    weight_type=QuantType.QInt8, per_channel=fmt == QuantFormat.QDQ)
    return dst


def test_qdq_model_keeps_int8_widths(float_model, tmp_path):
    wl = import_onnx(_quantize(float_model, tmp_path / "qdq.onnx", QuantFormat.QDQ, QuantType.QInt8))
    macs = wl.mac_layers()
    assert [x.op_type for x in macs] == ["Conv", "MatMul"]
    # conv 4x3x3x3 on 4x4 = 4*3*9*16 = 1728; matmul rows 4 x 16 -> 6 = 384 (same as the float model)
    assert [x.macs for x in macs] == [1728, 384]
    for layer in macs:
        assert dict(layer.problem.params)["bits"] == (8, 8, 8)
        assert [t.bits for t in layer.problem.tensors] == [8, 8, 8]
        assert layer.problem.psum_bits == 32
        assert any("DequantizeLinear" in n for n in layer.onnx_nodes)  # weight DQ folded into the layer
    assert {x.kind for x in wl.layers() if "Quantize" in x.op_type} == {"quant"}


def test_float_model_is_32_bit(float_model):
    for layer in import_onnx(float_model).mac_layers():
        assert [t.bits for t in layer.problem.tensors] == [32, 32, 32]


def test_qoperator_model_uses_qlinear_ops(float_model, tmp_path):
    wl = import_onnx(_quantize(float_model, tmp_path / "qop.onnx", QuantFormat.QOperator, QuantType.QUInt8))
    macs = {x.op_type: x for x in wl.mac_layers()}
    assert set(macs) == {"QLinearConv", "QLinearMatMul"}
    assert macs["QLinearConv"].macs == 1728 and macs["QLinearMatMul"].macs == 384
    assert macs["QLinearConv"].params == 4 * 3 * 9 + 4  # int8 weights + int32 bias
    for layer in macs.values():
        assert [t.bits for t in layer.problem.tensors] == [8, 8, 8]


class _ContribNet(torch.nn.Module):
    """What quantize_static's QOperator format turns into com.microsoft contrib ops."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.c2 = torch.nn.Conv2d(4, 4, 1)
        self.fc = torch.nn.Linear(8, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.c1(x))
        z = torch.nn.functional.avg_pool2d(torch.sigmoid(self.c2(y)) * y + y, 2)  # QLinearMul/Add/AveragePool
        z = torch.cat([z, z], 1).mean((2, 3))  # QLinearConcat
        return torch.softmax(self.fc(z), -1)  # QGemm, QLinearSoftmax


def test_qoperator_contrib_ops_are_understood(tmp_path):
    torch.manual_seed(0)
    src = export_onnx(_ContribNet(), (torch.randn(1, 3, 4, 4),), tmp_path / "f.onnx", dynamo=False)
    wl = import_onnx(_quantize(src, tmp_path / "q.onnx", QuantFormat.QOperator, QuantType.QUInt8))
    ops = {x.op_type: x for x in wl.layers()}
    assert {"QGemm", "QLinearMul", "QLinearAdd", "QLinearAveragePool", "QLinearConcat", "QLinearSoftmax"} <= set(ops)
    # c1: 4*3*9*16 = 1728; c2: 4*4*16 = 256; fc: 8 -> 6 = 48
    assert sorted(x.macs for x in wl.mac_layers()) == [48, 256, 1728]
    assert ops["QGemm"].params == 8 * 6 + 6
    assert [t.bits for t in ops["QGemm"].problem.tensors] == [8, 8, 8]
    # AveragePool 2x2 on 1x4x4x4 -> 1x4x2x2: 16 outputs x 4 taps; the concat doubles the channels
    assert ops["QLinearAveragePool"].vector_ops == 64
    assert ops["QLinearConcat"].output_shapes == ((1, 8, 2, 2),)


def test_integer_ops_write_int32(tmp_path):
    nodes = [helper.make_node("ConvInteger", ["x", "w"], ["c"], name="conv"),
             helper.make_node("MatMulInteger", ["a", "b"], ["m"], name="mm")]
    inits = [const("w", np.ones((2, 1, 3, 3), np.int8)), const("b", np.ones((5, 2), np.uint8))]
    p = save(tmp_path / "i.onnx", nodes, [("x", TensorProto.UINT8, [1, 1, 5, 5]), ("a", TensorProto.UINT8, [3, 5])],
             [("c", TensorProto.INT32, None), ("m", TensorProto.INT32, None)], inits)
    layers = {x.name: x for x in import_onnx(p).mac_layers()}
    # conv: K2 C1 3x3 on a 3x3 output = 2*9*9 = 162; matmul 3x5 @ 5x2 = 30
    assert (layers["conv"].macs, layers["mm"].macs) == (162, 30)
    for layer in layers.values():
        assert [t.bits for t in layer.problem.tensors] == [8, 8, 32]


def test_fp16_layer_is_16_bit(tmp_path):
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="conv")
    p = save(tmp_path / "h.onnx", [node], [("x", TensorProto.FLOAT16, [1, 2, 4, 4])],
             [("y", TensorProto.FLOAT16, None)], [weight("w", 3, 2, 1, 1, dtype=np.float16)])
    (layer,) = import_onnx(p).layers()
    assert [t.bits for t in layer.problem.tensors] == [16, 16, 16]
