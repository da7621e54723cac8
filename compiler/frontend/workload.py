"""The workload graph: layers (nodes) and the activation tensors between them (edges).

A layer is what the accelerator executes as one unit: a MAC layer (with its Problem, folded
BatchNormalization and bias, fused activations), a vector-unit layer, a pure data-movement layer,
a quantize/dequantize step, or a host fallback. ``macs`` always equals ``problem.macs``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import networkx as nx

if TYPE_CHECKING:
    import pandas as pd

    from costmodel.problem import Problem

KINDS = ("mac", "vector", "layout", "quant", "host")


@dataclass
class Layer:
    """One node of the workload graph (see CONTRACTS.md)."""

    name: str
    op_type: str
    kind: str
    problem: Problem | None = None
    input_shapes: tuple[tuple[int, ...], ...] = ()
    output_shapes: tuple[tuple[int, ...], ...] = ()
    dtypes: dict[str, str] = field(default_factory=dict)
    """Tensor name -> element type, for the layer's activation inputs and outputs."""
    macs: int = 0
    weights: int = 0
    bias: int = 0
    post_ops: list[str] = field(default_factory=list)
    vector_ops: int = 0
    onnx_nodes: list[str] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    inputs: tuple[str, ...] = ()
    """Names of the activation tensors read (constants are counted in weights/bias instead)."""
    outputs: tuple[str, ...] = ()

    @property
    def params(self) -> int:
        return self.weights + self.bias

    @property
    def dims(self) -> str:
        """The loop dimensions of a MAC layer (``N1 G1 K64 ...``), else the output shape."""
        if self.problem is not None:
            return " ".join(f"{d}{n}" for d, n in self.problem.dims)
        return ", ".join("x".join(map(str, s)) for s in self.output_shapes)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return {
            "name": self.name, "op_type": self.op_type, "kind": self.kind, "dims": self.dims,
            "macs": self.macs, "params": self.params, "weights": self.weights, "bias": self.bias,
            "vector_ops": self.vector_ops, "post_ops": list(self.post_ops),
            "input_shapes": [list(s) for s in self.input_shapes],
            "output_shapes": [list(s) for s in self.output_shapes],
            "inputs": list(self.inputs), "outputs": list(self.outputs), "dtypes": dict(self.dtypes),
            "onnx_nodes": list(self.onnx_nodes), "attrs": _plain(self.attrs),
            "problem": self.problem.to_dict() if self.problem is not None else None,
        }


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "item"):
        return value.item()
    return value


@dataclass
class Workload:
    """A model as a DAG of layers; iterate with :meth:`layers` (topological order)."""

    name: str
    graph: nx.DiGraph
    inputs: dict[str, tuple[int, ...]]
    outputs: dict[str, tuple[int, ...]]
    source: str = ""
    folded: list[str] = field(default_factory=list)
    """ONNX nodes folded as constants that feed no layer (e.g. unused Constant nodes)."""
    warnings: list[str] = field(default_factory=list)

    def layers(self) -> list[Layer]:
        """All layers, producers before consumers (ties in ONNX file order)."""
        order = {n: i for i, n in enumerate(self.graph.nodes)}
        names = nx.lexicographical_topological_sort(self.graph, key=lambda n: order[n])
        return [self.graph.nodes[n]["layer"] for n in names]

    def layer(self, name: str) -> Layer:
        return self.graph.nodes[name]["layer"]

    def mac_layers(self) -> list[Layer]:
        return [layer for layer in self.layers() if layer.kind == "mac"]

    @property
    def total_macs(self) -> int:
        return sum(layer.macs for layer in self.layers())

    @property
    def total_params(self) -> int:
        return sum(layer.params for layer in self.layers())

    def totals(self) -> dict[str, Any]:
        layers = self.layers()
        return {
            "layers": len(layers),
            "by_kind": {k: sum(1 for x in layers if x.kind == k) for k in KINDS},
            "macs": self.total_macs,
            "params": self.total_params,
            "weights": sum(x.weights for x in layers),
            "bias": sum(x.bias for x in layers),
            "vector_ops": sum(x.vector_ops for x in layers),
            "activation_bytes": sum(d["bytes"] for _, _, d in self.graph.edges(data=True)),
        }

    def to_dataframe(self) -> pd.DataFrame:
        """One row per layer (topological order)."""
        import pandas as pd

        rows = [{
            "name": x.name, "op_type": x.op_type, "kind": x.kind, "dims": x.dims, "macs": x.macs,
            "params": x.params, "weights": x.weights, "bias": x.bias, "vector_ops": x.vector_ops,
            "post_ops": "+".join(x.post_ops),
            "input_shapes": " ".join("x".join(map(str, s)) for s in x.input_shapes),
            "output_shapes": " ".join("x".join(map(str, s)) for s in x.output_shapes),
        } for x in self.layers()]
        return pd.DataFrame(rows, columns=["name", "op_type", "kind", "dims", "macs", "params", "weights", "bias",
                                           "vector_ops", "post_ops", "input_shapes", "output_shapes"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.name, "source": self.source,
            "inputs": {k: list(v) for k, v in self.inputs.items()},
            "outputs": {k: list(v) for k, v in self.outputs.items()},
            "layers": [x.to_dict() for x in self.layers()],
            "totals": self.totals(),
            "warnings": list(self.warnings),
        }
