"""``import_onnx``: an ONNX file -> a :class:`Workload` (see docs/frontend.md for the rules)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import networkx as nx

from compiler.frontend.constfold import ALLOW_HINT, constants_to_initializers, resolve
from compiler.frontend.context import Context, UnsupportedVariant
from compiler.frontend.fusion import fuse
from compiler.frontend.graphinfo import Graph
from compiler.frontend.mac_layers import build_mac
from compiler.frontend.optable import kind_of
from compiler.frontend.reading import fix_input_dims, read_model, skeletonize_weights
from compiler.frontend.vector_layers import build_host, build_layout, build_quant, build_vector
from compiler.frontend.workload import Layer, Workload
from costmodel.errors import FieldError, UserError, placed

_BUILDERS = {"mac": build_mac, "vector": build_vector, "layout": build_layout, "quant": build_quant,
             None: build_host}


def import_onnx(path: str | Path, *, allow_unsupported: bool = False,
                input_shapes: dict[str, tuple[int, ...]] | None = None) -> Workload:
    """Import an ONNX model as a workload graph; weights are not needed, only shapes.

    ``input_shapes`` overrides the declared shapes of graph inputs (by name); otherwise symbolic
    input dims are set to 1.

    Raises UserError for a file that is not ONNX or truncated, an unsupported op (unless
    ``allow_unsupported``), or shapes that cannot be inferred. Warnings (missing weights, fixed
    symbolic dims, host fallbacks) are issued with :func:`warnings.warn` and kept in ``.warnings``.
    """
    path = Path(path)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = read_model(path)
            producers = constants_to_initializers(model)
            masks = skeletonize_weights(model, path)
            fixed = fix_input_dims(model, path, input_shapes)
            graph = resolve(model, path, allow_unsupported, producers)
            graph.fixed_dims, graph.masks = fixed, masks
            workload = build_workload(graph, allow_unsupported)
    finally:  # also before an error: a warning (symbolic dims fixed to 1) often explains it
        notes = _reissue(caught, f"{path}:")
    workload.warnings.extend(notes)
    return workload


def _reissue(caught: list[warnings.WarningMessage], prefix: str) -> list[str]:
    """Warn again outside the recording block; return the importer's own warnings (``prefix``...)."""
    notes = []
    for w in caught:
        text = str(w.message)
        if text.startswith(prefix):
            notes.append(text)
            warnings.warn(text, UserWarning, stacklevel=3)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return notes


def build_workload(graph: Graph, allow_unsupported: bool = False) -> Workload:
    ctx = Context(graph)
    nodes = {n.name: n for n in graph.nodes}
    layers: list[Layer] = []
    for node in graph.nodes:
        if all(graph.is_static(o) for o in node.output if o):
            continue
        indices_static = node.op_type != "Gather" or graph.is_static(ctx.input(node, 1))
        kind = kind_of(node.op_type, node.domain, indices_static)
        try:
            layers.extend(_BUILDERS[kind](ctx, node))
        except FieldError as exc:  # a Problem constructor's complaint knows neither the file nor the node
            raise UserError(f"{ctx.where(node)}: {exc}{ctx.fixed_dims_hint()}") from None
        except UnsupportedVariant as exc:
            if not allow_unsupported:
                raise UserError(f"{exc} ({ALLOW_HINT})") from None
            warnings.warn(f"{exc}; imported as a zero-cost host layer", stacklevel=3)
            layers.extend(build_host(ctx, node))
        except UserError as exc:  # (a Problem's limits, e.g. 2**48 MACs, named neither the file nor the node)
            raise placed(exc, ctx.where(node)) from None
    layers = fuse(ctx, layers, nodes)
    folded = _attach_constants(graph, layers, nodes)
    return Workload(
        name=graph.name, graph=_digraph(ctx, layers), source=graph.path, folded=folded,
        inputs={t: graph.info(t).shape or () for t in graph.inputs},
        outputs={t: graph.info(t).shape or () for t in graph.outputs},
    )


def _attach_constants(graph: Graph, layers: list[Layer], nodes: dict[str, Any]) -> list[str]:
    """Name, in each layer's ``onnx_nodes``, the constant-making nodes that feed it (Constant,
    DequantizeLinear of weights, ConstantOfShape weights, shape plumbing). Returns the others."""
    claimed: set[str] = set()
    for layer in layers:
        stack = [t for n in list(layer.onnx_nodes) if n in nodes for t in nodes[n].input if graph.is_static(t)]
        while stack:
            t = stack.pop()
            made_by = graph.static_producers.get(t)
            if made_by is None or made_by[0] in claimed:
                continue
            claimed.add(made_by[0])
            layer.onnx_nodes.append(made_by[0])
            stack.extend(made_by[1])
    every = {name for name, _ in graph.static_producers.values()}
    return sorted(every - claimed)


def _digraph(ctx: Context, layers: list[Layer]) -> nx.DiGraph:
    g = nx.DiGraph()
    producer: dict[str, tuple[str, tuple[int, ...]]] = {}
    for layer in layers:
        g.add_node(layer.name, layer=layer)
        for t, shape in zip(layer.outputs, layer.output_shapes):
            producer[t] = (layer.name, shape)
    for layer in layers:
        for t in layer.inputs:
            if t not in producer:
                continue
            src, shape = producer[t]
            size = 1
            for d in shape:
                size *= d
            nbytes = (size * ctx.output_bits(t) + 7) // 8  # (the width the producer writes: see Context.output_bits)
            if g.has_edge(src, layer.name):
                edge = g.edges[src, layer.name]
                edge["tensors"].append(t)
                edge["bytes"] += nbytes
            else:
                g.add_edge(src, layer.name, tensor=t, shape=shape, bytes=nbytes, tensors=[t])
    return g
