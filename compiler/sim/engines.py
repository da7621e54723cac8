"""Three in-order engine queues linked by four token FIFOs: the order and time of every instruction.

Instructions are routed by engine (BARRIER and FINISH enter all three queues). The head of a queue
may start when each FIFO it pops holds a token; among startable heads the one with the earliest
start time runs next (ties: lowest instruction index), so functional execution follows the
timeline. Start times do not depend on that choice: a queue is in order and the k-th pop of a
FIFO always takes its k-th push. An instruction starts at ``max(engine free, popped tokens'
arrival)`` and its pushed tokens arrive at its end.

Protocol errors (SimError): *deadlock* (unfinished queues, no head can start), *overflow* (a
FIFO of depth D receives push n while pop n-D is not ordered before it by tokens -- i.e. some
timing would hold D+1 tokens; a timing-independent check), a missing or early FINISH. Tokens
left in a FIFO at FINISH are returned as warnings (the common "push always, pop from the third
tile on" double-buffering pattern leaves two).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from compiler.isa.instructions import Barrier, Finish, Gemm, Instruction, engine_of
from compiler.isa.program import finish_problem
from compiler.isa.spec import Engine
from compiler.sim.races import RaceDetector
from compiler.sim.state import SimError

_PREV = {Engine.EX: Engine.LD, Engine.ST: Engine.EX}
_NEXT = {Engine.LD: Engine.EX, Engine.EX: Engine.ST}


@dataclass
class _Fifo:
    src: Engine
    dst: Engine
    tokens: deque = field(default_factory=deque)  # (arrival cycle, pusher's vector clock, insn)
    pushes: int = 0
    pops: list = field(default_factory=list)  # per pop n: (popping engine's own clock, insn)

    @property
    def name(self) -> str:
        return f"{self.src.name}->{self.dst.name}"


@dataclass
class Timeline:
    """Per-instruction start/end cycles (-1: never ran) and per-engine totals."""

    start: np.ndarray
    end: np.ndarray
    busy: dict[Engine, int]
    stall: dict[Engine, int]
    cycles: int
    leftover: list[str]  # tokens still in a FIFO at FINISH: harmless for this program, reported as warnings


def _pops(insn: Instruction, engine: Engine) -> list[tuple[Engine, Engine]]:
    out = []
    if getattr(insn, "pop_prev", False):
        out.append((_PREV[engine], engine))
    if getattr(insn, "pop_next", False):
        out.append((_NEXT[engine], engine))
    return out


def _pushes(insn: Instruction, engine: Engine) -> list[tuple[Engine, Engine]]:
    out = []
    if getattr(insn, "push_prev", False):
        out.append((engine, _PREV[engine]))
    if getattr(insn, "push_next", False):
        out.append((engine, _NEXT[engine]))
    return out


def run_queues(
    insns: list[Instruction], depth: int, races: RaceDetector, describe: Callable[[int], str],
    execute: Callable[[int, Engine], None], latency: Callable[[int], int],
    overlap: Callable[[int], int] = lambda i: 0, ex_units: list | None = None, boxes: list | None = None,
) -> Timeline:
    """Run the program's queues to FINISH; ``execute(i, engine)`` does instruction i's work."""
    problem = finish_problem(insns, describe)
    if problem is not None:
        raise SimError(f"program: {problem}")
    queues: dict[Engine, list[int]] = {e: [] for e in Engine}
    pops: list[list] = []
    pushes: list[list] = []
    for i, insn in enumerate(insns):
        eng = engine_of(insn)
        for e in (Engine if eng is None else (eng,)):
            queues[e].append(i)
        pops.append([] if eng is None else _pops(insn, eng))
        pushes.append([] if eng is None else _pushes(insn, eng))
    fifos = {(a, b): _Fifo(a, b) for a, b in ((Engine.LD, Engine.EX), (Engine.EX, Engine.LD),
                                               (Engine.EX, Engine.ST), (Engine.ST, Engine.EX))}
    head = dict.fromkeys(Engine, 0)
    free = dict.fromkeys(Engine, 0)
    tail = dict.fromkeys(Engine, 0)  # cycles of the engine's last instruction a following GEMM may overlap
    is_gemm = [isinstance(x, Gemm) for x in insns]
    ex = _ExUnits(ex_units, boxes, overlap) if ex_units is not None else None
    busy = dict.fromkeys(Engine, 0)
    stall = dict.fromkeys(Engine, 0)
    start = np.full(len(insns), -1, dtype=np.int64)
    end = np.full(len(insns), -1, dtype=np.int64)

    while True:
        best = None  # (start cycle, index, engine)
        for e in Engine:
            if head[e] >= len(queues[e]):
                continue
            i = queues[e][head[e]]
            insn = insns[i]
            if isinstance(insn, Barrier | Finish):
                if all(head[f] < len(queues[f]) and queues[f][head[f]] == i for f in Engine):
                    cand = (max(free.values()), i, None)
                else:
                    continue
            else:
                if any(not fifos[k].tokens for k in pops[i]):
                    continue
                arrive = max([fifos[k].tokens[0][0] for k in pops[i]], default=0)
                if e == Engine.EX and ex_units is not None:
                    cand = (max(ex.earliest(i), arrive), i, e)
                else:
                    cand = (max(free[e] - (tail[e] if is_gemm[i] else 0), arrive), i, e)
            if best is None or cand[:2] < best[:2]:
                best = cand
        if best is None:
            if all(head[e] >= len(queues[e]) for e in Engine):
                break
            raise SimError(_deadlock(insns, queues, head, fifos, describe))
        t0, i, e = best
        insn = insns[i]
        if e is None:  # BARRIER / FINISH: every engine waits for the slowest (at FINISH that is idle time)
            for f in Engine:
                if isinstance(insn, Barrier):
                    stall[f] += t0 - free[f]
                    free[f], tail[f] = t0, 0
                if ex is not None and isinstance(insn, Barrier):
                    ex.align(t0)
                head[f] += 1
            races.barrier()
            start[i] = end[i] = t0
            continue
        for k in pops[i]:
            _, vc, _ = fifos[k].tokens.popleft()
            races.join(e, vc)
        races.tick(e)
        for k in pops[i]:
            fifos[k].pops.append((int(races.clock[e, e]), i))
        execute(i, e)
        t1 = t0 + latency(i)
        stall[e] += max(0, t0 - free[e])
        busy[e] += max(0, t1 - max(t0, free[e]))
        free[e], tail[e] = max(free[e], t1), overlap(i)
        if ex is not None and e == Engine.EX:
            ex.done(i, t0, t1)
        start[i], end[i] = t0, t1
        head[e] += 1
        for k in pushes[i]:
            _push(fifos[k], races, e, i, t1, depth, describe)

    left = [f"{len(f.tokens)} token(s) pushed to {f.name} were never popped (the last by "
            f"{describe(f.tokens[-1][2])})" for f in fifos.values() if f.tokens]
    return Timeline(start, end, busy, stall, int(end[-1]), left)


class _ExUnits:
    """The EX queue issues in order to two units, the systolic array and the vector unit, which run
    concurrently; an instruction waits for its unit (a GEMM after a GEMM overlaps its fill/drain),
    for the previous EX instruction to have started, and for every recent instruction of the other
    unit whose buffer rows (``boxes``: compiler.sim.timing.footprint) overlap its own."""

    WINDOW = 32

    def __init__(self, units: list, boxes: list, overlap: Callable[[int], int]) -> None:
        self.units, self.boxes, self.overlap = units, boxes, overlap
        self.unit_free = [0, 0]
        self.tail = 0  # the array's last GEMM's fill/drain, which a following GEMM may overlap
        self.issue = 0
        self.recent: deque = deque(maxlen=self.WINDOW)

    def earliest(self, i: int) -> int:
        u = self.units[i]
        if u is None:
            return max(self.issue, *self.unit_free)
        t = max(self.issue, self.unit_free[u] - (self.tail if u == 0 else 0))
        mine = self.boxes[i]
        for u2, theirs, end in self.recent:
            if u2 != u and end > t and _overlap(mine, theirs):
                t = end
        return t

    def done(self, i: int, t0: int, t1: int) -> None:
        u = self.units[i]
        self.issue = t0
        if u is None:
            self.unit_free = [max(self.unit_free[0], t1), max(self.unit_free[1], t1)]
            self.tail = 0
            return
        self.unit_free[u] = t1
        if u == 0:
            self.tail = self.overlap(i)
        self.recent.append((u, self.boxes[i], t1))

    def align(self, t: int) -> None:
        self.unit_free, self.tail, self.issue = [t, t], 0, t
        self.recent.clear()


def _overlap(a: tuple, b: tuple) -> bool:
    return any(ba == bb and lo < hi2 and lo2 < hi for ba, lo, hi in a for bb, lo2, hi2 in b)


def _push(fifo: _Fifo, races: RaceDetector, engine: Engine, index: int, t1: int, depth: int,
          describe: Callable[[int], str]) -> None:
    n = fifo.pushes
    if n >= depth:
        older = n - depth
        ok = older < len(fifo.pops) and races.ordered_before(engine, fifo.pops[older][0], fifo.dst)
        if not ok:
            raise SimError(f"token protocol: {describe(index)} pushes token {n + 1} into {fifo.name} (depth "
                           f"{depth}) while nothing orders pop {older + 1} before it: the FIFO can overflow")
    fifo.tokens.append((t1, races.snapshot(engine), index))
    fifo.pushes += 1


def _deadlock(insns: list[Instruction], queues: dict, head: dict, fifos: dict, describe: Callable) -> str:
    parts = []
    for e in Engine:
        if head[e] >= len(queues[e]):
            parts.append(f"{e.name} is done")
            continue
        i = queues[e][head[e]]
        insn = insns[i]
        if isinstance(insn, Barrier | Finish):
            parts.append(f"{e.name} waits at the {type(insn).__name__.upper()} {describe(i)}")
        else:
            empty = [fifos[k].name for k in _pops(insn, e) if not fifos[k].tokens]
            parts.append(f"{e.name} waits at {describe(i)} for a token on {' and '.join(empty)}")
    return "deadlock: no engine can proceed; " + "; ".join(parts)
