"""The compilable template: what the compiler and simulator may assume about a hwconfig.

A hwconfig becomes compilable by a ``compilable:`` block (read raw as ``arch.compilable``)::

    compilable:
      isa_version: 1              # must equal compiler.isa.ISA_VERSION
      lanes: 16                   # L, lanes per buffer row; v1 needs systolic rows == cols == lanes
      spad_level: GlobalBuffer    # arch level that is the scratchpad SPAD (int8 rows of L lanes)
      acc_level: Accumulator      # arch level that is the accumulator ACC (int32 rows of C lanes)
      const_kib: 16               # CONST buffer (int32 bias, fp32 scales, LUTs); not a cost-model level
      dma_bytes_per_cycle: 16     # per DMA engine (LD and ST each); default: DRAM read_bw * word_bits / 8
      dma_setup_cycles: 32        # fixed cycles per LOAD/STORE before its first byte
      token_depth: 8              # depth of each of the four token FIFOs
      dram_bytes: 268435456       # device DRAM address space (the binary's memory map must fit)
      vector_ops: [mov, add, ...] # VEC ops the vector unit implements (default: all of VecOp)
      gemm_timing: overlapped     # default GEMM latency mode of the timing simulator: scalesim | overlapped

Every key is optional except ``lanes``. The integers are bounded (``_RANGES``: e.g.
``dma_setup_cycles`` up to 10**9, ``dram_bytes`` up to 2**32) so that no cycle count of the simulator
overflows. Array rows/cols come from ``arch.systolic``; SPAD/ACC sizes from the named levels
(``capacity_words * word_bits / 8 * instances``). Without ``spad_level`` the innermost SRAM holding
both I and W is used; without ``acc_level`` the innermost level holding only O. Tests build a ``Target`` directly from keyword values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from compiler.isa.spec import ISA_VERSION, Buffer, VecOp
from costmodel.errors import UserError

GEMM_TIMINGS = ("scalesim", "overlapped")
_KEYS = {"isa_version", "lanes", "spad_level", "acc_level", "const_kib", "dma_bytes_per_cycle",
         "dma_setup_cycles", "token_depth", "dram_bytes", "vector_ops", "gemm_timing"}
# the integer keys' ranges: a DMA setup of 2**62 cycles overflowed the simulator's int64 times
# (a traceback); the CONST buffer and the DRAM map lie in the 32-bit DMA address space
_RANGES = {"lanes": (1, 4096), "const_kib": (1, 1 << 22), "dma_bytes_per_cycle": (1, 1 << 32),
           "dma_setup_cycles": (0, 10**9), "token_depth": (1, 1 << 16), "dram_bytes": (1, 1 << 32)}


@dataclass(frozen=True)
class Target:
    """A validated compilable config; the numbers the compiler, simulator and binary header share."""

    rows: int = 16
    cols: int = 16
    lanes: int = 16
    spad_bytes: int = 256 * 1024
    acc_bytes: int = 64 * 1024
    const_bytes: int = 16 * 1024
    dma_bytes_per_cycle: int = 16
    dma_setup_cycles: int = 32
    token_depth: int = 8
    dram_bytes: int = 1 << 28
    vector_ops: frozenset[VecOp] = field(default_factory=lambda: frozenset(VecOp))
    gemm_timing: str = "overlapped"
    clock_hz: float = 1e9
    name: str = "target"
    fingerprint: str = "0" * 16
    spad_level: str = ""  # arch level names (empty for a Target built by hand: no mapper then)
    acc_level: str = ""

    def __post_init__(self) -> None:
        where = f"target {self.name}"
        for key in ("rows", "cols", "lanes", "spad_bytes", "acc_bytes", "const_bytes", "dma_bytes_per_cycle",
                    "token_depth", "dram_bytes"):
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UserError(f"{where}: {key} = {value!r}, expected a positive integer")
        if not self.rows == self.cols == self.lanes:
            raise UserError(f"{where}: ISA v1 needs a square array with rows == cols == lanes, "
                            f"got {self.rows}x{self.cols} and lanes {self.lanes}")
        if self.gemm_timing not in GEMM_TIMINGS:
            raise UserError(f"{where}: gemm_timing = {self.gemm_timing!r}, expected one of {GEMM_TIMINGS}")
        if self.dram_bytes > 1 << 32:
            raise UserError(f"{where}: dram_bytes = {self.dram_bytes} exceeds the 32-bit DMA address field")

    def lane_bytes(self, buf: Buffer) -> int:
        """Bytes of one lane of ``buf`` (SPAD int8, ACC int32, CONST 32-bit)."""
        return 1 if buf == Buffer.SPAD else 4

    def row_bytes(self, buf: Buffer) -> int:
        return self.lanes * self.lane_bytes(buf)

    def buffer_rows(self, buf: Buffer) -> int:
        """Addressable rows of ``buf``."""
        size = {Buffer.SPAD: self.spad_bytes, Buffer.ACC: self.acc_bytes, Buffer.CONST: self.const_bytes}[buf]
        return size // self.row_bytes(buf)

    @property
    def spad_rows(self) -> int:
        return self.buffer_rows(Buffer.SPAD)

    @property
    def acc_rows(self) -> int:
        return self.buffer_rows(Buffer.ACC)

    @property
    def const_rows(self) -> int:
        return self.buffer_rows(Buffer.CONST)

    @classmethod
    def from_arch(cls, arch: Any) -> Target:
        """Validate ``arch.compilable`` and derive sizes from the arch's levels and systolic array."""
        at = _Locator(arch)
        block = getattr(arch, "compilable", None)
        if not isinstance(block, dict):
            raise UserError(f"{at()}: this config has no `compilable:` block (the ISA's parameters), so nothing "
                            f"can be compiled for it; shipped configs that have one: {', '.join(compilable_configs())}")
        unknown = sorted(set(block) - _KEYS)
        if unknown:
            raise UserError(f"{at(unknown[0])}: unknown key(s) {unknown}; expected some of {sorted(_KEYS)}")
        if block.get("isa_version", ISA_VERSION) != ISA_VERSION:
            raise UserError(f"{at('isa_version')} = {block['isa_version']!r}, this toolkit emits ISA {ISA_VERSION}")
        systolic = getattr(arch, "systolic", None)
        if systolic is None or getattr(systolic, "dataflow", "WS") != "WS":
            raise UserError(f"{at.top('systolic')}: the compilable template needs `systolic:` with dataflow WS "
                            "(the ISA's GEMM is weight-stationary)")
        if "lanes" not in block:
            raise UserError(f"{at('lanes')}: missing, expected the lanes per buffer row (= array rows)")
        levels = tuple(getattr(arch, "levels", ()))
        spad = _pick(levels, block.get("spad_level"), lambda h: {"I", "W"} <= h, at("spad_level"))
        acc = _pick(levels, block.get("acc_level"), lambda h: h == {"O"}, at("acc_level"))
        dma = block.get("dma_bytes_per_cycle")
        if dma is None:
            dram = levels[0] if levels else None
            bw = getattr(dram, "read_bw", None)
            if bw is None:
                raise UserError(f"{at('dma_bytes_per_cycle')}: missing, and the DRAM level has no read_bw")
            dma = max(1, int(bw * dram.word_bits // 8))
        if block.get("gemm_timing", "overlapped") not in GEMM_TIMINGS:
            raise UserError(f"{at('gemm_timing')} = {block['gemm_timing']!r}, expected one of {GEMM_TIMINGS}")
        ops = block.get("vector_ops")
        lanes = _int(block, "lanes", at)
        if not systolic.rows == systolic.cols == lanes:
            raise UserError(f"{at('lanes')} = {lanes}: ISA v1 needs a square array with rows == cols == lanes, "
                            f"and systolic is {systolic.rows}x{systolic.cols}")
        return cls(
            rows=systolic.rows, cols=systolic.cols, lanes=lanes,
            spad_bytes=_level_bytes(spad, at("spad_level")), acc_bytes=_level_bytes(acc, at("acc_level")),
            const_bytes=_int(block, "const_kib", at, 16) * 1024,
            dma_bytes_per_cycle=_int({"dma_bytes_per_cycle": dma}, "dma_bytes_per_cycle", at),
            dma_setup_cycles=_int(block, "dma_setup_cycles", at, 32),
            token_depth=_int(block, "token_depth", at, 8),
            dram_bytes=_int(block, "dram_bytes", at, 1 << 28),
            vector_ops=frozenset(VecOp) if ops is None else _ops(ops, at("vector_ops")),
            gemm_timing=block.get("gemm_timing", "overlapped"),
            clock_hz=float(getattr(arch, "clock_hz", 1e9)),
            name=str(getattr(arch, "name", "target")),
            fingerprint=arch.fingerprint(),
            spad_level=spad.name, acc_level=acc.name,
        )


class _Locator:
    """``file:line: compilable.KEY`` for messages (line from costmodel.yamlio when the config came
    from a YAML file; read only when an error is raised)."""

    def __init__(self, arch: Any) -> None:
        self.source = str(getattr(arch, "source", None) or getattr(arch, "name", "config"))

    def top(self, *path: str | int) -> str:
        from pathlib import Path

        from costmodel.yamlio import format_path, load_yaml

        if Path(self.source).is_file():
            try:
                return load_yaml(self.source)[1].where(path)
            except UserError:
                pass
        return f"{self.source}: {format_path(path)}"

    def __call__(self, *path: str | int) -> str:
        return self.top("compilable", *path)


def _int(block: dict, key: str, at: _Locator, default: int | None = None) -> int:
    value = block.get(key, default)
    low, high = _RANGES[key]
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise UserError(f"{at(key)} = {value!r}, expected an integer from {low} to {high:,}")
    return value


def _ops(names: Iterable[Any], where: str) -> frozenset[VecOp]:
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise UserError(f"{where}: expected a list of op names, got {names!r}")
    out = set()
    for n in names:
        try:
            out.add(VecOp[str(n).upper()])
        except KeyError:
            raise UserError(f"{where}: unknown op {n!r}; expected some of "
                            f"{[o.name.lower() for o in VecOp]}") from None
    return frozenset(out)


def _pick(levels: tuple, name: Any, default_rule: Any, where: str) -> Any:
    if name is not None:
        for lv in levels:
            if lv.name == name:
                return lv
        raise UserError(f"{where} = {name!r}: no such level; levels are {[lv.name for lv in levels]}")
    for lv in reversed(levels):
        if getattr(lv, "kind", "") != "dram" and default_rule(set(getattr(lv, "holds", ()))):
            return lv
    raise UserError(f"{where}: missing, and no level qualifies by the tensors it holds; name one")


def _level_bytes(level: Any, where: str) -> int:
    words = getattr(level, "capacity_words", None)
    if words is None:
        raise UserError(f"{where}: level {level.name} has no capacity_words; a buffer must be bounded")
    return int(words * level.word_bits // 8) * int(getattr(level, "instances", 1) or 1)


def compilable_configs() -> list[str]:
    """Names of the shipped hwconfigs with a top-level ``compilable:`` block (for error messages)."""
    import re

    from costmodel.arch import HWCONFIGS

    block = re.compile(r"^compilable:", re.MULTILINE)
    return sorted(p.stem for p in HWCONFIGS.glob("*.yaml") if block.search(p.read_text(encoding="utf-8")))
