"""PyTorch -> ONNX export that works offline with torch 2.13 and never leaves a partial file.

torch 2.13's default (dynamo) exporter needs onnxscript and writes a ``.onnx.data`` sidecar unless
told ``external_data=False``; below opset 18 it produces invalid Split nodes, so it is refused here.
``dynamo=False`` selects the legacy TorchScript exporter (deprecated upstream, still useful because it
handles graphs the dynamo tracer rejects).
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
import warnings
from pathlib import Path
from typing import Any

from costmodel.atomic import atomic_write_bytes, check_writable
from costmodel.errors import UserError, causes

MIN_DYNAMO_OPSET = 18


def export_onnx(module: Any, example_inputs: tuple, path: str | Path, *, dynamo: bool = True,
                opset: int = 20, input_names: list[str] | None = None) -> Path:
    """Export ``module`` (in eval mode, no grad) to one self-contained ONNX file at ``path``;
    ``input_names`` name the graph's inputs (default: the exporter's, e.g. ``input`` or ``input.1``).

    An unwritable ``path`` fails before the (slow) export; the exporter writes into a scratch folder
    beside ``path`` (sidecars included), and the file is moved in only when complete.
    """
    import torch

    path = Path(path)
    if dynamo and opset < MIN_DYNAMO_OPSET:
        raise UserError(f"export {path}: the dynamo exporter needs opset >= {MIN_DYNAMO_OPSET}, got {opset}")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)  # check_writable leaves no folder behind
    was_training = module.training
    module.eval()
    try:
        with tempfile.TemporaryDirectory(prefix=f".{path.name}.", dir=path.parent) as scratch:
            tmp = Path(scratch) / path.name
            try:
                with torch.no_grad(), _quiet():
                    if dynamo:
                        torch.onnx.export(module, example_inputs, str(tmp), dynamo=True, external_data=False,
                                          opset_version=opset, optimize=True, verbose=False,
                                          input_names=input_names)
                    else:
                        torch.onnx.export(module, example_inputs, str(tmp), dynamo=False, opset_version=opset,
                                          do_constant_folding=True, input_names=input_names)
            except Exception as exc:
                # Ctrl-C or `kill` (SIGTERM) while torch.export ran, wrapped in torch's own error: not
                # the exporter's failure
                if any(isinstance(e, KeyboardInterrupt) for e in causes(exc)):
                    raise KeyboardInterrupt from exc
                which = "dynamo" if dynamo else "TorchScript"
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise UserError(f"export {path}: the {which} exporter failed on {type(module).__name__}: "
                                f"{first}") from exc
            atomic_write_bytes(path, _without_stack_traces(tmp))
    finally:
        module.train(was_training)
    return path


STACK_TRACE = "pkg.torch.onnx.stack_trace"


def _without_stack_traces(path: Path) -> bytes:
    """The exported model without the dynamo exporter's per-node Python stack traces. Why: they
    hold absolute paths (the checkout, the venv), so the same model exported from two checkouts
    differed, and so did everything compiled from it; nothing reads them (the node names and
    name scopes, which say where a node came from, stay)."""
    import onnx

    model = onnx.load(str(path))
    holders = [model.graph, *model.functions]
    while holders:  # (and the subgraphs of If / Loop / Scan nodes)
        for node in holders.pop().node:
            kept = [p for p in node.metadata_props if p.key != STACK_TRACE]
            if len(kept) != len(node.metadata_props):
                del node.metadata_props[:]
                node.metadata_props.extend(kept)
            for attr in node.attribute:
                holders.extend([attr.g] if attr.HasField("g") else [])
                holders.extend(attr.graphs)
    return model.SerializeToString()


@contextlib.contextmanager
def _quiet():
    """Silence the exporters' progress prints, deprecation warnings and torchvision notices."""
    loggers = [logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, lvl in zip(loggers, levels):
            lg.setLevel(lvl)
