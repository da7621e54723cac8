"""ONNX files not made by this project: the model-zoo 'light' models the onnx wheel ships (opset 9,
IR 3, weights made by ConstantOfShape from stored shapes, Caffe2 names).

The independent count runs the model in onnxruntime with every Conv/Gemm input and output exposed,
and computes MACs from the tensors onnxruntime actually produced (weights included: they are ConstantOfShape outputs):
none of the importer's shape inference or conv arithmetic. The same count runs over the other
models of onnx's backend test data that contain MAC ops.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from compiler.frontend import import_onnx

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = ["light_resnet50", "light_squeezenet", "light_shufflenet", "light_inception_v1"]


COMPUTE = ("Conv", "ConvTranspose", "Gemm", "MatMul")


def _run_exposed(path: Path) -> tuple[onnx.ModelProto, list, dict[str, np.ndarray]]:
    """Run ``path`` in onnxruntime on zeros with every input and output of a MAC op exposed."""
    model = onnx.load(str(path))
    g = model.graph
    initializers = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    compute = [n for n in g.node if n.op_type in COMPUTE]
    wanted = {t for n in compute for t in (*n.input, n.output[0]) if t and t not in initializers}
    known = {o.name for o in g.output}
    g.output.extend(helper.make_empty_tensor_value_info(t) for t in sorted(wanted - known))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    dtypes = {"tensor(float)": np.float32, "tensor(int64)": np.int64}
    feeds = {i.name: np.zeros([d if isinstance(d, int) else 1 for d in i.shape], dtypes.get(i.type, np.float32))
             for i in sess.get_inputs() if i.name not in initializers}
    names = [o.name for o in sess.get_outputs()]
    values = dict(zip(names, sess.run(names, feeds)))
    values.update(initializers)
    return model, compute, values


def _independent_macs(path: Path) -> int:
    """MACs from the tensors onnxruntime produced: a conv output element is a dot product over
    C/groups x taps (= W.shape[1:]); a transposed conv scatters every input element over
    C_out/groups x taps; a Gemm/MatMul output element is a K-long dot product."""
    _, compute, v = _run_exposed(path)
    macs = 0
    for n in compute:
        a, w, out = v[n.input[0]], v[n.input[1]], v[n.output[0]]
        if n.op_type == "Conv":
            macs += out.size * math.prod(w.shape[1:])
        elif n.op_type == "ConvTranspose":
            macs += a.size * math.prod(w.shape[1:])
        else:
            trans_a = any(x.name == "transA" and x.i for x in n.attribute)
            macs += out.size * (a.shape[0] if trans_a else a.shape[-1])
    return macs


def _independent_mac_params(path: Path) -> int:
    """Conv/Gemm weights + bias, a folded BatchNormalization giving a conv without bias K biases."""
    model, compute, v = _run_exposed(path)
    bn_after = {n.input[0] for n in model.graph.node if n.op_type == "BatchNormalization"}
    params = 0
    for n in compute:
        w = v[n.input[1]].shape
        bias = v[n.input[2]].size if len(n.input) > 2 and n.input[2] else 0
        params += math.prod(w) + (bias or (w[0] if n.output[0] in bn_after else 0))
    return params


@pytest.mark.parametrize("name", MODELS)
def test_light_model_matches_onnxruntime_count(name):
    path = LIGHT / f"{name}.onnx"
    wl = import_onnx(path)
    assert wl.total_macs == _independent_macs(path)
    assert sum(x.params for x in wl.mac_layers()) == _independent_mac_params(path)
    model = onnx.load(str(path))
    n_compute = sum(n.op_type in ("Conv", "Gemm") for n in model.graph.node)
    assert len(wl.mac_layers()) == n_compute
    assert not any(x.op_type == "BatchNormalization" for x in wl.layers())  # all folded into convs


def test_resnet50_matches_the_published_architecture():
    # ResNet-50 (He et al. 2016, Table 1): 53 convs + 1 fc; the fc is 2048 -> 1000.
    wl = import_onnx(LIGHT / "light_resnet50.onnx")
    convs = [x for x in wl.mac_layers() if x.op_type == "Conv"]
    assert len(convs) == 53
    fc = next(x for x in wl.mac_layers() if x.op_type == "Gemm")
    assert (fc.macs, fc.weights, fc.bias) == (2048 * 1000, 2048 * 1000, 1000)
    first = convs[0].problem.sizes  # conv1: 7x7/2, 64 filters, 224 -> 112
    assert (first["K"], first["C"], first["R"], first["P"]) == (64, 3, 7, 112)
    assert sum(x.post_ops == ["Relu"] for x in wl.layers()) == 49  # every Relu fused (into convs or Sums)


BACKEND_MODELS = sorted((LIGHT.parent).glob("**/*.onnx"))


def _countable(path: Path) -> bool:
    """Has MAC ops the importer supports, and onnxruntime can run it (it has no opset-6 Gemm)."""
    model = onnx.load(str(path))
    ops = {n.op_type for n in model.graph.node}
    opset = next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    return "Conv3d" not in path.parent.name and bool(ops & set(COMPUTE)) and not ("Gemm" in ops and opset < 7)


@pytest.mark.parametrize("path", [p for p in BACKEND_MODELS if _countable(p) and p.parent.name != "light"],
                         ids=lambda p: p.parent.name)
def test_backend_model_macs_match_onnxruntime(path):
    # pytorch-converted / pytorch-operator / real / simple models: 1-D and 2-D convs, transposed,
    # grouped, strided, dilated, padded; Linear as Gemm and MatMul
    assert import_onnx(path).total_macs == _independent_macs(path)


def test_every_model_shipped_with_onnx_imports_or_fails_cleanly():
    """All ~150 models of onnx's backend test data (pytorch-converted, pytorch-operator, simple, real,
    light): the default import either succeeds or raises UserError (3-D convs, sequence and string
    ops); with allow_unsupported every one of them imports."""
    import warnings

    from costmodel.errors import UserError

    assert len(BACKEND_MODELS) > 100
    refused = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for path in BACKEND_MODELS:
            try:
                import_onnx(path)
            except UserError as exc:
                refused.append((path.parent.name, str(exc)))
            wl = import_onnx(path, allow_unsupported=True)
            assert wl.layers() or wl.folded
    assert refused and all("not support" in why for _, why in refused)
    assert {"test_Conv3d", "test_sequence_model1"} <= {name for name, _ in refused}
