"""Reading an ONNX file into a ModelProto the importer can trust: parse errors, truncation,
missing or stripped weights, symbolic input dims and node order are dealt with here.

Weights are never needed for design-space exploration, only their shapes. So every large tensor
is kept as a *skeleton* (dims and type, no data): shape inference then runs on a few kilobytes,
whatever the model's size, and a model without its weight data imports the same way.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from compiler.frontend.optable import PARAM_INPUT_SLOTS
from costmodel.errors import UserError

FOLD_LIMIT = 1 << 16
"""Constants with at most this many elements keep their values (shape plumbing, scalars, small tables)."""

_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data")


def read_model(path: Path) -> Any:
    """Parse ``path``; raise UserError when it is missing, not ONNX, or truncated."""
    import onnx
    from google.protobuf.message import DecodeError

    if not path.is_file():
        raise UserError(f"{path}: {'a folder, not an ONNX file' if path.is_dir() else 'no such file'}")
    data = path.read_bytes()
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise UserError(f"{path}: not an ONNX model, or truncated: {len(data)} bytes do not parse as an "
                        f"ONNX protobuf ({type(exc).__name__})") from None
    if model.ir_version <= 0 or not model.HasField("graph") or not model.graph.node:
        raise UserError(f"{path}: not an ONNX model: no ir_version or no graph nodes in {len(data)} bytes")
    if model.functions:  # model-local functions (some exporters wrap blocks in them): inline them
        import onnx.inliner

        model = onnx.inliner.inline_local_functions(model)
    _name_nodes(model.graph)
    check_references(model.graph, path)
    _topological_sort(model.graph, path)
    return model


def _name_nodes(graph: Any) -> None:
    """Give every node a unique, non-empty name (it becomes the layer's name). A node keeps its own
    name when no earlier node has it; the others (unnamed, or a repeat) get one no node has, so a
    unique name in the file stays the name of its node (``--layer x_1`` had picked a repeat of
    ``x`` renamed x_1 over the node the file calls x_1)."""
    nodes = list(graph.node)
    kept: set[str] = set()
    renamed = []
    for i, node in enumerate(nodes):
        if node.name and node.name not in kept:
            kept.add(node.name)
        else:
            renamed.append(i)
    for i in renamed:
        node = nodes[i]
        name = node.name or f"{node.op_type}_{i}"
        while name in kept:
            name = f"{name}_{i}"
        kept.add(name)
        node.name = name


def check_references(graph: Any, path: Path) -> None:
    """Every tensor a node reads, and every graph output, is defined, and once (a truncated or
    hand-edited file fails here with the node's name, not deep inside shape inference or
    onnxruntime; a tensor written twice had been read as the last writer's)."""
    defined = {"", *(i.name for i in graph.input), *(t.name for t in graph.initializer)}
    names = [node.name or f"{node.op_type}_{i}" for i, node in enumerate(graph.node)]  # (as _name_nodes names them)
    writer: dict[str, str] = {}
    for name, node in zip(names, graph.node, strict=True):
        for o in node.output:
            if o in writer or (o and o in defined):
                first = f"node {writer[o]!r}" if o in writer else "a graph input or initializer"
                raise UserError(f"{path}: node {name!r} ({node.op_type}) writes tensor {o!r}, which {first} "
                                "defines too (each tensor has one definition)")
            if o:
                writer[o] = name
    defined.update(writer)
    sparse = {t.values.name for t in graph.sparse_initializer}
    for name, node in zip(names, graph.node, strict=True):
        for t in node.input:
            if t in sparse and t not in defined:  # (valid ONNX, which this file had called corrupt)
                raise UserError(f"{path}: node {name!r} ({node.op_type}) reads {t!r}, a sparse initializer; "
                                "those are not supported: store it as a dense initializer")
            if t not in defined:
                raise UserError(f"{path}: node {name!r} ({node.op_type}) reads tensor {t!r} that no node, "
                                f"initializer or graph input defines (truncated or corrupt file?)")
    for o in graph.output:
        if o.name not in defined:
            raise UserError(f"{path}: graph output {o.name!r} is not produced by any node (truncated or corrupt file?)")


def check_opset(model: Any, path: Path) -> None:
    """For the compiler, whose quantizer and reference run the model in onnxruntime: its ai.onnx
    opset is one the installed onnx knows (onnxruntime supports the same released opsets); a newer
    one is refused in one line. (Design-space exploration reads only shapes, and does not ask.)"""
    import onnx.defs

    newest = onnx.defs.onnx_opset_version()
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    if opset > newest:
        raise UserError(f"{path}: opset {opset} is newer than the {newest} this toolkit's onnx knows; export the "
                        f"model with opset {newest} or lower")


def _topological_sort(graph: Any, path: Path) -> None:
    """Reorder nodes producers-first (ONNX requires it; some writers do not comply), keeping the
    file's order wherever the data flow allows: the ready node that comes first in the file goes
    next (a queue had moved an independent node ahead of a valid file's next one, and the layers'
    order, whose ties follow the file, with it)."""
    import heapq

    producer = {o: i for i, n in enumerate(graph.node) for o in n.output if o}
    nodes = list(graph.node)
    deps = [{producer[t] for t in n.input if t in producer} for n in nodes]
    order: list[int] = []
    users: dict[int, list[int]] = {}
    for i, d in enumerate(deps):
        for j in d:
            users.setdefault(j, []).append(i)
    waiting = [len(d) for d in deps]
    ready = [i for i in range(len(nodes)) if not waiting[i]]
    heapq.heapify(ready)
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users.get(i, []):
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(ready, u)
    if len(order) != len(nodes):
        done = set(order)
        stuck = next(nodes[i] for i in range(len(nodes)) if i not in done)
        raise UserError(f"{path}: the graph has a cycle through node {stuck.name!r} ({stuck.op_type})")
    if order != list(range(len(nodes))):
        del graph.node[:]
        graph.node.extend(nodes[i] for i in order)


def _has_data(t: Any) -> bool:
    return any(len(getattr(t, f)) for f in _DATA_FIELDS)


def _numel(t: Any) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


MASK_FLOOR = -1e4
"""A float constant whose elements are all 0 or at most this (-inf, -1e9, float32's lowest: what
exporters write for a masked-out position) and not all 0 is an attention mask."""


def is_mask(value: Any) -> bool:
    """Whether a constant's values are an attention mask (booleans, or 0 / large negative): data
    the model was built with, not a parameter it learned (a causal mask had been counted as T x T
    parameters)."""
    import numpy as np

    a = np.asarray(value)
    if a.dtype == np.bool_:
        return a.size > 1
    if a.dtype.kind != "f" or a.size < 2:
        return False
    masked = a <= MASK_FLOOR
    return bool(masked.any() and (masked | (a == 0)).all())


def _stored_mask(t: Any) -> bool:
    """:func:`is_mask` of a large initializer's data, read in place (a weight, the usual large tensor,
    fails on its first elements: the model's weights are not copied or scanned whole)."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    if t.data_type == onnx.TensorProto.BOOL:
        return True
    dtype = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16,
             onnx.TensorProto.DOUBLE: np.float64}.get(t.data_type)
    if dtype is None or not _has_data(t):
        return False
    if t.raw_data:
        a = np.frombuffer(t.raw_data, dtype=dtype)
        head = a[:4096]
        if not ((head == 0) | (head <= MASK_FLOOR)).all():
            return False
        return is_mask(a)
    return is_mask(numpy_helper.to_array(t))


def skeletonize_weights(model: Any, path: Path) -> set[str]:
    """Drop the data of large tensors, load small external ones; warn about missing weight data.
    Returns the names of the large tensors dropped that are attention masks (:func:`is_mask`)."""
    import onnx
    from onnx.external_data_helper import load_external_data_for_tensor

    base = path.parent
    missing_files: set[str] = set()
    masks: set[str] = set()
    stripped = 0
    for t in model.graph.initializer:
        n = _numel(t)
        if t.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in t.external_data if e.key == "location"), "")
            present = bool(location) and (base / location).is_file()
            if present and n <= FOLD_LIMIT:
                try:  # (a cut file, or a location outside the model's folder, which onnx refuses to read)
                    load_external_data_for_tensor(t, str(base))
                except (OSError, ValueError, onnx.checker.ValidationError) as exc:
                    why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    raise UserError(f"{path}: initializer {t.name!r}: cannot read its external data "
                                    f"{location!r}: {why}") from None
            else:
                if not present:
                    missing_files.add(location or "?")
                del t.external_data[:]
                t.data_location = onnx.TensorProto.DEFAULT
            continue
        if n > FOLD_LIMIT:
            if _stored_mask(t):
                masks.add(t.name)
            for f in _DATA_FIELDS:
                t.ClearField(f)
        elif n and not _has_data(t):
            stripped += 1
    initialized = {t.name for t in model.graph.initializer}
    stripped += len(set(weight_inputs(model.graph)) - initialized)
    if missing_files:
        warnings.warn(f"{path}: external weight file(s) {', '.join(sorted(missing_files))} not found; "
                      f"importing from shapes only", stacklevel=3)
    if stripped:
        warnings.warn(f"{path}: {stripped} weight tensor(s) have no data (stripped, or weights given as graph "
                      f"inputs); importing from shapes only", stacklevel=3)
    return masks


def weight_inputs(graph: Any) -> list[str]:
    """Graph inputs (without initializer) read only in weight slots: old models list weights as inputs.
    Not when the node's data input (slot 0) is itself constant: ``Gemm(q, x)`` with a parameter ``q`` and
    the graph input ``x`` in slot 1 (torch's ``F.linear(q, x)``) reads ``x`` as its data; taken for a
    weight, the layer vanished from the model (0 MACs)."""
    constant = {t.name for t in graph.initializer} | {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    slots: dict[str, list[bool]] = {}
    for node in graph.node:
        allowed = PARAM_INPUT_SLOTS.get(node.op_type, frozenset())
        if node.input and node.input[0] in constant:
            allowed = frozenset()
        for i, t in enumerate(node.input):
            if t:
                slots.setdefault(t, []).append(i in allowed)
    initialized = {t.name for t in graph.initializer}
    return [i.name for i in graph.input
            if i.name not in initialized and slots.get(i.name) and all(slots[i.name])]


def _symbolic_dims(model: Any) -> Iterator[tuple[str, int, Any]]:
    """(input name, axis, dim) of every data input's dim without a static size."""
    initialized = {t.name for t in model.graph.initializer}
    for inp in model.graph.input:
        if inp.name not in initialized:
            for k, dim in enumerate(inp.type.tensor_type.shape.dim):
                if not dim.HasField("dim_value") or dim.dim_value < 0:
                    yield inp.name, k, dim


def symbolic_input_dims(model: Any) -> list[str]:
    """The data inputs' dims without a static size, as ``name[k]=param`` (what the tools fix to 1)."""
    return [f"{name}[{k}]={dim.dim_param or '?'}" for name, k, dim in _symbolic_dims(model)]


def _dims(shape: Any, where: str) -> list[int]:
    """A shape given by the caller: positive integers (``2.5`` had been read as 2, ``-1`` as a
    symbolic dim set to 1, ``"a"`` had raised a bare ValueError)."""
    import numbers

    dims = list(shape) if isinstance(shape, (list, tuple)) else None
    if dims is None or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) and n > 0 for n in dims):
        raise UserError(f"{where}: {shape!r}: expected a list of positive integers")
    return [int(n) for n in dims]


def fix_input_dims(model: Any, path: Path, shapes: dict[str, tuple[int, ...]] | None = None) -> list[str]:
    """Give every data input a static shape: ``shapes[name]`` if given, else symbolic dims become 1
    (with a warning). Returns the dims that were fixed."""
    initialized = {t.name for t in model.graph.initializer}
    shapes = dict(shapes or {})
    for inp in model.graph.input:
        if inp.name in initialized:
            continue
        tt = inp.type.tensor_type
        if inp.name in shapes:
            dims = _dims(shapes.pop(inp.name), f"{path}: input_shapes[{inp.name!r}]")
            tt.ClearField("shape")
            for n in dims:
                tt.shape.dim.add().dim_value = n
        if not inp.type.HasField("tensor_type") or not tt.HasField("shape"):
            raise UserError(f"{path}: graph input {inp.name!r} has no shape, so layer shapes cannot be inferred "
                            f"(export the model with a static input shape)")
    fixed = symbolic_input_dims(model)
    for _, _, dim in list(_symbolic_dims(model)):
        dim.Clear()
        dim.dim_value = 1
    if shapes:
        raise UserError(f"{path}: input_shapes names {sorted(shapes)}, which are not graph inputs")
    if fixed:
        warnings.warn(f"{path}: symbolic input dims fixed to 1: {', '.join(fixed)}", stacklevel=3)
    del model.graph.value_info[:]
    for out in model.graph.output:
        if any(not d.HasField("dim_value") for d in out.type.tensor_type.shape.dim):
            out.type.tensor_type.ClearField("shape")
    return fixed
