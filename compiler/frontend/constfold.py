"""Shape inference and constant folding, alternated until nothing changes.

Legacy (TorchScript) exports compute reshape targets at run time (``Shape -> Gather -> Concat ->
Reshape``); ONNX shape inference alone cannot see through all of that. So each round infers shapes,
then evaluates every node whose inputs are all constants (with ``onnx.reference``, one node at a time)
and replaces it by an initializer, which lets the next round infer further. Constants too large to be
worth evaluating (weights made by ConstantOfShape, dequantized weights) stay *static without value*.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from compiler.frontend.einsum import equation_problem
from compiler.frontend.graphinfo import Graph, TensorInfo, note_bits
from compiler.frontend.msops import add_shapes
from compiler.frontend.optable import CONSTANT_OPS, kind_of
from compiler.frontend.reading import FOLD_LIMIT, weight_inputs
from costmodel.errors import UserError

MAX_ROUNDS = 8
_DEFAULT_GRAPH_NAMES = frozenset({"", "main_graph", "torch_jit", "torch-jit-export"})
"""Graph names PyTorch's exporters give every model (current, 1.x and older TorchScript exports)."""
_SHAPE_OPS = frozenset({"Shape", "Size"})
_EXPANDING = frozenset({"ConstantOfShape", "Expand", "Tile", "Range", "Resize", "Upsample", "Pad"})
_NONDETERMINISTIC = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                               "Multinomial", "Bernoulli"})


def constants_to_initializers(model: Any) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Move tensor-valued Constant nodes (real-world files keep weights in them) into initializers."""
    producers: dict[str, tuple[str, tuple[str, ...]]] = {}
    for node in list(model.graph.node):
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and len(node.attribute) == 1 \
                and node.attribute[0].name == "value":
            tensor = model.graph.initializer.add()
            tensor.CopyFrom(node.attribute[0].t)
            tensor.name = node.output[0]
            producers[node.output[0]] = (node.name, ())
            model.graph.node.remove(node)
    return producers


def resolve(model: Any, path: Path, allow_unsupported: bool,
            producers: dict[str, tuple[str, tuple[str, ...]]]) -> Graph:
    """Infer shapes and fold constants; raise UserError on unsupported ops unless allowed."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    model.ir_version = max(model.ir_version, 4)  # IR 3 ignores initializers that are not graph inputs
    weights = set(weight_inputs(model.graph))
    unsupported = _check_supported(model, weights, path, allow_unsupported)
    tensors: dict[str, TensorInfo] = {}
    bits: dict[str, int] = {}
    for round_ in range(MAX_ROUNDS + 1):
        inferred = _infer(model, path, strict=not unsupported)
        tensors = _tensor_table(inferred, weights)
        if round_ == MAX_ROUNDS:
            break
        folded = _fold_pass(model, tensors, producers, bits, opset)
        if not (add_shapes(model, tensors) or folded):
            break
    for node in model.graph.node:
        note_bits(node, tensors, bits)
        if node.output and all(tensors.get(o, TensorInfo(None)).static for o in node.output if o):
            for o in node.output:
                producers[o] = (node.name, tuple(node.input))
    initialized = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initialized and i.name not in weights]
    return Graph(name=_model_name(model.graph.name, path), path=str(path), opset=opset, nodes=list(model.graph.node),
                 tensors=tensors, inputs=inputs, outputs=[o.name for o in model.graph.output],
                 static_producers=producers, bits=bits)


def _model_name(graph_name: str, path: Path) -> str:
    """The graph's name, unless it is empty or an exporter's default (every PyTorch export would be
    called ``main_graph``): then the file's stem."""
    return path.stem if graph_name in _DEFAULT_GRAPH_NAMES else graph_name


def _static_names(model: Any, weights: set[str]) -> set[str]:
    """Constant tensors, found without shapes (Shape/Size of anything counts as constant here)."""
    static = {t.name for t in model.graph.initializer} | weights
    for node in model.graph.node:
        if _node_is_static(node, lambda t: t in static, lambda t: True):
            static.update(o for o in node.output if o)
    return static


def _node_is_static(node: Any, is_static: Any, shape_known: Any) -> bool:
    if node.op_type in CONSTANT_OPS:
        return True
    if node.op_type in _NONDETERMINISTIC or any(a.type in (5, 10) for a in node.attribute):  # GRAPH(S)
        return False
    if node.op_type in _SHAPE_OPS:
        return shape_known(node.input[0])
    ins = [t for t in node.input if t]
    return bool(ins) and all(is_static(t) for t in ins)


def refuse_unsupported(model: Any, path: Path) -> None:
    """UserError naming the first node whose op accel-dse does not support. ``dse compile`` asks before
    onnxruntime's quantizer sees the graph (which would print its own traceback, then fail)."""
    _check_supported(model, set(weight_inputs(model.graph)), path, allow=False, hint="")


ALLOW_HINT = "allow_unsupported, the CLI's --allow-unsupported, makes it a zero-cost host layer"
"""How to map around an op the front end does not support (read from the API and the CLI alike)."""


def _check_supported(model: Any, weights: set[str], path: Path, allow: bool,
                     hint: str = f" ({ALLOW_HINT})") -> list[str]:
    static = _static_names(model, weights)
    bad = []
    for i, node in enumerate(model.graph.node):
        if node.op_type == "Einsum" and node.domain in ("", "ai.onnx") and (why := equation_problem(node)):
            raise UserError(f"{path}: node {_label(node, i)} (Einsum): {why}")
        if all(o in static for o in node.output if o):
            continue
        if kind_of(node.op_type, node.domain) is None:
            op = f"{node.domain}::{node.op_type}" if node.domain not in ("", "ai.onnx") else node.op_type
            if not allow:
                raise UserError(f"{path}: node {_label(node, i)} has op type {op}, which accel-dse does not "
                                f"support{hint}")
            warnings.warn(f"{path}: unsupported op {op} (node {node.name!r}) imported as a zero-cost host layer",
                          stacklevel=4)
            bad.append(node.name)
    return bad


def _label(node: Any, index: int) -> str:
    return repr(node.name) if node.name else f"#{index} (unnamed)"


def _infer(model: Any, path: Path, strict: bool) -> Any:
    import onnx

    errors = (onnx.shape_inference.InferenceError, onnx.checker.ValidationError, RuntimeError, ValueError)
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=strict, data_prop=True)
    except errors as exc:  # they carry the node in their text
        text = " ".join(str(exc).split())
        raise UserError(f"{path}: shape inference failed: {text[:300]}") from None


def _tensor_table(model: Any, weights: set[str]) -> dict[str, TensorInfo]:
    from onnx import numpy_helper

    table: dict[str, TensorInfo] = {}
    for vi in (*model.graph.input, *model.graph.value_info, *model.graph.output):
        tt = vi.type.tensor_type
        shape = None
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shape = tuple(int(d.dim_value) for d in tt.shape.dim)
        old = table.get(vi.name)
        if old is None or old.shape is None:
            table[vi.name] = TensorInfo(shape, tt.elem_type, static=vi.name in weights)
    for t in model.graph.initializer:
        info = TensorInfo(tuple(int(d) for d in t.dims), t.data_type, static=True)
        n = info.numel
        if n <= FOLD_LIMIT and (n == 0 or any(len(getattr(t, f)) for f in ("raw_data", "float_data", "int32_data",
                                                                            "int64_data", "double_data",
                                                                            "uint64_data"))):
            info.value = numpy_helper.to_array(t)
        table[t.name] = info
    for node in model.graph.node:
        static = _node_is_static(node, lambda t: t in table and table[t].static,
                                 lambda t: t in table and table[t].shape is not None)
        for o in node.output:
            if o:
                table.setdefault(o, TensorInfo(None)).static = static
    return table


def _fold_pass(model: Any, tensors: dict[str, TensorInfo], producers: dict, bits: dict[str, int],
               opset: int) -> bool:
    """Evaluate small constant nodes in order; replace them by initializers. True if any was folded."""
    from onnx import numpy_helper

    folded = []
    for node in model.graph.node:
        outs = [o for o in node.output if o]
        if not outs or not all(tensors[o].static for o in outs):
            continue
        values = _evaluate(node, tensors, opset)
        if values is None:
            continue
        note_bits(node, tensors, bits)
        for o, v in zip(node.output, values):
            if o:
                info = tensors[o]
                info.value, info.shape, info.dtype = v, tuple(v.shape), _onnx_dtype(v, info.dtype)
                producers[o] = (node.name, tuple(node.input))
        folded.append(node)
    if not folded:
        return False
    for node in folded:
        model.graph.node.remove(node)
        for o in node.output:
            if o:
                model.graph.initializer.append(numpy_helper.from_array(tensors[o].value, o))
    return True


def _evaluate(node: Any, tensors: dict[str, TensorInfo], opset: int) -> list[Any] | None:
    """Outputs of a constant node, or None when it is large, has an unvalued input, or fails."""
    import numpy as np

    if node.domain not in ("", "ai.onnx"):
        return None
    if node.op_type in _SHAPE_OPS:
        shape = tensors[node.input[0]].shape
        if shape is None:
            return None
        full = np.array(shape, dtype=np.int64)
        if node.op_type == "Size":
            return [np.array(int(np.prod(full)), dtype=np.int64)]
        attrs = {a.name: a.i for a in node.attribute}
        start, end = attrs.get("start", 0), attrs.get("end", len(shape))
        return [full[start:end]]
    for o in node.output:
        shape = tensors[o].shape if o else None
        if o and shape is None and node.op_type in _EXPANDING:
            return None  # could be huge (a weight made from its shape); evaluate only when its size is known
        if o and shape is not None and int(np.prod(shape)) > FOLD_LIMIT:
            return None
    feeds = {}
    for t in node.input:
        if t:
            value = tensors[t].value
            if value is None:
                return None
            feeds[t] = value
    from onnx.reference import ReferenceEvaluator

    try:
        values = list(ReferenceEvaluator(node, opsets={"": opset}).run(None, feeds))
    except (RuntimeError, ValueError, TypeError, KeyError, IndexError, AttributeError, NotImplementedError):
        # not evaluable here (exotic op or attribute): it stays a static node without value
        return None
    return values if all(np.asarray(v).size <= FOLD_LIMIT for v in values) else None


def _onnx_dtype(value: Any, fallback: int) -> int:
    from onnx import helper

    try:
        return helper.np_dtype_to_tensor_dtype(value.dtype)
    except (KeyError, TypeError, ValueError):
        return fallback
