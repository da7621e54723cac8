"""Quantization path: an fp32 ONNX model (or a zoo name) becomes an int8 QDQ model, the reference.

Choice of types: per-channel symmetric int8 weights (zero point 0, so ``-x_zp * sum(w)`` folds
into the int32 bias exactly) in 7 bits (``reduce_range``: -64..64) and **uint8 (QUInt8)
activations**. Why 7-bit weights: on x86 CPUs without VNNI (AVX2 or AVX-512 only) onnxruntime's
uint8 x int8 kernels multiply with VPMADDUBSW, which saturates each pair of products to int16
(255 x 127 x 2 > 32767; onnxruntime's quantization guide names the issue and this remedy), so the
reference output of an 8-bit model depends on the CPU it runs on. With 7-bit weights no pair
exceeds 255 x 64 x 2 = 32640, and the reference is the exact integer arithmetic on every CPU.
Why uint8: onnxruntime's CPU provider fuses uint8 QDQ groups into its integer kernels (QLinearConv,
QGemm, QLinearAdd, QLinearAveragePool) for every node of the graphs we tried, whereas with int8
activations it inserts s8->u8 conversions and leaves some Conv nodes in fp32 (DQ -> Conv -> Q),
whose float accumulation order cannot be reproduced bit for bit. The ISA reads uint8 activations
natively (GEMM dtype u8, VEC ``u8``), so nothing is lost on the accelerator side.

Before quantizing, a ReduceMean over the two spatial axes of a 4-D tensor (with keepdims, what
PyTorch's ``adaptive_avg_pool2d(1)`` / ``mean((2, 3), keepdim=True)`` export) is rewritten as the
equivalent GlobalAveragePool. Why: the quantizer leaves ReduceMean in float (DQ -> ReduceMean -> Q),
which onnxruntime sums with Eigen's vectorized float reduction (an order that depends on the SIMD
width and the buffer's alignment), whereas GlobalAveragePool becomes QLinearGlobalAveragePool,
an exact int32 sum and one float32 requantization (MLAS) that the accelerator reproduces exactly.
The float model's function is unchanged; the quantized model written out is the reference.

A MatMul whose *first* operand is a constant (``M @ x``: a graph adjacency or mesh up-sampling
matrix, hand_tracking) gets that constant quantized per tensor as symmetric uint8
(``TensorQuantOverrides``: QUInt8, symmetric; zero point 64 in the 7-bit range). Why: per-channel
int8 (the default for weights) puts the scales on the matrix's K axis, and even per-tensor int8 has
no integer kernel for int8 x uint8, so onnxruntime would run that MatMul in float; uint8 x uint8
becomes QLinearMatMul, and ``A - zero point`` is exactly int8 for the accelerator's GEMM.

Calibration uses seeded standard-normal inputs (or the user's ``.npy`` arrays), MinMax method.
An already-quantized model (any QuantizeLinear/DequantizeLinear/QLinear* node) is kept as it is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from compiler.frontend.constfold import refuse_unsupported
from compiler.frontend.reading import check_opset, check_references, symbolic_input_dims
from costmodel.errors import UserError

WEIGHT_MAX = 64
"""Largest |int8 weight| that ``reduce_range`` gives (module docstring, *Why 7-bit weights*)."""
_QUANT_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QGemm", "QLinearAdd"}
_ONNX_FLOAT = {1: np.float32}


@contextlib.contextmanager
def _quiet(logger: logging.Logger) -> Iterator[None]:
    """``logger`` silenced: onnxruntime's pre-processing logs a traceback when its graph optimizer
    fails, then goes on without it (and a model it cannot load fails again, in one line of ours)."""
    was = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = was


def is_quantized(model) -> bool:
    """True when the graph already carries quantization (QDQ or QLinear operators)."""
    return any(n.op_type in _QUANT_OPS for n in model.graph.node)


def _input_specs(model) -> dict[str, tuple[tuple[int, ...], int]]:
    inits = {i.name for i in model.graph.initializer}
    specs = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        t = vi.type.tensor_type
        dims = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else 1 for d in t.shape.dim)
        specs[vi.name] = (dims, t.elem_type)
    return specs


def calibration_feeds(model, calibration: Mapping[str, np.ndarray] | None, seed: int,
                      samples: int = 4) -> list[dict[str, np.ndarray]]:
    """The calibration set: the user's arrays (leading axis = samples if one more axis than the
    input) or ``samples`` seeded standard-normal draws per input."""
    specs = _input_specs(model)
    for name, (_, elem) in specs.items():
        if elem not in _ONNX_FLOAT:
            raise UserError(f"model input {name!r} has ONNX element type {elem}, expected float32 for quantization "
                            "(give an already-quantized QDQ model instead)")
    if calibration is not None and not isinstance(calibration, dict):
        raise TypeError(f"calibration: expected a dict of input name -> array (the model's inputs: "
                        f"{sorted(specs)}), got {type(calibration).__name__}")
    if calibration is not None:
        unknown = sorted(set(calibration) - set(specs))
        if unknown:
            raise UserError(f"calibration: the model has no input(s) {unknown}; its inputs are {sorted(specs)}")
        missing = sorted(set(specs) - set(calibration))
        if missing:
            raise UserError(f"calibration data lacks model input(s) {missing}; the model's inputs are {sorted(specs)}")
        feeds: list[dict[str, np.ndarray]] = []
        for name, (shape, _) in specs.items():
            raw = np.asarray(calibration[name])
            if raw.dtype.kind not in "iuf":  # (complex would lose its imaginary part, bool pass as 0/1: silently)
                raise UserError(f"calibration input {name!r}: {raw.dtype} values; expected real numbers "
                                f"(float or integer)")
            a = raw.astype(np.float32)
            batch = a[None] if a.shape == shape else a
            if batch.shape[1:] != shape:
                raise UserError(f"calibration input {name!r}: shape {a.shape}, expected {shape} or "
                                f"(samples, {', '.join(map(str, shape))})")
            if not len(batch):
                raise UserError(f"calibration input {name!r}: no samples (shape {a.shape})")
            if not np.isfinite(batch).all():  # the quantizer's scales would be NaN: it fails obscurely
                raise UserError(f"calibration input {name!r}: {int((~np.isfinite(batch)).sum())} elements are "
                                "NaN or infinite; calibration needs finite values")
            if batch.min() == batch.max():  # (accepted: a constant input is legal, but rarely what was meant)
                warnings.warn(f"calibration input {name!r}: every value is {float(batch.flat[0])!r}, so the "
                              "quantizer has no range to fit: real inputs would fall on a few int8 codes",
                              UserWarning, stacklevel=2)
            for i, sample in enumerate(batch):
                if i == len(feeds):
                    feeds.append({})
                feeds[i][name] = sample
        return feeds
    rng = np.random.default_rng(seed)
    return [{n: rng.standard_normal(s).astype(np.float32) for n, (s, _) in specs.items()} for _ in range(samples)]


def _unusable_scale(qmodel) -> str | None:
    """The first QuantizeLinear / DequantizeLinear scale that is not a finite positive number, as
    ``tensor 'x' the scale inf``, else None."""
    from onnx import numpy_helper

    inits = {t.name: t for t in qmodel.graph.initializer}
    for node in qmodel.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear") and len(node.input) > 1 and node.input[1] in inits:
            scale = numpy_helper.to_array(inits[node.input[1]])
            bad = scale[~(np.isfinite(scale) & (scale > 0))]
            if bad.size:
                return f"tensor {node.input[0]!r} the scale {bad.flat[0]}"
    return None


def _spatial_means_as_gap(model) -> int:
    """Rewrite ReduceMean(axes = H, W of a 4-D tensor, keepdims = 1) as GlobalAveragePool, in place;
    returns how many nodes were rewritten."""
    import onnx
    from onnx import helper, numpy_helper

    inferred = onnx.shape_inference.infer_shapes(model)
    rank = {vi.name: len(vi.type.tensor_type.shape.dim) for vi in (*inferred.graph.value_info, *inferred.graph.input)
            if vi.type.tensor_type.HasField("shape")}
    inits = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    count, dropped = 0, set()
    for k, node in enumerate(model.graph.node):
        if node.op_type != "ReduceMean" or rank.get(node.input[0]) != 4:
            continue
        at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        axes = at.get("axes")
        if axes is None and len(node.input) > 1 and node.input[1] in inits:
            axes = inits[node.input[1]].tolist()
        if not at.get("keepdims", 1) or axes is None or sorted(int(a) % 4 for a in axes) != [2, 3]:
            continue
        dropped.update(node.input[1:])  # before CopyFrom: ``node`` is the graph's own message
        model.graph.node[k].CopyFrom(helper.make_node("GlobalAveragePool", [node.input[0]], list(node.output),
                                                      name=node.name))
        count += 1
    used = {i for n in model.graph.node for i in n.input}
    for init in [i for i in model.graph.initializer if i.name in dropped and i.name not in used]:
        model.graph.initializer.remove(init)  # the rewritten nodes' axes tensors (ORT warns about them)
    return count


def _const_lhs_overrides(path: Path) -> dict:
    """TensorQuantOverrides for MatMuls ``constant @ activation`` of the model at ``path``."""
    import onnx
    from onnxruntime.quantization import QuantType

    model = onnx.load(str(path))
    inits = {i.name for i in model.graph.initializer}
    return {n.input[0]: [{"quant_type": QuantType.QUInt8, "symmetric": True}] for n in model.graph.node
            if n.op_type == "MatMul" and n.input[0] in inits and n.input[1] not in inits}


def quantize_model(src: str | Path, dst: str | Path, *, calibration: Mapping[str, np.ndarray] | None = None,
                   seed: int = 0) -> Path:
    """Write the int8 QDQ model of ``src`` to ``dst`` (atomically); a quantized ``src`` is copied."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    src, dst = Path(src), Path(dst)
    try:
        model = onnx.load(str(src))
    except Exception as exc:  # noqa: BLE001 - any parse failure is the user's file
        raise UserError(f"{src}: cannot load the ONNX model ({str(exc).splitlines()[0] if str(exc) else exc})") from None
    if not model.graph.node:  # an empty file parses as an empty model; onnxruntime then fails obscurely
        raise UserError(f"{src}: the ONNX model has no graph nodes (an empty or truncated file?)")
    check_references(model.graph, src)
    check_opset(model, src)
    refuse_unsupported(model, src)
    if fixed := symbolic_input_dims(model):  # (as the importer says it: `dse map` and `dse compile` alike)
        warnings.warn(f"{src}: symbolic input dims fixed to 1: {', '.join(fixed)}", UserWarning, stacklevel=2)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    os.close(fd)
    try:
        if is_quantized(model):
            onnx.save(model, tmp)
        else:
            feeds = calibration_feeds(model, calibration, seed)

            class _Reader(CalibrationDataReader):
                def __init__(self) -> None:
                    self._it = iter(feeds)

                def get_next(self):
                    return next(self._it, None)

            with tempfile.TemporaryDirectory() as work:
                pre, fp32 = Path(work) / "pre.onnx", src
                if _spatial_means_as_gap(model):
                    fp32 = Path(work) / "gap.onnx"
                    onnx.save(model, str(fp32))
                try:
                    with _quiet(logging.getLogger("onnxruntime.quantization.shape_inference")):
                        quant_pre_process(str(fp32), str(pre), skip_symbolic_shape=True)
                    extra = {"WeightSymmetric": True}
                    if overrides := _const_lhs_overrides(pre):
                        extra["TensorQuantOverrides"] = overrides
                    # (numpy's warnings from inside its calibrator, e.g. "All-NaN axis" when activations
                    # overflow, are not the user's lines: the failure below says what happened)
                    with warnings.catch_warnings(), np.errstate(all="ignore"):
                        warnings.simplefilter("ignore", RuntimeWarning)
                        quantize_static(str(pre), tmp, _Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                                        reduce_range=True, extra_options=extra)
                except UserError:
                    raise
                except Exception as exc:  # noqa: BLE001 - ORT's quantizer rejects the graph: say why
                    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    msg = re.sub(r"Load model from \S+ failed:", "", msg)  # (a temp file of its own)
                    given = (" with the given calibration data (are its values in the range the model expects? "
                             "activations past float32's range fail)") if calibration is not None else ""
                    raise UserError(f"{src}: onnxruntime.quantization cannot quantize this graph{given} ({msg})") from None
            qmodel = onnx.load(tmp)
            if bad := _unusable_scale(qmodel):  # (found here, not as an io tensor's scale in the lowering)
                raise UserError(f"{src}: quantization gave {bad}: the calibration data's activations leave "
                                "float32's range" + ("" if calibration is not None else " on random inputs"))
            if not any(n.op_type == "QuantizeLinear" for n in qmodel.graph.node):
                raise UserError(f"{src}: quantization produced no QuantizeLinear node: the graph has no op "
                                "onnxruntime quantizes (Conv, MatMul, Gemm, Add, pooling)")
        os.replace(tmp, dst)
    finally:
        Path(tmp).unlink(missing_ok=True)
    return dst
