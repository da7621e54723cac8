"""The public Python API: every ``dse`` command is a thin layer over one of these functions.

Heavy packages (torch, onnx, onnxruntime) are imported inside the functions, so importing this
module is cheap. Results convert to pandas DataFrames (``.to_dataframe()``) for notebooks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from compiler.frontend.workload import Workload
    from costmodel.arch import Architecture
    from costmodel.evaluate import Evaluation
    from costmodel.mapping import Mapping
    from costmodel.problem import Problem


def file_or_name(value: Any, name: str) -> Path:
    """An argument that names a file (or a shipped name): a str or Path, not empty. Another type is
    a TypeError naming the argument, not one from pathlib or from deep inside; an empty string is a
    UserError (`dse evaluate --hw ""` printed a traceback), and so is a blank one."""
    from costmodel.errors import UserError

    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name}: expected a file path or name (str or os.PathLike), got {value!r:.60}")
    if not str(value).strip():
        raise UserError(f"{name}: empty; expected a file path or name")
    return Path(value)


def load_workload(model: str | Path, allow_unsupported: bool = False) -> Workload:
    """A model as a workload graph: an ONNX file path, or the name of a zoo model."""
    from costmodel.errors import UserError
    from dse import workloads

    path = file_or_name(model, "model")
    if is_zoo_name(model):
        return workloads.load(str(model))
    if path.suffix == ".onnx" or path.exists():
        from compiler.frontend import import_onnx

        return import_onnx(path, allow_unsupported=allow_unsupported)
    raise UserError(f"{model}: no such ONNX file, and not a zoo model (zoo: {', '.join(workloads.names())})")


def is_zoo_name(model: str | Path) -> bool:
    """Whether :func:`load_workload` takes ``model`` from the zoo: a zoo name that is not an ONNX file
    here (a folder named like a zoo model had hidden it)."""
    from dse import workloads

    path = Path(model)
    return str(model) in workloads.names() and not (path.suffix == ".onnx" or path.is_file())


def load_hw(hw: str | Path) -> Architecture:
    """A hardware config: a YAML path, or the name of a shipped config under hwconfigs/."""
    from costmodel.arch import load_architecture

    return load_architecture(file_or_name(hw, "hw"))


def load_layer(path: str | Path) -> Problem:
    """One layer (a Problem) from a YAML/JSON file."""
    from costmodel.problem_io import load_problem

    return load_problem(file_or_name(path, "path"))


def load_mapping(path: str | Path, problem: Problem, arch: Architecture) -> Mapping:
    """A mapping file, validated against the layer and the config."""
    from costmodel.arch import as_architecture
    from costmodel.mapping import load_mapping as _load
    from costmodel.problem import expect_problem

    return _load(file_or_name(path, "path"), expect_problem(problem), as_architecture(arch))


def evaluate(problem: Problem, arch: Architecture, mapping: Mapping, *, overlap: bool = True,
             systolic_mode: str | None = None) -> Evaluation:
    """Energy, latency, area and access counts of one mapping of one layer.

    ``overlap=False`` serializes transfers with compute; ``systolic_mode`` ("scalesim" or
    "overlapped") picks the fill/drain model on systolic configs.
    """
    from costmodel.evaluate import evaluate as _evaluate

    return _evaluate(problem, arch, mapping, overlap=overlap, systolic_mode=systolic_mode)  # type: ignore[arg-type]


def simulate(binary: str | Path, inputs: dict[str, np.ndarray], timing: bool = True) -> Any:
    """Run an ``.axb`` binary on the functional (and timing) simulator."""
    import numpy

    from compiler.sim import simulate as _simulate

    if not isinstance(timing, (bool, numpy.bool_)):  # "no" would be taken as True
        raise TypeError(f"simulate: timing must be True or False, got {timing!r}")

    return _simulate(file_or_name(binary, "binary"), inputs, timing=timing)


def map_layer(problem: Problem, arch: Architecture, objective: str = "edp", **kwargs: Any) -> Any:
    """Best mapping of one layer (``mapper="fast"|"exhaustive"``, ``seed``, ``constraints``...)."""
    from dse.mappers import map_layer as _map_layer

    return _map_layer(problem, arch, objective, **kwargs)


def map_model(workload: Workload, arch: Architecture, **kwargs: Any) -> Any:
    """Map every layer of a workload (identical shapes once, through the mapping database)."""
    from dse.network import map_model as _map_model

    return _map_model(workload, arch, **kwargs)


def best_mapping(problem: Problem, arch: Architecture, **kwargs: Any) -> Any:
    """The database-backed best mapping of one layer (what ``dse best-mapping`` prints)."""
    from dse.network import best_mapping as _best_mapping

    return _best_mapping(problem, arch, **kwargs)


def run_study(path: str | Path, **kwargs: Any) -> Any:
    """Run or resume a sweep study from its YAML file."""
    from dse.study import run_study as _run_study

    return _run_study(path, **kwargs)


def compile_model(model: str | Path, arch: Any, **kwargs: Any) -> Any:
    """Quantize and compile a model (ONNX path or zoo name) for a compilable config."""
    from compiler.compile import compile_model as _compile_model

    return _compile_model(file_or_name(model, "model"), arch, **kwargs)
