"""On-disk cache of exported zoo models, so ``load(name)`` exports (seconds) only once.

Key: model name + exporter + a hash of what determines the file: the model's module, the shared
blocks, the catalogue, the package's export call, the front end's export code and the installed
torch version -- so editing a model (or upgrading torch) invalidates its entry. A cache hit imports
neither torch nor the model. ``export_onnx`` writes atomically (temp file in the same folder, then
``os.replace``), so a killed export or two processes racing never leave a partial entry.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from compiler.frontend.workload import Workload

_HERE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """``$ACCEL_DSE_CACHE`` or ``~/.cache/accel-dse``, plus ``zoo/``."""
    root = os.environ.get("ACCEL_DSE_CACHE") or Path.home() / ".cache" / "accel-dse"
    return Path(root) / "zoo"


def source_hash(name: str) -> str:
    """16 hex chars of sha256 over everything the exported file depends on (see module docstring)."""
    from dse.workloads import info

    h = hashlib.sha256(name.encode())
    for file in (f"{info(name).module}.py", "blocks.py", "catalog.py", "__init__.py"):
        h.update((_HERE / file).read_bytes())
    exporter = importlib.util.find_spec("compiler.frontend.export")
    if exporter is not None and exporter.origin:
        h.update(Path(exporter.origin).read_bytes())
    h.update(importlib.metadata.version("torch").encode())   # metadata only: torch is not imported
    return h.hexdigest()[:16]


def cached_path(name: str, dynamo: bool = True) -> Path:
    exporter = "dynamo" if dynamo else "legacy"
    return cache_dir() / f"{name}-{exporter}-{source_hash(name)}.onnx"


def load(name: str, *, dynamo: bool = True) -> Workload:
    """The imported workload graph of a zoo model, exporting it into the cache on first use."""
    from compiler.frontend import import_onnx
    from dse.workloads import export

    path = cached_path(name, dynamo)
    if not path.exists():
        export(name, path, dynamo=dynamo)
    workload = import_onnx(path)
    workload.name = name  # not the cache file's stem
    return workload
