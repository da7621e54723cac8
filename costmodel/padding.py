"""Padded loop bounds (imperfect factors): what a padded mapping executes, and what a config allows.

A config that declares ``mapspace.padding`` lets a mapping pad a dimension of size ``D`` to a bound
``D' <= floor(D * (1 + max_fraction))`` (zero-padded data, as hardware does to fill an array whose
width a prime channel count does not divide). The padded loop nest is what runs: its factors multiply
to ``D'``, and the cost model charges the padded MACs and tiles (:func:`padded_problem`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

from costmodel.errors import UserError
from costmodel.problem import as_int

if TYPE_CHECKING:
    from costmodel.arch import Architecture
    from costmodel.mapping import Mapping
    from costmodel.problem import Problem


def padding_limit(size: int, max_fraction: float) -> int:
    """The largest bound a dimension of ``size`` may be padded to: ``floor(size * (1 + max_fraction))``
    (rounded first, so 10 * 1.1 counts as 11 and not 11.000000000000002 or 10.99999...)."""
    return math.floor(round(size * (1.0 + max_fraction), 9))


def padded_problem(problem: Problem, padded: dict[str, int]) -> Problem:
    """``problem`` with the given loop bounds enlarged: the loop nest a padded mapping executes
    (tensor extents follow, e.g. a padded ``P`` enlarges the input's ``stride*P + R`` axis). The
    constructor arguments no longer describe it, so ``params`` is dropped."""
    if not any(problem.sizes[d] != n for d, n in padded.items()):
        return problem
    return dataclasses.replace(problem, dims=tuple((d, padded.get(d, n)) for d, n in problem.dims), params=())


def check_padding(mapping: Mapping, problem: Problem, arch: Architecture, where: str) -> dict[str, int]:
    """The mapping's padded bounds, checked against the config's allowance (``mapspace.padding``)."""
    pad = dict(mapping.padded)
    sizes = problem.sizes
    allow = getattr(arch, "padding", None)  # duck-typed test configs may lack the field
    for d, n in pad.items():
        if d not in sizes:
            raise UserError(f"{where}: padded: unknown dimension {d!r} (problem has {', '.join(problem.dim_names)})")
        if as_int(n) is None or n < sizes[d]:
            raise UserError(f"{where}: padded.{d}: expected an integer >= its size {sizes[d]}, got {n!r}")
        if n == sizes[d]:
            continue
        if allow is None:
            raise UserError(f"{where}: padded.{d}: pads {d} from {sizes[d]} to {n}, but {arch.source} does not "
                            f"allow padding (hwconfig field mapspace.padding)")
        if allow.dims is not None and d not in allow.dims:
            raise UserError(f"{where}: padded.{d}: {arch.source} allows padding only of {list(allow.dims)} "
                            f"(mapspace.padding.dims)")
        limit = padding_limit(sizes[d], allow.max_fraction)
        if n > limit:
            raise UserError(f"{where}: padded.{d}: pads {d} from {sizes[d]} to {n}, beyond the allowance of "
                            f"{arch.source}: at most {limit} (mapspace.padding.max_fraction {allow.max_fraction:g})")
    return pad


def padding_hint(d: str, size: int, prod: int, pad: dict[str, int], arch: Architecture) -> str:
    """For a factor product that is not the bound: whether padding could make it valid, and how."""
    allow = getattr(arch, "padding", None)
    if d in pad or prod < size:
        return ""
    if allow is None:
        return f" (imperfect factors need padding, which {arch.source} does not allow: mapspace.padding)"
    if allow.dims is not None and d not in allow.dims:
        return f" ({arch.source} allows padding only of {list(allow.dims)})"
    limit = padding_limit(size, allow.max_fraction)
    if prod <= limit:
        return f" (to pad {d} to {prod}, declare it: padded: {{{d}: {prod}}})"
    return f" (padding {d} is allowed up to {limit} only: mapspace.padding.max_fraction {allow.max_fraction:g})"
