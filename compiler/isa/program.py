"""A compiled program in memory: instructions plus everything the binary container carries.

Kept apart from the container code so the compiler, the simulator and the assembler share one
type without importing file I/O. Tables convert to and from plain JSON values; ``from_json``
validates strictly (every field, every type) so a corrupted or hand-edited file fails with a
UserError that says where, never with a KeyError/TypeError.
"""

from __future__ import annotations

import json
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

from compiler.isa.instructions import Finish, Instruction
from compiler.isa.spec import ISA_VERSION
from costmodel.errors import UserError, placed
from costmodel.yamlio import short_repr

DTYPES = ("int8", "uint8", "int16", "int32", "float32")
_DTYPE_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "int32": 4, "float32": 4}
_ZP_RANGE = {"int8": (-128, 127), "uint8": (0, 255), "int16": (-(2**15), 2**15 - 1)}
DIRECTIONS = ("input", "output")
CONST_KINDS = ("weights", "bias", "scales", "lut", "other")
_LAYOUT = re.compile(r"^([A-Z]+)(?:c([1-9][0-9]*))?$")


def parse_layout(layout: str, rank: int) -> int | None:
    """The lane count of a blocked layout such as ``NCHWc16`` (None for plain ``NCHW``)."""
    m = _LAYOUT.match(layout)
    if m is None or len(m.group(1)) != rank or len(set(m.group(1))) != rank:
        raise UserError(f"layout {layout!r}: expected {rank} distinct axis letters, optionally + 'c<lanes>'")
    if m.group(2) is not None and rank < 2:
        raise UserError(f"layout {layout!r}: channel blocking needs a channel axis (rank >= 2)")
    return int(m.group(2)) if m.group(2) else None


def canonical_json(value: Any) -> bytes:
    """The one JSON spelling of a table (sorted keys, no spaces), so equal programs give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _field(obj: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise UserError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise UserError(f"{where}: field {key!r} = {value!r} has the wrong type")
    if isinstance(value, str):
        _unicode(value, f"{where}: field {key!r}")
    return value


def _unicode(text: str, where: str) -> None:
    """JSON text may escape a lone surrogate (``"\\ud800"``), which no UTF-8 file can hold: the
    binary writer failed on it with a traceback."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{where}: {text!r} holds a lone surrogate escape, not Unicode text") from None


def _obj(value: Any, keys: set[str], where: str) -> dict:
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected an object, got {type(value).__name__}")
    extra = set(value) - keys
    if extra:
        raise UserError(f"{where}: unknown field(s) {sorted(extra)}")
    return value


def _nonneg(value: int, key: str, where: str, limit: int = 1 << 64) -> int:
    if not 0 <= value < limit:
        raise UserError(f"{where}: field {key!r} = {value} out of range [0, {limit})")
    return value


def finish_problem(insns: list[Instruction], describe: Any = lambda i: f"instruction {i}") -> str | None:
    """Why ``insns`` cannot run to its end: no FINISH last, or one before the end (None: neither).
    The simulator refuses such a program; the assembler refuses to write it."""
    if not insns or not isinstance(insns[-1], Finish):
        return "the last instruction must be FINISH"
    early = next((i for i, x in enumerate(insns[:-1]) if isinstance(x, Finish)), None)
    return None if early is None else f"{describe(early)} is a FINISH before the end of the program"


def fingerprint_problem(fp: Any) -> str | None:
    """Why ``fp`` is not a config fingerprint (None: it is); the assembler asks at the directive's line."""
    if isinstance(fp, str) and len(fp) == 16 and all(c in "0123456789abcdef" for c in fp):
        return None
    return f"fingerprint {fp!r} must be 16 lowercase hex digits"


def memmap_problem(key: str, value: Any) -> str | None:
    """Why ``value`` is not a valid ``dram_size`` / ``const_base`` (None: it is)."""
    try:
        ok = not isinstance(value, bool) and 0 <= operator.index(value) <= 1 << 32
    except TypeError:
        ok = False
    return None if ok else f"{key} = {value!r}, expected an integer in [0, 2**32]"


@dataclass(frozen=True)
class IOTensor:
    """One model input or output as it sits in device DRAM."""

    name: str
    direction: str  # "input" | "output"
    dtype: str  # one of DTYPES
    shape: tuple[int, ...]
    layout: str  # e.g. "NCHW", or channel-blocked "NCHWc16" (see docs/binary-format.md)
    addr: int  # DRAM byte address
    scale: float = 1.0  # quantization: real = scale * (q - zero_point)
    zero_point: int = 0

    def __post_init__(self) -> None:
        where = f"io tensor {self.name!r}"
        try:  # accept numpy scalars from the compiler; store plain Python numbers (JSON-serializable)
            object.__setattr__(self, "shape", tuple(operator.index(d) for d in self.shape))
            object.__setattr__(self, "addr", operator.index(self.addr))
            object.__setattr__(self, "zero_point", operator.index(self.zero_point))
        except (TypeError, ValueError):
            raise UserError(f"{where}: shape, addr and zero_point must be integers") from None
        try:
            object.__setattr__(self, "scale", float(self.scale))
        except (TypeError, ValueError, OverflowError):  # (an integer of 400 digits: no float)
            raise UserError(f"{where}: scale {short_repr(self.scale)} must be a finite positive number") from None
        if self.direction not in DIRECTIONS:
            raise UserError(f"{where}: direction {self.direction!r}, expected one of {DIRECTIONS}")
        if self.dtype not in DTYPES:
            raise UserError(f"{where}: dtype {self.dtype!r}, expected one of {DTYPES}")
        if not all(d >= 1 for d in self.shape):
            raise UserError(f"{where}: shape {self.shape!r} must be positive integers")
        if math.prod(self.shape) * _DTYPE_BYTES[self.dtype] > 1 << 32:
            raise UserError(f"{where}: shape {self.shape!r} does not fit the 32-bit DRAM address space")
        lo, hi = _ZP_RANGE.get(self.dtype, (0, 0))
        if not lo <= self.zero_point <= hi:
            raise UserError(f"{where}: zero_point {self.zero_point!r} outside [{lo}, {hi}] for {self.dtype}")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise UserError(f"{where}: scale {self.scale!r} must be a finite positive number")
        _nonneg(self.addr, "addr", where, 1 << 32)
        try:
            parse_layout(self.layout, len(self.shape))
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None

    def outside(self, dram_size: int) -> str | None:
        """Why this tensor's bytes do not fit a memory map of ``dram_size`` bytes, or None (checked
        when a program is built or read, not first by the simulator, without the binary's name)."""
        from compiler.isa.layout import nbytes  # (late: layout imports this module)

        size = nbytes(self)
        if self.addr + size > dram_size:
            return f"io tensor {self.name!r} [{self.addr}, +{size}) lies outside the {dram_size}-byte memory map"
        return None

    def to_json(self) -> dict:
        return {"name": self.name, "direction": self.direction, "dtype": self.dtype, "shape": list(self.shape),
                "layout": self.layout, "addr": self.addr, "scale": self.scale, "zero_point": self.zero_point}

    @classmethod
    def from_json(cls, value: Any, where: str) -> IOTensor:
        o = _obj(value, {"name", "direction", "dtype", "shape", "layout", "addr", "scale", "zero_point"}, where)
        shape = _field(o, "shape", list, where)
        if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
            raise UserError(f"{where}: shape {shape!r} must be a list of integers")
        try:  # (the checks of __post_init__ name the tensor; ``where`` adds the file and line, or the entry)
            return cls(name=_field(o, "name", str, where), direction=_field(o, "direction", str, where),
                       dtype=_field(o, "dtype", str, where), shape=tuple(shape),
                       layout=_field(o, "layout", str, where), addr=_field(o, "addr", int, where),
                       scale=_field(o, "scale", (int, float), where), zero_point=_field(o, "zero_point", int, where))
        except UserError as exc:
            raise placed(exc, where) from None


@dataclass(frozen=True)
class ConstSegment:
    """A named slice of the constants blob (for the disassembler and for debugging)."""

    name: str
    kind: str  # one of CONST_KINDS
    offset: int
    size: int

    def __post_init__(self) -> None:
        if self.kind not in CONST_KINDS:
            raise UserError(f"constant segment {self.name!r}: kind {self.kind!r}, expected one of {CONST_KINDS}")
        try:
            object.__setattr__(self, "offset", operator.index(self.offset))
            object.__setattr__(self, "size", operator.index(self.size))
        except TypeError:
            raise UserError(f"constant segment {self.name!r}: offset and size must be integers") from None

    def outside(self, n_bytes: int) -> str | None:
        """Why this segment does not fit a constants section of ``n_bytes`` bytes, or None."""
        if self.offset < 0 or self.size < 0 or self.offset + self.size > n_bytes:
            return (f"constant segment {self.name!r} [{self.offset}, +{self.size}) lies outside "
                    f"the {n_bytes}-byte constants section")
        return None

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "offset": self.offset, "size": self.size}

    @classmethod
    def from_json(cls, value: Any, where: str) -> ConstSegment:
        o = _obj(value, {"name", "kind", "offset", "size"}, where)
        try:
            return cls(name=_field(o, "name", str, where), kind=_field(o, "kind", str, where),
                       offset=_nonneg(_field(o, "offset", int, where), "offset", where),
                       size=_nonneg(_field(o, "size", int, where), "size", where))
        except UserError as exc:
            raise placed(exc, where) from None


@dataclass(frozen=True)
class DebugEntry:
    """Where an instruction comes from: the ONNX node and the tile of its mapping."""

    node: str
    tile: str = ""

    def __post_init__(self) -> None:
        if not (isinstance(self.node, str) and isinstance(self.tile, str)):
            raise UserError(f"debug entry ({self.node!r}, {self.tile!r}): node and tile must be strings")
        for text in (self.node, self.tile):
            _unicode(text, "debug entry")


@dataclass
class Program:
    """Everything an ``.axb`` file holds (see docs/binary-format.md)."""

    instructions: list[Instruction]
    fingerprint: str = "0" * 16  # costmodel Architecture.fingerprint() of the config it was built for
    constants: bytes = b""
    const_base: int = 0  # DRAM byte address where the runtime places `constants`
    const_segments: list[ConstSegment] = field(default_factory=list)
    io: list[IOTensor] = field(default_factory=list)
    dram_size: int = 0  # bytes of device DRAM the program uses (memory map size)
    debug: dict[int, DebugEntry] = field(default_factory=dict)
    isa_version: int = ISA_VERSION

    def validate(self) -> None:
        """Consistency that does not depend on a config: raises UserError."""
        if why := fingerprint_problem(self.fingerprint):
            raise UserError(f"program: {why}")
        if self.isa_version != ISA_VERSION:
            raise UserError(f"program: ISA version {self.isa_version}, this toolkit writes {ISA_VERSION}")
        for key in ("dram_size", "const_base"):
            value = getattr(self, key)
            if why := memmap_problem(key, value):
                raise UserError(f"program: {why}")
            setattr(self, key, operator.index(value))
        for seg in self.const_segments:
            if why := seg.outside(len(self.constants)):
                raise UserError(why)
        for i in self.debug:
            if not 0 <= i < len(self.instructions):
                raise UserError(f"debug map: entry for instruction {i}, but there are {len(self.instructions)}")
        if self.const_base + len(self.constants) > self.dram_size and self.constants:
            raise UserError(f"constants [{self.const_base}, +{len(self.constants)}) exceed dram_size {self.dram_size}")
        names = [t.name for t in self.io]
        if len(set(names)) != len(names):
            raise UserError(f"io table: repeated tensor name in {names}")
        for t in self.io:
            if why := t.outside(self.dram_size):
                raise UserError(why)

    def where(self, index: int) -> str:
        """``instruction 12 (conv1, tile k0)`` for messages from the simulator and checkers."""
        entry = self.debug.get(index)
        if entry is None:
            return f"instruction {index}"
        return f"instruction {index} ({entry.node}{', ' + entry.tile if entry.tile else ''})"

    def check_fingerprint(self, expected: str, config: str = "the config") -> None:
        """Refuse a binary built for another config (Gemmini's #1 support problem)."""
        if self.fingerprint != expected:
            raise UserError(f"binary was built for config fingerprint {self.fingerprint}, but {config} has "
                            f"{expected}; recompile for this config")
