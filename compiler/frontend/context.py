"""What a layer builder needs to know about the graph around one node: shapes (with errors that
say which tensor of which node), constants, attributes, bit widths and parameter counts."""

from __future__ import annotations

import math
from typing import Any

from compiler.frontend.graphinfo import Graph
from compiler.frontend.optable import FUSIBLE, kind_of
from compiler.frontend.reading import is_mask
from compiler.frontend.workload import Layer
from costmodel.errors import UserError

_FOLDABLE_AFTER_MAC = FUSIBLE | {"BatchNormalization", "Add"}


class UnsupportedVariant(UserError):
    """A supported op used in a form that is not (3-D conv, 3-operand Einsum): with
    ``allow_unsupported`` it becomes a host layer like an unknown op."""


class Context:
    """Read-only helpers over a resolved :class:`Graph`."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.consumers = graph.consumers()
        self.graph_outputs = set(graph.outputs)
        self.producer = {o: n for n in graph.nodes for o in n.output if o}
        self._taken = {n.name for n in graph.nodes} | {t for n in graph.nodes for t in (*n.input, *n.output)}

    def fresh_name(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``, ... if a node or tensor of the file (or an earlier
        fresh name) has it. Why: the names a builder derives (an LSTM's ``X/cell``) could be a
        node's own in the file (tf2onnx names nodes so), and two layers of one name had merged
        into one graph node (a cycle, or a layer lost)."""
        name, i = base, 0
        while name in self._taken:
            i += 1
            name = f"{base}_{i}"
        self._taken.add(name)
        return name

    # ---- tensors -------------------------------------------------------------------------------
    def where(self, node: Any) -> str:
        return f"{self.graph.path}: node {node.name!r} ({node.op_type})"

    def fixed_dims_hint(self) -> str:
        """The likely cause of a shape mistake in a model exported with dynamic axes ("" if none were)."""
        fixed = self.graph.fixed_dims
        return (f"; the symbolic input dims {', '.join(fixed)} were fixed to 1: export the model with static "
                f"shapes, or pass input_shapes= to import_onnx") if fixed else ""

    def shape(self, node: Any, tensor: str) -> tuple[int, ...]:
        shape = self.graph.info(tensor).shape
        if shape is None:
            src = self.producer.get(tensor)
            if src is not None and kind_of(src.op_type, src.domain) is None:
                why = f"it comes from the unsupported op {src.op_type} (node {src.name!r}), which has no shape rule"
            else:
                why = "ONNX shape inference could not determine it (it may depend on values known only at run time)"
            raise UserError(f"{self.where(node)}: cannot infer the shape of tensor {tensor!r}: {why}")
        return shape

    def input(self, node: Any, i: int) -> str:
        return node.input[i] if len(node.input) > i else ""

    def is_static(self, tensor: str) -> bool:
        return self.graph.is_static(tensor)

    def value(self, tensor: str) -> Any:
        return self.graph.info(tensor).value if tensor else None

    def is_mask(self, tensor: str) -> bool:
        """A constant attention mask (reading.is_mask): not a parameter."""
        if tensor in self.graph.masks:
            return True
        value = self.value(tensor)
        return value is not None and is_mask(value)

    def numel(self, node: Any, tensor: str) -> int:
        return math.prod(self.shape(node, tensor)) if tensor else 0

    def check_shape(self, node: Any, tensor: str, expected: tuple[int | None, ...], layout: str,
                    role: str = "weight") -> None:
        """The shape of ``tensor`` (an operand in ``role``) against the one the node's input and
        attributes imply (None: any size). Why: a mismatch (which onnxruntime refuses) had been
        costed as the input's layer with the operand's parameter count."""
        got = self.shape(node, tensor)
        if len(got) != len(expected) or any(e is not None and g != e for g, e in zip(got, expected, strict=False)):
            want = ", ".join("?" if e is None else str(e) for e in expected)
            raise UserError(f"{self.where(node)}: {role} {tensor!r} has shape {list(got)}; the input and "
                            f"attributes imply [{want}] ({layout})")

    def check_broadcast(self, node: Any, tensor: str, target: tuple[int, ...], what: str, layout: str,
                        role: str) -> None:
        """``tensor`` (an operand in ``role``) must broadcast one way to ``target`` (``what``, of
        ``layout``): a Gemm's C, a LayerNorm's scale. Why: an operand of another length (which
        onnxruntime refuses) had been counted as parameters."""
        got = self.shape(node, tensor)
        if len(got) > len(target) or any(g not in (1, t) for g, t in zip(reversed(got), reversed(target))):
            raise UserError(f"{self.where(node)}: {role} {tensor!r} has shape {list(got)}; it must broadcast to "
                            f"{what} {list(target)} ({layout})")

    def static_numel(self, node: Any, tensor: str) -> int:
        """Elements of a constant input (0 if absent or not constant)."""
        return self.numel(node, tensor) if tensor and self.is_static(tensor) else 0

    # ---- attributes -----------------------------------------------------------------------------
    @staticmethod
    def attrs(node: Any) -> dict[str, Any]:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    # ---- bit widths -----------------------------------------------------------------------------
    def bits(self, tensor: str) -> int:
        return self.graph.tensor_bits(tensor)

    def output_bits(self, tensor: str) -> int:
        """Width the layer writes: a float output re-quantized right away (through a BatchNorm, bias or
        activation that will be fused) is stored at the quantized width."""
        users = self.consumers.get(tensor, [])
        if tensor in self.graph_outputs or not users:
            return self.bits(tensor)
        if all(u.op_type == "QuantizeLinear" for u in users):
            return min(self.bits(u.output[0]) for u in users)
        if len(users) == 1 and users[0].op_type in _FOLDABLE_AFTER_MAC and users[0].output:
            return self.output_bits(users[0].output[0])
        return self.bits(tensor)

    # ---- layer skeleton ---------------------------------------------------------------------------
    def layer(self, node: Any, kind: str, *, name: str | None = None, inputs: list[str] | None = None,
              outputs: list[str] | None = None, allow_unknown: bool = False) -> Layer:
        """A layer for ``node`` with its activation tensors, shapes and dtypes filled in."""
        ins = [t for t in (node.input if inputs is None else inputs) if t and not self.is_static(t)]
        outs = [t for t in (node.output if outputs is None else outputs)
                if t and (t in self.consumers or t in self.graph_outputs)]  # e.g. Dropout's unused mask
        dtypes = {t: self.graph.info(t).dtype_name for t in (*ins, *outs)}

        def shape(t: str) -> tuple[int, ...]:
            return (self.graph.info(t).shape or ()) if allow_unknown else self.shape(node, t)

        return Layer(
            name=name or node.name, op_type=node.op_type, kind=kind,
            input_shapes=tuple(shape(t) for t in ins), output_shapes=tuple(shape(t) for t in outs),
            dtypes=dtypes, onnx_nodes=[node.name], inputs=tuple(ins), outputs=tuple(outs),
        )
