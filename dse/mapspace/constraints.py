"""Dataflow constraints on the mapspace, Timeloop-style, from the hwconfig and from a user's YAML file.

Both use the same form, a list of per-level entries::

    constraints:
      - level: PE_RF            # a level name of the config
        spatial_x: [K]          # dims that may be unrolled on the X fan-out below this level
        spatial_y: {C: 4}       # ... a mapping fixes the spatial factor (here C=4 on Y)
        temporal: {R: 3, S: 3}  # fixed temporal factors at this level
        order: [C, R, S]        # these dims are the level's innermost loops, in this order (outer to inner)
        bypass: [W]             # tensors this level must not keep
        keep: [I, O]            # tensors this level must keep

A config is written for every layer type, so a known dimension the layer lacks (``P`` for a matmul) is
ignored; an unknown name, an unknown level or tensor, or two rules that cannot both hold is a UserError
that names the file and the entry; so is a field that two entries of one list set for the same level.
User entries replace the config's fields for the same level.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from costmodel.arch import Dim
from costmodel.errors import UserError
from costmodel.problem import as_int

KNOWN_DIMS = frozenset(get_args(Dim))
"""Every dimension name the Problem constructors use (conv, transposed conv, matmul)."""

FIELDS = ("spatial_x", "spatial_y", "temporal", "order", "bypass", "keep")


@dataclass(frozen=True)
class LevelConstraint:
    """The rules for one level, already checked against the names the config and the layer know."""

    spatial_x: dict[str, int | None] | None = None  # None: every dim allowed; value None: factor free
    spatial_y: dict[str, int | None] | None = None
    temporal: dict[str, int] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    bypass: frozenset[str] = frozenset()
    keep: frozenset[str] = frozenset()


def _as_dict(entry: Any) -> dict[str, Any]:
    if hasattr(entry, "model_dump"):
        return {k: v for k, v in entry.model_dump().items() if v is not None}
    if isinstance(entry, dict):
        return dict(entry)
    raise UserError(f"expected a mapping with 'level', got {type(entry).__name__}")


def _dims(value: Any, where: str) -> list[str]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(d, str) for d in value):
        raise UserError(f"{where}: expected a list of dimension names, got {value!r}")
    bad = [d for d in value if d not in KNOWN_DIMS]
    if bad:
        raise UserError(f"{where}: unknown dimension(s) {bad}; known: {sorted(KNOWN_DIMS)}")
    return list(value)


def _factor(f: Any) -> bool:
    """A positive integer, and not YAML's ``true`` (an int to Python: it had been taken for 1)."""
    return as_int(f) is not None and f >= 1


def _spatial(value: Any, where: str) -> dict[str, int | None]:
    if isinstance(value, dict):
        out: dict[str, int | None] = {}
        for d, f in value.items():
            _dims([d], where)
            if f is not None and not _factor(f):
                raise UserError(f"{where}.{d}: expected a positive integer factor, got {f!r}")
            out[d] = f
        return out
    return {d: None for d in _dims(value, where)}


def _tensors(value: Any, where: str) -> frozenset[str]:
    if not isinstance(value, (list, tuple)) or not all(t in ("I", "W", "O") for t in value):
        raise UserError(f"{where}: expected a list of tensor roles among I, W, O, got {value!r}")
    return frozenset(value)


def parse_entries(entries: Any, level_names: tuple[str, ...], where: str) -> dict[str, dict[str, Any]]:
    """Raw entries (from a config or a YAML file) as ``{level: {field: value}}``, names checked."""
    if entries is None:
        return {}
    if isinstance(entries, dict) and "constraints" in entries:
        entries = entries["constraints"]
    if not isinstance(entries, (list, tuple)):
        raise UserError(f"{where}: 'constraints' must be a list of per-level entries")
    out: dict[str, dict[str, Any]] = {}
    first: dict[tuple[str, str], int] = {}  # (level, field) -> the entry that sets it
    for i, raw in enumerate(entries):
        here = f"{where}: constraints[{i}]"
        try:
            entry = _as_dict(raw)
        except UserError as exc:
            raise UserError(f"{here}: {exc}") from None
        level = entry.pop("level", None)
        if level not in level_names:
            raise UserError(f"{here}.level: expected one of {list(level_names)}, got {level!r}")
        unknown = set(entry) - set(FIELDS)
        if unknown:
            raise UserError(f"{here}: unknown field(s) {sorted(unknown)}; allowed: {list(FIELDS)}")
        fields = out.setdefault(level, {})
        for name, value in entry.items():
            w = f"{here}.{name}"
            if (level, name) in first:  # (the later entry's value had won silently)
                raise UserError(f"{w}: level {level}'s {name} is set already, by constraints[{first[level, name]}]")
            first[level, name] = i
            if name in ("spatial_x", "spatial_y"):
                fields[name] = _spatial(value, w)
            elif name == "temporal":
                if not isinstance(value, dict):
                    raise UserError(f"{w}: expected a mapping DIM: factor, got {value!r}")
                _dims(list(value), w)
                for d, f in value.items():
                    if not _factor(f):
                        raise UserError(f"{w}.{d}: expected a positive integer factor, got {f!r}")
                fields[name] = dict(value)
            elif name == "order":
                dims = _dims(value, w)
                if len(set(dims)) != len(dims):
                    raise UserError(f"{w}: a dimension is repeated in {dims}")
                fields[name] = tuple(dims)
            else:
                fields[name] = _tensors(value, w)
    return out


def load_constraints_file(path: str | Path) -> list[dict[str, Any]]:
    """A user's constraints YAML: a list of entries, or a mapping with a ``constraints`` list.

    Read like every hand-edited file (:func:`~costmodel.yamlio.load_yaml`): unreadable, non-UTF-8 or
    malformed text is one line naming the file and line. A hwconfig is read for its constraints
    (docs/mapper.md); a key neither takes is an error.
    """
    from costmodel.arch import HwConfig
    from costmodel.yamlio import did_you_mean, load_yaml

    data, lines = load_yaml(path)
    if isinstance(data, dict):  # 'constraints: [...]', alone or in a whole hwconfig
        allowed = list(HwConfig.model_fields)
        if extra := [k for k in data if k not in allowed]:  # (a misspelt key had dropped its entries unseen)
            hint = did_you_mean(extra[0], allowed) or ("; expected 'constraints: [...]' (or a hwconfig, or a list "
                                                         "of per-level entries)")
            raise lines.error((extra[0],), f"unknown field {extra[0]!r}{hint}")
        data = data.get("constraints")
    if not isinstance(data, list):
        raise UserError(f"{lines.file}: expected a list of per-level constraint entries (or 'constraints: [...]')")
    return data


def resolve(
    arch_entries: Any,
    user_entries: Any,
    level_names: tuple[str, ...],
    holds: tuple[tuple[str, ...], ...],
    dim_sizes: dict[str, int],
    fanouts: tuple[tuple[int, int], ...],
    arch_where: str = "hwconfig",
    user_where: str = "constraints",
) -> tuple[LevelConstraint, ...]:
    """One :class:`LevelConstraint` per level, for one layer: merged, filtered to its dims, checked
    against the levels' (X, Y) ``fanouts``."""
    merged = parse_entries(arch_entries, level_names, arch_where)
    source = {(level, k): arch_where for level, fields in merged.items() for k in fields}
    for level, fields in parse_entries(user_entries, level_names, user_where).items():
        merged.setdefault(level, {}).update(fields)
        source.update({(level, k): user_where for k in fields})

    def origin(level: str, *fields: str) -> str:
        """The file(s) that set these fields of the level's constraints (config, user file), for messages."""
        return " and ".join(dict.fromkeys(source[level, k] for k in fields if (level, k) in source))

    out = []
    for li, name in enumerate(level_names):
        f = merged.get(name, {})
        here = f"{origin(name, 'keep', 'bypass')}: constraints for level {name}"
        keep, bypass = f.get("keep", frozenset()), f.get("bypass", frozenset())
        if keep & bypass:
            raise UserError(f"{here}: tensor(s) {sorted(keep & bypass)} are both kept and bypassed")
        not_held = keep - set(holds[li])
        if not_held:
            raise UserError(f"{here}: keep {sorted(not_held)}, but the level holds only {list(holds[li])}")
        if li == 0 and bypass:
            raise UserError(f"{here}: the outermost level keeps every tensor; it cannot bypass {sorted(bypass)}")

        def present(spec: dict | None) -> dict | None:
            """The dims of an allowed-dims list the layer has; None (no constraint) when it names
            dims but none of the layer's: a conv's ``spatial_y: [C]`` had left a matmul's Y fan-out
            unused (an empty list written as such still allows nothing)."""
            if spec is None or (spec and not any(d in dim_sizes for d in spec)):
                return None
            return {d: v for d, v in spec.items() if d in dim_sizes}

        temporal = {d: v for d, v in f.get("temporal", {}).items() if d in dim_sizes}
        order = tuple(d for d in f.get("order", ()) if d in dim_sizes)
        out.append(LevelConstraint(present(f.get("spatial_x")), present(f.get("spatial_y")), temporal, order,
                                   bypass, keep))
    _check_fanouts(out, level_names, fanouts, origin)
    _check_factors(out, level_names, dim_sizes, fanouts, origin)
    return tuple(out)


def _check_fanouts(cons: list[LevelConstraint], names: tuple[str, ...], fanouts: tuple[tuple[int, int], ...],
                   origin: Callable[..., str]) -> None:
    """The fixed spatial factors of one level and axis must fit its fan-out together (a level
    without one takes only factor 1: such a factor was dropped silently)."""
    for name, c, caps in zip(names, cons, fanouts):
        for axis, spec, cap in (("spatial_x", c.spatial_x, caps[0]), ("spatial_y", c.spatial_y, caps[1])):
            fixed = {d: f for d, f in (spec or {}).items() if f is not None and f > 1}
            prod = 1
            for f in fixed.values():
                prod *= f
            if prod > cap:
                what = ", ".join(f"{d}={f}" for d, f in fixed.items())
                raise UserError(f"{origin(name, axis)}: contradictory constraints: level {name} fixes "
                                f"{axis} factors {what} (product {prod}), but its {axis[-1].upper()} fan-out is {cap}")


def _check_factors(cons: list[LevelConstraint], names: tuple[str, ...], sizes: dict[str, int],
                   fanouts: tuple[tuple[int, int], ...], origin: Callable[..., str]) -> None:
    """Fixed factors of a dimension must multiply to a divisor of its size, and to the size itself
    when no loop of the dimension is left free."""
    for d, n in sizes.items():
        fixed, free = [], False
        for name, c, caps in zip(names, cons, fanouts):
            if d in c.temporal:
                fixed.append((name, "temporal", c.temporal[d]))
            else:
                free = True
            for axis, spec, cap in (("spatial_x", c.spatial_x, caps[0]), ("spatial_y", c.spatial_y, caps[1])):
                if spec is not None and spec.get(d):
                    fixed.append((name, axis, spec[d]))
                elif cap > 1 and (spec is None or d in spec):
                    free = True
        prod = 1
        for *_, f in fixed:
            prod *= f
        if not fixed or (prod == n or (free and n % prod == 0)):
            continue
        where = " and ".join(dict.fromkeys(origin(name, axis) for name, axis, _ in fixed))
        what = ", ".join(f"{name}.{axis}={f}" for name, axis, f in fixed)
        why = "which does not divide it" if n % prod else "and no loop of it is left free for the rest"
        raise UserError(f"{where}: contradictory constraints: dimension {d} has size {n}, but the fixed "
                        f"factors ({what}) multiply to {prod}, {why}")
