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
import os
import warnings
from pathlib import Path
from typing import Any

from costmodel.errors import UserError

MIN_DYNAMO_OPSET = 18


def export_onnx(module: Any, example_inputs: tuple, path: str | Path, *, dynamo: bool = True,
                opset: int = 20) -> Path:
    """Export ``module`` (in eval mode, no grad) to one self-contained ONNX file at ``path``."""
    import torch

    path = Path(path)
    if dynamo and opset < MIN_DYNAMO_OPSET:
        raise UserError(f"export {path}: the dynamo exporter needs opset >= {MIN_DYNAMO_OPSET}, got {opset}")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    was_training = module.training
    module.eval()
    try:
        with torch.no_grad(), _quiet():
            if dynamo:
                torch.onnx.export(module, example_inputs, str(tmp), dynamo=True, external_data=False,
                                  opset_version=opset, optimize=True, verbose=False)
            else:
                torch.onnx.export(module, example_inputs, str(tmp), dynamo=False, opset_version=opset,
                                  do_constant_folding=True)
        os.replace(tmp, path)
    except Exception as exc:
        which = "dynamo" if dynamo else "TorchScript"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise UserError(f"export {path}: the {which} exporter failed on {type(module).__name__}: {first}") from exc
    finally:
        module.train(was_training)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        with contextlib.suppress(FileNotFoundError):
            Path(str(tmp) + ".data").unlink()
    return path


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
