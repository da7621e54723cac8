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
from costmodel.yamlio import LineMap, load_yaml


def load_problem(path: str | Path) -> Problem:
    """Read one layer; ``.json`` is parsed as JSON, anything else as YAML (a superset of JSON)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{p}: layer file not found") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as exc:
        raise UserError(f"{p}: cannot read layer file ({exc.__class__.__name__})") from None
    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else yaml.safe_load(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"{p}: line {exc.lineno}: invalid JSON ({exc.msg})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise UserError(f"{p}: {where}{problem}") from None
    if data is None:
        raise UserError(f"{p}: empty layer file (expected a mapping with 'kind')")
    wrapped = isinstance(data, dict) and len(data) == 1 and isinstance(data.get("layer"), dict)
    if wrapped:
        data = data["layer"]  # also accept a document wrapped as {layer: {...}}
    lines = None if p.suffix.lower() == ".json" else _field_lines(p, wrapped)
    return Problem.from_dict(data, where=str(p), lines=lines)


def _field_lines(p: Path, wrapped: bool) -> LineMap:
    """The line of each field of a YAML layer file, for messages: a second parse, of a file already known
    to be valid YAML (a few lines), keeps the error messages above as they are."""
    lines = load_yaml(p)[1]
    if not wrapped:
        return lines
    return LineMap(lines.file, {k[1:]: n for k, n in lines.lines.items() if k[:1] == ("layer",)})


def save_problem(problem: Problem, path: str | Path) -> Path:
    """Write a layer in the einsum form (atomically: temp file in the same folder, then rename)."""

    p = Path(path)
    text = (json.dumps(problem.to_dict(), indent=2) if p.suffix.lower() == ".json"
            else yaml.safe_dump(problem.to_dict(), sort_keys=False))
    return atomic_write_text(p, text)
