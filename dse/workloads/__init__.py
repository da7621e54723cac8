"""The AR/VR model zoo: plain ``torch.nn`` models at XRBench's input sizes, with seeded weights.

``names()`` and ``info()`` read :mod:`dse.workloads.catalog` only (no torch import, so
``dse zoo list`` starts fast); ``build``/``export`` import torch and the model's module on demand;
``load`` returns the imported :class:`~compiler.frontend.workload.Workload` from an on-disk cache.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from costmodel.errors import UserError
from dse.workloads.cache import cache_dir, load
from dse.workloads.catalog import MODELS, ModelInfo

if TYPE_CHECKING:
    import torch

__all__ = ["ModelInfo", "build", "cache_dir", "export", "info", "load", "names"]


def names() -> list[str]:
    """The zoo's model names, in catalogue order."""
    return list(MODELS)


def info(name: str) -> ModelInfo:
    """Task, citation, input shapes and default frame rate of one model."""
    try:
        return MODELS[name]
    except KeyError:
        raise UserError(f"unknown zoo model {name!r}; expected one of: {', '.join(MODELS)}") from None


def build(name: str, seed: int = 0) -> tuple[torch.nn.Module, tuple[Any, ...]]:
    """The model in eval mode with seeded random weights (BN statistics too), and example inputs."""
    import torch

    from dse.workloads.blocks import randomize_norms

    meta = info(name)
    factory = getattr(importlib.import_module(f"dse.workloads.{meta.module}"), meta.builder)
    with torch.random.fork_rng(devices=[]):   # seed the init without touching the caller's RNG
        torch.manual_seed(seed)
        model = factory()
    gen = torch.Generator().manual_seed(seed)
    randomize_norms(model, gen)
    model.eval()
    inputs = tuple(torch.randn(shape, generator=gen) for shape in meta.inputs.values())
    return model, inputs


def export(name: str, path: str | Path, *, dynamo: bool = True, seed: int = 0) -> Path:
    """Export one model to ONNX (opset 20, weights inside the file); the write is atomic."""
    from compiler.frontend import export_onnx

    model, inputs = build(name, seed)
    # the graph's inputs take the catalog's names, which `dse zoo list` shows and --input uses
    return export_onnx(model, inputs, Path(path), dynamo=dynamo, input_names=list(info(name).inputs))
