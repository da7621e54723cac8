"""A mapping of one layer onto one architecture: per storage level, loops and keep/bypass.

The loop nest a mapping stands for (outer to inner) is: level 0's temporal loops (in ``order``),
level 0's spatial loops onto the fan-out below it (X, then Y), level 1's temporal loops, ...,
the innermost level's spatial loops onto the MACs. Per dimension the product of all its factors
equals its size. A tensor's *tile* at a level is what the loops from that level inward touch.

With ``padded`` (only where the config's ``mapspace.padding`` allows it), a dimension's factors
multiply to its padded bound instead: the padded loop nest is the one executed and costed
(:func:`padded_problem`), on zero-padded data.

Tensors are kept where the level ``holds`` them and the mapping does not ``bypass`` them; DRAM
(level 0) keeps every tensor. One tensor element is one word (the tile sizes are in words).

``MappingBatch`` holds B mappings as numpy arrays for vectorized evaluation (see CONTRACTS.md).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from costmodel.atomic import atomic_write_text
from costmodel.errors import UserError
from costmodel.padding import check_padding, padded_problem, padding_hint
from costmodel.problem import Problem, as_int
from costmodel.yamlio import LineMap, did_you_mean, format_path, short_repr

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.yamlio import LineMap


@dataclass(frozen=True)
class LevelMapping:
    """Loops of one storage level: temporal factors in ``order`` (outer to inner), spatial X/Y
    factors onto the fan-out below it, and the tensors it does not keep."""

    temporal: dict[str, int] = field(default_factory=dict)
    order: tuple[str, ...] = ()
    spatial_x: dict[str, int] = field(default_factory=dict)
    spatial_y: dict[str, int] = field(default_factory=dict)
    bypass: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        """``order`` completed with the temporal dims it leaves out, in ``temporal``'s order. Why: those
        loops ran in the dict's key order, which a serializer that sorts keys (PyYAML's default,
        ``json.dumps(sort_keys=True)``) changed, and with it the numbers, while the two mappings
        still compared equal."""
        for name in ("temporal", "spatial_x", "spatial_y"):
            if not isinstance(getattr(self, name), dict):
                raise TypeError(f"LevelMapping.{name}: expected a dict of dimension: factor, got "
                                f"{getattr(self, name)!r:.60}")
        order = tuple(self.order)
        object.__setattr__(self, "order", order + tuple(d for d in self.temporal if d not in order))

    def full_order(self, dim_names: Sequence[str]) -> tuple[str, ...]:
        """Every dimension, outer to inner: ``order``, then other dims with factors, then the rest."""
        seen = list(dict.fromkeys(self.order))
        seen += [d for d in self.temporal if d not in seen]
        seen += [d for d in dim_names if d not in seen]
        return tuple(seen)

    def to_dict(self) -> dict[str, Any]:
        return {
            "temporal": {d: int(f) for d, f in self.temporal.items() if f != 1},
            "order": list(self.order),
            "spatial_x": {d: int(f) for d, f in self.spatial_x.items() if f != 1},
            "spatial_y": {d: int(f) for d, f in self.spatial_y.items() if f != 1},
            "bypass": sorted(self.bypass),
        }


def _factors(raw: Any, where: str) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a mapping of dimension: factor, got {raw!r}")
    out = {}
    for d, f in raw.items():
        if as_int(f) is None or f < 1:
            raise UserError(f"{where}.{d}: expected a positive integer factor, got {f!r}")
        out[str(d)] = int(f)
    return out


def _names(raw: Any, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, (list, tuple)) or not all(isinstance(x, str) for x in raw):
        raise UserError(f"{where}: expected a list of names, got {raw!r}")
    if twice := sorted({x for x in raw if raw.count(x) > 1}):
        raise UserError(f"{where}: {', '.join(twice)} listed more than once in {list(raw)}")
    return tuple(raw)


_LEVEL_FIELDS = ("level", "temporal", "order", "spatial_x", "spatial_y", "bypass")


def _hint(extra: set[Any], allowed: Sequence[str]) -> str:
    """``s ['x']; did you mean 'y'?`` / ``s ['x'] (expected a, b)`` after "unknown field"."""
    names = sorted(map(str, extra))
    tail = (did_you_mean(names[0], allowed) if len(names) == 1 else "") or f" (expected {', '.join(allowed)})"
    return f"{'s' if len(names) > 1 else ''} {names}{tail}"


@dataclass(frozen=True)
class Place:
    """Where a mapping came from, for :meth:`Mapping.validate`'s messages: a name (the file, or
    'mapping') and, for a loaded file, its lines and the file entry of each of the config's levels
    (-1: not listed), so a message points at the line of the field it is about."""

    name: str = "mapping"
    lines: LineMap | None = None
    index: tuple[int, ...] = ()

    def at(self, level: int, *field: str) -> str:
        """``name:line`` of the config level's ``field`` (its entry's line, else the name alone)."""
        if self.lines is None or level >= len(self.index) or self.index[level] < 0:
            return self.name
        line = self.lines.line(("levels", self.index[level], *field))
        return f"{self.name}:{line}" if line is not None else self.name


@dataclass(frozen=True)
class Mapping:
    """One LevelMapping per architecture level, outermost (DRAM) first; ``padded`` holds the padded
    bounds ``(dim, bound)`` of the dimensions it pads (empty: every factor product is the size)."""

    levels: tuple[LevelMapping, ...]
    padded: tuple[tuple[str, int], ...] = ()

    def problem_for(self, problem: Problem) -> Problem:
        """The loop nest this mapping executes: ``problem`` with the padded bounds."""
        return padded_problem(problem, dict(self.padded))

    def in_dim_order(self, dim_names: Sequence[str]) -> Mapping:
        """The same mapping with each level's factors listed in ``dim_names``' order (its loop order
        is complete, so the listing changes no number). Why: a mapping read back from JSON with
        sorted keys printed ``x:C2K8`` where the search that found it had printed ``x:K8C2``."""
        rank = {d: i for i, d in enumerate(dim_names)}

        def ordered(facs: dict[str, int]) -> dict[str, int]:
            return dict(sorted(facs.items(), key=lambda kv: rank.get(kv[0], len(rank))))

        return Mapping(tuple(dataclasses.replace(lm, temporal=ordered(lm.temporal), spatial_x=ordered(lm.spatial_x),
                                                 spatial_y=ordered(lm.spatial_y)) for lm in self.levels),
                       self.padded)

    # ---- accessors -------------------------------------------------------------------------------
    def keeps(self, level: int, tensor: str, arch: Architecture) -> bool:
        if level == 0:
            return True
        return tensor in arch.levels[level].holds and tensor not in self.levels[level].bypass

    # ---- validation ------------------------------------------------------------------------------
    def validate(self, problem: Problem, arch: Architecture, where: str | Place = "mapping") -> None:
        """Raise UserError naming the first thing that makes this mapping impossible (with a
        :class:`Place`, at the line of the field)."""
        place = where if isinstance(where, Place) else Place(where)
        at, where = place.at, place.name
        alevels = arch.levels
        if len(self.levels) != len(alevels):
            raise UserError(f"{where}: has {len(self.levels)} levels, architecture {arch.name} has "
                            f"{len(alevels)} ({', '.join(lv.name for lv in alevels)})")
        dims = set(problem.dim_names)
        tensors = {t.name for t in problem.tensors}
        for li, (lm, lv) in enumerate(zip(self.levels, alevels)):
            for what, facs in (("temporal", lm.temporal), ("spatial_x", lm.spatial_x),
                               ("spatial_y", lm.spatial_y)):
                for d, f in facs.items():
                    if d not in dims:
                        raise UserError(f"{at(li, what, d)}: level {lv.name} {what}: unknown dimension {d!r} "
                                        f"(problem has {', '.join(problem.dim_names)})")
                    if as_int(f) is None or f < 1:
                        raise UserError(f"{at(li, what, d)}: level {lv.name} {what}.{d}: expected a positive "
                                        f"integer, got {f!r}")
            bad = [d for d in lm.order if d not in dims]
            if bad or len(set(lm.order)) != len(lm.order):
                raise UserError(f"{at(li, 'order')}: level {lv.name} order {list(lm.order)}: expected distinct "
                                f"dimensions of {', '.join(problem.dim_names)}")
            unknown = sorted(set(lm.bypass) - tensors)
            if unknown:
                raise UserError(f"{at(li, 'bypass')}: level {lv.name} bypass: unknown tensors {unknown} "
                                f"(problem has {', '.join(sorted(tensors))})")
        if self.levels[0].bypass:
            raise UserError(f"{at(0, 'bypass')}: level {alevels[0].name} (outermost) must keep every tensor, "
                            f"but bypasses {sorted(self.levels[0].bypass)}")
        pad = check_padding(self, problem, arch, where)
        for d, size in problem.dims:
            bound = pad.get(d, size)
            parts, prod = [], 1
            for lm, lv in zip(self.levels, alevels):
                for what, facs in (("T", lm.temporal), ("X", lm.spatial_x), ("Y", lm.spatial_y)):
                    f = facs.get(d, 1)
                    if f != 1:
                        parts.append(f"{lv.name} {what}{f}")
                        prod *= f
            if prod != bound:
                expected = f"its padded bound {bound} (size {size})" if d in pad else f"its size {size}"
                raise UserError(f"{where}: dimension {d}: factors multiply to {prod} "
                                f"({' x '.join(parts) or 'no factors'}), expected {expected}"
                                f"{padding_hint(d, size, prod, pad, arch)}")
        for li, (lm, lv) in enumerate(zip(self.levels, alevels)):
            for axis, facs, limit in (("X", lm.spatial_x, lv.fanout_x), ("Y", lm.spatial_y, lv.fanout_y)):
                used = math.prod(facs.values())
                if used > limit:
                    raise UserError(f"{at(li, 'spatial_' + axis.lower())}: level {lv.name}: spatial {axis} factors "
                                    f"{ {d: f for d, f in facs.items() if f != 1} } use {used} "
                                    f"instances, fan-out {axis} is {limit}")
        from costmodel.tiles import tile_words  # late: tiles imports this module

        executed = padded_problem(problem, pad)
        one = MappingBatch.from_mappings([self], executed, arch)
        words = tile_words(executed, one.temporal, one.spatial_x, one.spatial_y)[0]
        for li, lv in enumerate(alevels):
            if lv.capacity_words is None:
                continue
            kept = [(t.name, int(words[li, ti])) for ti, t in enumerate(problem.tensors)
                    if self.keeps(li, t.name, arch)]
            need = sum(w for _, w in kept)
            usable = lv.capacity_words // 2 if lv.double_buffered else lv.capacity_words
            if need > usable:
                detail = ", ".join(f"{n} {w}" for n, w in kept)
                db = f" ({usable} usable with double buffering)" if lv.double_buffered else ""
                raise UserError(f"{at(li)}: level {lv.name}: tiles of kept tensors need {need} words "
                                f"({detail}) but capacity is {lv.capacity_words} words{db}; "
                                f"overflow {need - usable} word{'' if need - usable == 1 else 's'}")

    # ---- serialization ---------------------------------------------------------------------------
    def to_dict(self, arch: Architecture | None = None) -> dict[str, Any]:
        """Plain data (:meth:`from_dict`'s form); with ``arch``, each level entry names its level."""
        if arch is not None and len(arch.levels) != len(self.levels):
            raise ValueError(f"mapping: has {len(self.levels)} levels, architecture {arch.name} has "
                             f"{len(arch.levels)}: it is not a mapping on this config")
        out = []
        for i, lm in enumerate(self.levels):
            d = lm.to_dict()
            if arch is not None:
                d = {"level": arch.levels[i].name, **d}
            out.append(d)
        data: dict[str, Any] = {"levels": out}
        if self.padded:
            data["padded"] = {d: int(n) for d, n in self.padded}
        return data

    @classmethod
    def from_dict(cls, data: Any, arch: Architecture | None = None, where: str = "mapping",
                  lines: LineMap | None = None) -> Mapping:
        """Inverse of :meth:`to_dict`. With ``arch``, entries may name their ``level`` (any order;
        levels not listed get no loops); without names, entries are positional. ``lines`` (from
        :func:`costmodel.yamlio.load_data`) adds the line of each field to the messages."""

        def at(*path: str | int) -> str:
            return lines.where(path) if lines is not None else f"{where}: {format_path(path)}"

        extra = set(data) - {"levels", "padded"} if isinstance(data, dict) else set()
        if extra:  # (first: a misspelt 'levels' is also a missing one)
            raise UserError(f"{at(min(map(str, extra)))}: unknown field{_hint(extra, ('levels', 'padded'))}")
        if not isinstance(data, dict) or not isinstance(data.get("levels"), list):
            raise UserError(f"{where}: expected a mapping with a 'levels' list")
        padded = tuple(_factors(data.get("padded"), at("padded")).items())
        levels = []
        for i, e in _entries(data["levels"], arch, at):
            if not isinstance(e, dict):
                raise UserError(f"{at('levels', i)}: expected a mapping, got {short_repr(e)}")
            extra = set(e) - set(_LEVEL_FIELDS)
            if extra:
                raise UserError(f"{at('levels', i, min(map(str, extra)))}: unknown field"
                                f"{_hint(extra, _LEVEL_FIELDS[1:])}")
            levels.append(LevelMapping(
                temporal=_factors(e.get("temporal"), at("levels", i, "temporal")),
                order=_names(e.get("order"), at("levels", i, "order")),
                spatial_x=_factors(e.get("spatial_x"), at("levels", i, "spatial_x")),
                spatial_y=_factors(e.get("spatial_y"), at("levels", i, "spatial_y")),
                bypass=frozenset(_names(e.get("bypass"), at("levels", i, "bypass"))),
            ))
        return cls(tuple(levels), padded)

    def save(self, path: str | Path, arch: Architecture | None = None) -> Path:
        """Write YAML (or JSON for a .json path) atomically."""
        path = Path(path)
        data = self.to_dict(arch)
        if path.suffix == ".json":
            text = json.dumps(data, indent=2) + "\n"
        else:
            import yaml

            text = yaml.safe_dump(data, sort_keys=False, default_flow_style=None)
        return atomic_write_text(path, text)  # (its folder created; an unwritable path is a UserError)

    # ---- printout --------------------------------------------------------------------------------
    def loop_nest(self, problem: Problem, arch: Architecture) -> str:
        """The loop nest as Python-like text: one line per loop (factor > 1), spatial loops as
        ``parallel_for``, and per level the tile (words) of each tensor it keeps. (A mapping of
        another layer or config is a UserError, as :meth:`validate` says.)"""
        from costmodel.tiles import tile_words

        self.validate(problem, arch)

        sizes = problem.sizes
        problem = self.problem_for(problem)
        one = MappingBatch.from_mappings([self], problem, arch)
        words = tile_words(problem, one.temporal, one.spatial_x, one.spatial_y)[0]
        lines, depth = [], 0
        if self.padded:
            lines.append("# padded: " + ", ".join(f"{d} {sizes[d]} -> {n}" for d, n in self.padded))
        for li, (lm, lv) in enumerate(zip(self.levels, arch.levels)):
            kept = [f"{t.name} {int(words[li, ti])}" for ti, t in enumerate(problem.tensors)
                    if self.keeps(li, t.name, arch)]
            byp = [t.name for t in problem.tensors if not self.keeps(li, t.name, arch)]
            note = f"  (bypass {', '.join(byp)})" if byp else ""
            lines.append("  " * depth + f"# {lv.name}: tile words {', '.join(kept) or '-'}{note}")
            for d in lm.full_order(problem.dim_names):
                f = lm.temporal.get(d, 1)
                if f > 1:
                    lines.append("  " * depth + f"for {d.lower()}{li} in range({f}):")
                    depth += 1
            for axis, facs in (("X", lm.spatial_x), ("Y", lm.spatial_y)):
                for d in problem.dim_names:
                    f = facs.get(d, 1)
                    if f > 1:
                        lines.append("  " * depth + f"parallel_for {d.lower()}{li}{axis.lower()} "
                                     f"in range({f}):  # spatial {axis} below {lv.name}")
                        depth += 1
        lines.append("  " * depth + "mac()")
        return "\n".join(lines)


def _entries(raw: list[Any], arch: Architecture | None, at: Callable[..., str]) -> list[tuple[int, Any]]:
    """(index in the file, entry) per level: the config's levels in order where the entries name
    their ``level`` (-1 and no loops for a level not listed), else the entries as they are; ``at``
    places a message (the file's field path)."""
    entries = list(enumerate(raw))
    names = [e.get("level") if isinstance(e, dict) else None for _, e in entries]
    if all(n is None for n in names):
        return entries
    if arch is None:  # (read by position, they had landed on the wrong levels unseen)
        i = next(i for i, n in enumerate(names) if n is not None)
        raise UserError(f"{at('levels', i, 'level')}: entries that name their level need the config to be "
                        "placed: Mapping.from_dict(data, arch)")
    level_names = [lv.name for lv in arch.levels]
    slots: list[tuple[int, Any]] = [(-1, {}) for _ in level_names]
    for i, e in entries:
        n = names[i]
        if not isinstance(e, dict):
            raise UserError(f"{at('levels', i)}: expected a mapping, got {short_repr(e)}")
        if n not in level_names:
            hint = did_you_mean(n, level_names) if n is not None else ""
            raise UserError(f"{at('levels', i, 'level')}: expected one of {level_names}, got {n!r}{hint}")
        if n in names[:i]:
            raise UserError(f"{at('levels', i, 'level')}: {n!r} is listed twice")
        slots[level_names.index(n)] = (i, e)
    return slots


def load_mapping(path: str | Path, problem: Problem, arch: Architecture) -> Mapping:
    """Read a YAML/JSON mapping file and validate it against the layer and the config (a mistake
    is reported at the line of its field, in YAML)."""
    from costmodel.yamlio import load_data

    path = Path(path)
    data, lines = load_data(path)
    mapping = Mapping.from_dict(data, arch, where=str(path), lines=lines)
    index = tuple(i for i, _ in _entries(data["levels"], arch, str))  # (from_dict has checked the entries)
    mapping.validate(problem, arch, where=Place(lines.file if lines is not None else str(path), lines, index))
    return mapping


def batch_inner(a: np.ndarray) -> np.ndarray:
    """A [B, L, X] mapping array as the batch kernels read it, [L, X, B] (a view: C-contiguous for
    the batch-last arrays of MappingBatch, so the kernels' loops over the batch vectorize)."""
    return a.transpose(1, 2, 0)


def batch_last(a: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
    """Rows ``idx`` (default: all) of ``a`` [B, ...] as a view of a contiguous [..., B] array: the
    layout the cost model reads fastest (see ``MappingBatch.from_mappings``). One gather, fastest
    when ``a`` is such a view already. (Explicit transposes: ``np.moveaxis`` costs more than the
    gather on the mappers' small batches.)"""
    nd = a.ndim
    last = a.transpose(*range(1, nd), 0)
    out = np.ascontiguousarray(last) if idx is None else np.take(last, idx, axis=-1)
    return out.transpose(nd - 1, *range(nd - 1))


FACTOR_DTYPE, ORDER_DTYPE = np.int32, np.int8
"""The dtypes of a MappingBatch's factor and order arrays. Why not int64: the count kernel streams
the batch from memory, and a third of the bytes took 7-10 % off a whole evaluation
(10^5 mappings, docs/costmodel.md, session 23). Every factor divides a dim of at most
``costmodel.problem.MAX_DIM`` and every rank is below the number of dims (at most
``costmodel.problem.MAX_DIMS``), so they fit; the kernels and numpy's reductions compute in int64."""


@dataclass
class MappingBatch:
    """B mappings of one problem on one architecture as arrays (dims in ``problem.dim_names`` order,
    tensors in ``problem.tensors`` order): factors ``temporal``/``spatial_x``/``spatial_y`` [B, L, D],
    ``order`` [B, L, D] (rank of each dim in its level's loop order, 0 = outermost; a permutation
    of 0..D-1 per level), ``keep`` [B, L, T] (level 0 is treated as keeping everything). Factors are
    held as :data:`FACTOR_DTYPE` and orders as ``ORDER_DTYPE`` (other integer arrays are converted,
    never truncated)."""

    temporal: np.ndarray
    spatial_x: np.ndarray
    spatial_y: np.ndarray
    order: np.ndarray
    keep: np.ndarray

    def __post_init__(self) -> None:
        for name, dtype in (("temporal", FACTOR_DTYPE), ("spatial_x", FACTOR_DTYPE), ("spatial_y", FACTOR_DTYPE),
                            ("order", ORDER_DTYPE)):
            a = np.asarray(getattr(self, name))
            if a.dtype.kind not in "iu" and not (a.dtype.kind == "f" and np.array_equal(a, np.round(a))):
                raise ValueError(f"MappingBatch.{name}: expected integers, got dtype {a.dtype}"
                                 + (" with fractions" if a.dtype.kind == "f" else ""))
            lim = np.iinfo(dtype)
            if a.dtype != dtype and a.size and not (lim.min <= a.min() and a.max() <= lim.max):
                raise ValueError(f"MappingBatch.{name}: values {a.min()}..{a.max()} do not fit {lim.dtype} "
                                 f"(at most {lim.max:,})")
            setattr(self, name, a.astype(dtype, copy=False))
        self.keep = np.asarray(self.keep, dtype=bool)
        shape = self.temporal.shape
        if any(a.shape != shape for a in (self.spatial_x, self.spatial_y, self.order)):
            raise ValueError("MappingBatch: factor and order arrays must have the same [B, L, D] shape")
        if self.keep.shape[:2] != shape[:2]:
            raise ValueError("MappingBatch: keep must be [B, L, T] with the same B and L")

    def __len__(self) -> int:
        return int(self.temporal.shape[0])

    @classmethod
    def from_mappings(cls, mappings: Sequence[Mapping], problem: Problem, arch: Architecture) -> MappingBatch:
        dims, tensors = problem.dim_names, [t.name for t in problem.tensors]
        n_lv = len(arch.levels)
        b = len(mappings)
        # filled as contiguous [L, X, B] and handed over as [B, L, X] views: batch-last is the layout
        # the cost model's numpy stages (latency, energy) read fastest; the counting kernel reads
        # either (10^5 mappings on tpu_like: 2.7 vs 3.1 us each in all, 4 December 2026)
        # (int64 here: __post_init__ converts with its range check, a ValueError, where an int32 array
        # would raise numpy's OverflowError for a factor above 2**31 - 1)
        tem = np.ones((n_lv, len(dims), b), np.int64)
        sx, sy, order = tem.copy(), tem.copy(), np.zeros_like(tem)
        keep = np.zeros((n_lv, len(tensors), b), bool)
        for i, m in enumerate(mappings):
            if len(m.levels) != n_lv:
                raise UserError(f"mapping {i}: has {len(m.levels)} levels, architecture has {n_lv}")
            for li, lm in enumerate(m.levels):
                for di, d in enumerate(dims):
                    tem[li, di, i] = lm.temporal.get(d, 1)
                    sx[li, di, i] = lm.spatial_x.get(d, 1)
                    sy[li, di, i] = lm.spatial_y.get(d, 1)
                for rank, d in enumerate(lm.full_order(dims)):
                    if d in dims:
                        order[li, dims.index(d), i] = rank
                for ti, t in enumerate(tensors):
                    keep[li, ti, i] = m.keeps(li, t, arch)
        return cls(*(a.transpose(2, 0, 1) for a in (tem, sx, sy, order, keep)))

    def mapping(self, i: int, problem: Problem) -> Mapping:
        """Mapping ``i`` as a Mapping (bypass = tensors not kept) of ``problem``, the layer of the batch."""
        dims, tensors = problem.dim_names, [t.name for t in problem.tensors]
        if (len(dims), len(tensors)) != (self.temporal.shape[2], self.keep.shape[2]):
            raise ValueError(f"MappingBatch.mapping: the batch has {self.temporal.shape[2]} dims and "
                             f"{self.keep.shape[2]} tensors, {problem.describe()} has {len(dims)} and {len(tensors)}")
        levels = []
        for li in range(self.temporal.shape[1]):
            def facs(a: np.ndarray, li: int = li) -> dict[str, int]:
                return {d: int(a[i, li, di]) for di, d in enumerate(dims) if a[i, li, di] != 1}
            order = tuple(dims[di] for di in np.argsort(self.order[i, li], kind="stable"))
            levels.append(LevelMapping(facs(self.temporal), order, facs(self.spatial_x), facs(self.spatial_y),
                                       frozenset(t for ti, t in enumerate(tensors) if not self.keep[i, li, ti])))
        return Mapping(tuple(levels))
