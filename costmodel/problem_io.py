"""Layer files: one Problem per YAML or JSON file, for ``dse evaluate --layer L.yaml``.

The file holds either the short form (``kind: conv2d`` plus the constructor's arguments) or the
general einsum form of :meth:`costmodel.problem.Problem.to_dict`. Every error names the file (and, in
YAML, the line of the field), so a user with several layer files knows which one to fix and where.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from costmodel.atomic import atomic_write_text
from costmodel.errors import UserError
from costmodel.problem import Problem
from costmodel.yamlio import LineMap, load_data


def load_problem(path: str | Path) -> Problem:
    """Read one layer; ``.json`` is parsed as JSON, anything else as YAML (with the line of each
    field, for messages in the ``file:line: field`` form of the other input files)."""
    p = Path(path)
    data, lines = load_data(p)
    if data is None:
        raise UserError(f"{p}: empty layer file (expected a mapping with 'kind')")
    if isinstance(data, dict) and len(data) == 1 and isinstance(data.get("layer"), dict):
        data = data["layer"]  # also accept a document wrapped as {layer: {...}}
        if lines is not None:
            lines = LineMap(lines.file, {k[1:]: n for k, n in lines.lines.items() if k[:1] == ("layer",)})
    return Problem.from_dict(data, where=str(p), lines=lines)


def save_problem(problem: Problem, path: str | Path) -> Path:
    """Write a layer in the einsum form (atomically: temp file in the same folder, then rename)."""

    p = Path(path)
    text = (json.dumps(problem.to_dict(), indent=2) if p.suffix.lower() == ".json"
            else yaml.safe_dump(problem.to_dict(), sort_keys=False))
    return atomic_write_text(p, text)
