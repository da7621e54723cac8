"""ONNX front end: export PyTorch models, import ONNX files as workload graphs.

Heavy packages (torch, onnx, networkx) load only when these functions are first called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compiler.frontend.workload import Layer, Workload

__all__ = ["Layer", "Workload", "export_onnx", "import_onnx"]


def export_onnx(module: Any, example_inputs: tuple, path: str | Path, *, dynamo: bool = True,
                opset: int = 20, input_names: list[str] | None = None) -> Path:
    """Export a torch module to one self-contained ONNX file (atomic write); see export.py."""
    from compiler.frontend.export import export_onnx as _export

    return _export(module, example_inputs, path, dynamo=dynamo, opset=opset, input_names=input_names)


def import_onnx(path: str | Path, *, allow_unsupported: bool = False,
                input_shapes: dict[str, tuple[int, ...]] | None = None) -> Workload:
    """An ONNX file as a :class:`Workload`; see importer.py."""
    from compiler.frontend.importer import import_onnx as _import

    return _import(path, allow_unsupported=allow_unsupported, input_shapes=input_shapes)


def __getattr__(name: str) -> Any:
    if name in ("Layer", "Workload"):
        from compiler.frontend import workload

        return getattr(workload, name)
    raise AttributeError(name)
