"""Cross-engine race detection with vector clocks (happens-before from program order and tokens).

Each engine keeps a vector clock; an instruction ticks its engine's entry, a pushed token carries
the pusher's clock and a pop joins it, a BARRIER joins all three. Every buffer row records the
(engine, clock, instruction) of its last write and each engine's last read. An access by engine
``e`` conflicts with an earlier access by another engine ``f`` unless ``clock_e[f]`` has reached
that access's clock -- i.e. unless a chain of tokens orders them. This finds a missing token even
when the execution order chosen by the simulator happened to be benign.

DRAM is only touched by LD (reads) and ST (writes); pending unordered accesses are kept as DMA
boxes (vector starts + vector size) and pruned as soon as the other engine's clock covers them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from compiler.isa.spec import Buffer, Engine
from compiler.sim.state import SimError


@dataclass(frozen=True)
class BufAccess:
    buf: Buffer
    rows: np.ndarray | slice  # int64 row numbers (any shape, duplicates allowed), or a contiguous range
    write: bool


@dataclass(frozen=True)
class DramAccess:
    starts: np.ndarray  # int64 first byte of each vector
    vbytes: int
    write: bool

    @property
    def lo(self) -> int:
        return int(self.starts.min())

    @property
    def hi(self) -> int:
        return int(self.starts.max()) + self.vbytes


@dataclass
class _Rows:
    """Per-row access records of one buffer."""

    w_eng: np.ndarray
    w_clk: np.ndarray
    w_insn: np.ndarray
    r_clk: np.ndarray  # [engine, row]
    r_insn: np.ndarray

    @classmethod
    def create(cls, rows: int) -> _Rows:
        n = len(Engine)
        return cls(np.full(rows, -1, np.int64), np.zeros(rows, np.int64), np.full(rows, -1, np.int64),
                   np.zeros((n, rows), np.int64), np.full((n, rows), -1, np.int64))


@dataclass
class _Pending:
    engine: Engine
    clock: int
    insn: int
    access: DramAccess


def _masks_overlap(a: DramAccess, b: DramAccess) -> int | None:
    """The first DRAM byte both boxes touch, or None."""
    lo, hi = max(a.lo, b.lo), min(a.hi, b.hi)
    if lo >= hi:
        return None
    marks = []
    for acc in (a, b):
        m = np.zeros(hi - lo, dtype=bool)
        byte = (acc.starts[:, None] + np.arange(acc.vbytes)[None, :]).ravel() - lo
        m[byte[(byte >= 0) & (byte < hi - lo)]] = True
        marks.append(m)
    both = np.flatnonzero(marks[0] & marks[1])
    return int(both[0]) + lo if both.size else None


class RaceDetector:
    """Checks and records every access; raises SimError on the first unordered conflict."""

    def __init__(self, buffer_rows: dict[Buffer, int], describe: Callable[[int], str]) -> None:
        self.clock = np.zeros((len(Engine), len(Engine)), dtype=np.int64)  # clock[e] = vector clock of e
        self.rows = {b: _Rows.create(n) for b, n in buffer_rows.items()}
        self.pending: list[_Pending] = []
        self.describe = describe

    # --- happens-before -------------------------------------------------------------------------
    def tick(self, engine: Engine) -> None:
        self.clock[engine, engine] += 1

    def snapshot(self, engine: Engine) -> np.ndarray:
        return self.clock[engine].copy()

    def join(self, engine: Engine, other: np.ndarray) -> None:
        np.maximum(self.clock[engine], other, out=self.clock[engine])

    def barrier(self) -> None:
        self.clock[:] = self.clock.max(axis=0)

    def ordered_before(self, engine: Engine, clock_of_other: int, other: Engine) -> bool:
        """Is ``other``'s access at ``clock_of_other`` ordered before ``engine``'s current point?"""
        return bool(self.clock[engine, other] >= clock_of_other)

    # --- accesses -------------------------------------------------------------------------------
    def access(self, index: int, engine: Engine, accesses: list) -> None:
        vc = self.clock[engine]
        for a in accesses:
            if isinstance(a, BufAccess):
                self._check_rows(index, engine, vc, a)
            else:
                self._check_dram(index, engine, a)
        me = int(vc[engine])
        for a in accesses:
            if isinstance(a, BufAccess):
                rec = self.rows[a.buf]
                if a.write:
                    rec.w_eng[a.rows], rec.w_clk[a.rows], rec.w_insn[a.rows] = int(engine), me, index
                else:
                    rec.r_clk[engine, a.rows], rec.r_insn[engine, a.rows] = me, index
            else:
                self.pending.append(_Pending(engine, me, index, a))

    def _race(self, index: int, engine: Engine, kind: str, what: str, other: int) -> SimError:
        return SimError(f"race ({kind}): {self.describe(index)} on {engine.name} {what} "
                        f"{self.describe(other)} with no token chain ordering them")

    def _check_rows(self, index: int, engine: Engine, vc: np.ndarray, a: BufAccess) -> None:
        rec = self.rows[a.buf]
        rows = a.rows if isinstance(a.rows, slice) else a.rows.ravel()
        at = (lambda k: rows.start + int(k)) if isinstance(rows, slice) else (lambda k: int(rows[k]))
        weng = rec.w_eng[rows]
        bad = (weng >= 0) & (weng != int(engine))
        if bad.any():
            bad &= rec.w_clk[rows] > vc[np.maximum(weng, 0)]
            if bad.any():
                r = at(np.argmax(bad))
                verb = "writes" if a.write else "reads"
                raise self._race(index, engine, "WAW" if a.write else "RAW",
                                 f"{verb} {a.buf.name} row {r}, last written by", int(rec.w_insn[r]))
        if a.write:
            for f in Engine:
                if f == engine:
                    continue
                late = rec.r_clk[f, rows] > vc[f]
                if late.any():
                    r = at(np.argmax(late))
                    raise self._race(index, engine, "WAR", f"overwrites {a.buf.name} row {r}, still being read by",
                                     int(rec.r_insn[f, r]))

    def _check_dram(self, index: int, engine: Engine, a: DramAccess) -> None:
        keep = []
        for p in self.pending:
            if p.engine != engine and self.ordered_before(engine, p.clock, p.engine):
                continue  # ordered before this (the only other DRAM) engine from now on: forget it
            keep.append(p)
            if p.engine == engine:
                continue
            if not (a.write or p.access.write):
                continue  # two reads never conflict
            byte = _masks_overlap(a, p.access)
            if byte is not None:
                kind = "WAW" if a.write and p.access.write else ("RAW" if p.access.write else "WAR")
                verb = "writes" if a.write else "reads"
                raise self._race(index, engine, kind, f"{verb} DRAM byte {byte}, also accessed by", p.insn)
        self.pending = keep
