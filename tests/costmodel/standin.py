"""Test helpers: a minimal architecture stand-in and random problems/mappings (seeded).

The stand-in has only what mapping/analysis read of costmodel.arch.Level, so the walker
agreement tests can vary multicast, reduction and fan-outs freely.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from costmodel import problem as P
from costmodel.mapping import LevelMapping, Mapping


@dataclass(frozen=True)
class Level:
    name: str
    holds: tuple[str, ...] = ("I", "W", "O")
    capacity_words: int | None = None
    fanout_x: int = 1
    fanout_y: int = 1
    multicast: bool = True
    spatial_reduction: bool = True
    double_buffered: bool = False
    kind: str = "sram"

    @property
    def fanout(self) -> int:  # as costmodel.arch.Level's
        return self.fanout_x * self.fanout_y


@dataclass(frozen=True)
class Arch:
    levels: tuple[Level, ...]
    name: str = "standin"
    extra: dict = field(default_factory=dict)


def random_problem(rng: random.Random) -> P.Problem:
    """A small layer of a random kind (sizes keep the walker fast)."""
    kind = rng.choice(["conv", "conv", "dw", "group", "conv1d", "tconv", "matmul"])
    if kind == "conv":
        k = rng.choice([1, 2, 3])
        s = rng.choice([1, 2])
        d = rng.choice([1, 1, 2])
        h = (k - 1) * d + 1 + s * rng.randint(0, 3)
        return P.conv2d(rng.choice([1, 2]), rng.choice([1, 2, 3]), h, rng.randint((k - 1) * d + 1, 5),
                        kernel=(k, rng.choice([1, k])), stride=s, dilation=d)
    if kind == "dw":
        return P.depthwise_conv2d(rng.choice([2, 3]), rng.randint(3, 5), rng.randint(3, 4), kernel=3)
    if kind == "group":
        return P.conv2d(4, 2, 3, 4, kernel=(2, 1), groups=2)
    if kind == "conv1d":
        k = rng.choice([2, 3])
        d = rng.choice([1, 2]) if k == 2 else 1
        return P.conv1d(2, 2, rng.randint((k - 1) * d + 1, 7), kernel=k, stride=rng.choice([1, 2]), dilation=d)
    if kind == "tconv":
        return P.conv_transpose2d(rng.choice([1, 2]), rng.choice([1, 2]), rng.randint(1, 3), rng.randint(1, 3),
                                  kernel=rng.choice([2, 3]), stride=rng.choice([1, 2]))
    return P.matmul(rng.randint(1, 4), rng.randint(1, 4), rng.randint(1, 4), batch=rng.choice([1, 2]))


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


def random_arch(rng: random.Random, n_levels: int) -> Arch:
    levels = [Level("DRAM", fanout_x=rng.choice([1, 2, 4]), fanout_y=rng.choice([1, 2]),
                    multicast=rng.random() < 0.6, spatial_reduction=rng.random() < 0.6, kind="dram")]
    for i in range(1, n_levels):
        holds = tuple(t for t in ("I", "W", "O") if rng.random() < 0.8)
        levels.append(Level(f"L{i}", holds=holds, fanout_x=rng.choice([1, 2, 4]), fanout_y=rng.choice([1, 2, 3]),
                            multicast=rng.random() < 0.6, spatial_reduction=rng.random() < 0.6))
    return Arch(tuple(levels))


def random_mapping(rng: random.Random, problem: P.Problem, arch: Arch) -> Mapping:
    """Random factorization of every dimension over all slots (spatial within fan-outs), random
    orders and random bypass."""
    n = len(arch.levels)
    tem = [{} for _ in range(n)]
    sx = [{} for _ in range(n)]
    sy = [{} for _ in range(n)]
    used_x, used_y = [1] * n, [1] * n
    for d, size in problem.dims:
        for p in _prime_factors(size):
            while True:
                lv = rng.randrange(n)
                kind = rng.choice("TTXY")
                if kind == "X" and used_x[lv] * p <= arch.levels[lv].fanout_x:
                    used_x[lv] *= p
                    sx[lv][d] = sx[lv].get(d, 1) * p
                elif kind == "Y" and used_y[lv] * p <= arch.levels[lv].fanout_y:
                    used_y[lv] *= p
                    sy[lv][d] = sy[lv].get(d, 1) * p
                elif kind == "T":
                    tem[lv][d] = tem[lv].get(d, 1) * p
                else:
                    continue
                break
    levels = []
    for i in range(n):
        order = list(problem.dim_names)
        rng.shuffle(order)
        bypass = frozenset(t.name for t in problem.tensors if i > 0 and rng.random() < 0.3)
        levels.append(LevelMapping(tem[i], tuple(order), sx[i], sy[i], bypass))
    return Mapping(tuple(levels))
