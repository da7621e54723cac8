"""Knobs: a field path into a hwconfig's data, and the values it may take.

A path is dot-separated; list items are picked by index or by their ``name`` field:
``levels.buffer.capacity``, ``levels[1].fanout.x``, ``technology.dram``. Paths are checked against
the hwconfig format (:class:`costmodel.arch.HwConfig`) when the study loads, so a typo fails before
the first trial. A knob is one of: ``choices`` (categorical), a ``low``/``high`` range (int or
float, optional ``step`` and ``log``), or ``expr`` (derived from other knobs, e.g.
``mac.count = rows * cols``), or ``presets`` (named choices that each set several paths, e.g. a
dataflow). ``format`` turns the number into the text the config expects (``"{} KiB"``).
"""

from __future__ import annotations

import copy
import re
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from dse.study.expr import Expr, ExprError

PathKey = tuple[str | int, ...]
_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _submodel(annotation: Any) -> tuple[str, type[BaseModel] | None]:
    """('model', M) / ('list', M) for a (possibly Optional) model or list of models; else ('leaf', None)."""
    stack = [annotation]
    while stack:
        t = stack.pop()
        if isinstance(t, type) and issubclass(t, BaseModel):
            return "model", t
        if typing.get_origin(t) is list:
            args = typing.get_args(t)
            if args and isinstance(args[0], type) and issubclass(args[0], BaseModel):
                return "list", args[0]
        stack.extend(typing.get_args(t))
    return "leaf", None


def resolve_path(text: str, data: dict[str, Any], model: type[BaseModel]) -> PathKey:
    """Concrete data path (list items as indices) for ``text``; ValueError says what does not exist."""
    tokens: list[str | int] = [m.group(1) if m.group(1) is not None else int(m.group(2))
                               for m in _TOKEN.finditer(text)]
    if not tokens or "".join(f"[{t}]" if isinstance(t, int) else t for t in tokens) != text.replace(".", ""):
        raise ValueError(f"cannot parse field path {text!r} (expected e.g. levels.buffer.capacity)")
    if any(not part for part in text.split(".")):  # (levels..capacity read as levels.capacity)
        raise ValueError(f"cannot parse field path {text!r}: an empty name between dots "
                         "(expected e.g. levels.buffer.capacity)")
    out: list[str | int] = []
    cur: Any = data
    kind, cls = "model", model
    for tok in tokens:
        if kind == "list":
            items = cur if isinstance(cur, list) else []
            if isinstance(tok, int) or str(tok).isdigit():
                idx = int(tok)
                if not 0 <= idx < len(items):
                    raise ValueError(f"{text}: index {idx} out of range (the list has {len(items)} items)")
            else:
                names = [it.get("name") for it in items if isinstance(it, dict)]
                if tok not in names:
                    raise ValueError(f"{text}: no item named '{tok}' (names: {', '.join(map(str, names))})")
                idx = names.index(tok)
            out.append(idx)
            cur, kind = items[idx], "model"
            continue
        if kind != "model" or cls is None:
            raise ValueError(f"{text}: '{out[-1] if out else tok}' has no sub-fields")
        fields = {f.alias or n: f for n, f in cls.model_fields.items()}
        if tok not in fields:
            raise ValueError(f"{text}: unknown field '{tok}' (expected one of: {', '.join(sorted(fields))})")
        out.append(tok)
        cur = cur.get(tok) if isinstance(cur, dict) else None
        kind, cls = _submodel(fields[str(tok)].annotation)
    if kind != "leaf":
        raise ValueError(f"{text}: is a group of fields, not one value (add a sub-field)")
    return tuple(out)


def set_path(data: dict[str, Any], path: PathKey, value: Any) -> None:
    """Write ``value`` at ``path`` in place, creating missing sub-mappings."""
    cur: Any = data
    for key in path[:-1]:
        if isinstance(key, str) and cur.get(key) is None:
            cur[key] = {}
        cur = cur[key]
    cur[path[-1]] = value


@dataclass(frozen=True)
class Knob:
    """A resolved knob: where it writes and which values it takes."""

    name: str
    path: PathKey
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None
    step: float | None = None
    log: bool = False
    is_int: bool = False
    expr: Expr | None = None
    format: str | None = None
    presets: dict[str, tuple[tuple[PathKey, Any], ...]] | None = None

    @property
    def derived(self) -> bool:
        return self.expr is not None

    @property
    def takes_ints(self) -> bool:
        """Whether every value it takes is an int (an int range, or choices that are all ints)."""
        if self.choices is not None:
            return all(isinstance(c, int) and not isinstance(c, bool) for c in self.choices)
        return self.is_int

    def grid_values(self) -> tuple[Any, ...]:
        """Every value, for the grid sampler (choices, or an int range's integers by ``step``)."""
        if self.choices is not None:
            return self.choices
        if self.is_int and self.low is not None and self.high is not None:
            return tuple(range(int(self.low), int(self.high) + 1, int(self.step or 1)))
        raise ValueError(f"knob '{self.name}': the grid sampler needs choices or an integer range")

    def config_value(self, value: Any) -> Any:
        return self.format.format(value) if self.format else value


def derived_order(knobs: list[Knob]) -> list[Knob]:
    """Derived knobs in an order where each comes after the derived knobs it reads; ValueError on a cycle."""
    pending = {k.name: k for k in knobs if k.derived}
    done: list[Knob] = []
    while pending:
        ready = [k for k in pending.values() if not (k.expr.names & pending.keys())]  # type: ignore[union-attr]
        if not ready:
            raise ValueError(f"derived knobs depend on each other in a cycle: {', '.join(sorted(pending))}")
        for k in ready:
            done.append(pending.pop(k.name))
    return done


def knob_values(knobs: list[Knob], sampled: dict[str, Any]) -> dict[str, Any]:
    """Sampled values plus every derived knob's value (ints stay ints when the result is whole)."""
    values = dict(sampled)
    for k in derived_order(knobs):
        try:
            v = k.expr.evaluate_int64(values)  # type: ignore[union-attr]
        except ExprError as exc:
            raise ExprError(f"knob {k.name}: {exc}") from None
        values[k.name] = int(v) if isinstance(v, float) and v.is_integer() else v
    return values


def apply_knobs(base: dict[str, Any], knobs: list[Knob], values: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config data with every knob's value written at its path."""
    data = copy.deepcopy(base)
    for k in knobs:
        if k.presets is not None:
            for path, v in k.presets[values[k.name]]:
                set_path(data, path, copy.deepcopy(v))
        else:
            set_path(data, k.path, k.config_value(values[k.name]))
    return data
