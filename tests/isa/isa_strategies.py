"""Hypothesis strategies for random instructions and programs, built from the spec table itself."""

from __future__ import annotations

from hypothesis import strategies as st

from compiler.isa.instructions import CLASSES, engine_of
from compiler.isa.layout import nbytes
from compiler.isa.program import ConstSegment, DebugEntry, IOTensor, Program
from compiler.isa.spec import FORMATS, ILLEGAL_TOKENS, Field, Opcode


def field_values(f: Field) -> st.SearchStrategy:
    if f.enum is not None:
        return st.sampled_from(list(f.enum))
    if f.flag:
        return st.booleans()
    return st.integers(f.min, f.max)


@st.composite
def instructions(draw, opcode: Opcode | None = None):
    opc = draw(st.sampled_from(list(FORMATS))) if opcode is None else opcode
    fmt = FORMATS[opc]
    values = {f.name: draw(field_values(f)) for f in fmt.operands}
    insn = CLASSES[opc](**values)
    engine = engine_of(insn)
    if engine is not None:  # clear the token flags this engine cannot use
        values.update({t: False for t in ILLEGAL_TOKENS[engine]})
        insn = CLASSES[opc](**values)
    return insn


names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@st.composite
def programs(draw):
    insns = draw(st.lists(instructions(), max_size=12))
    consts = draw(st.binary(max_size=100))
    segs = []
    if consts:
        for _ in range(draw(st.integers(0, 2))):
            off = draw(st.integers(0, len(consts)))
            segs.append(ConstSegment(draw(names), draw(st.sampled_from(["weights", "bias", "scales", "lut"])), off,
                                     draw(st.integers(0, len(consts) - off))))
    io_names = draw(st.lists(names, max_size=3, unique=True))
    io = []
    for n in io_names:
        shape = tuple(draw(st.lists(st.integers(1, 64), min_size=1, max_size=4)))
        layout = "NCHW"[: len(shape)] + (draw(st.sampled_from(["", "c16", "c8"])) if len(shape) > 1 else "")
        dtype = draw(st.sampled_from(["int8", "uint8", "int32"]))
        zp = draw({"int8": st.integers(-128, 127), "uint8": st.integers(0, 255), "int32": st.just(0)}[dtype])
        io.append(IOTensor(n, draw(st.sampled_from(["input", "output"])), dtype, shape, layout,
                           draw(st.integers(0, 2**24)), draw(st.floats(1e-6, 1e3)), zp))
    debug_idx = draw(st.sets(st.integers(0, len(insns) - 1), max_size=len(insns))) if insns else set()
    debug = {i: DebugEntry(draw(names), draw(names)) for i in sorted(debug_idx)}
    const_base = draw(st.integers(0, 1 << 20))
    used = max([const_base + len(consts), *(t.addr + nbytes(t) for t in io)])  # (a valid program's map holds them)
    return Program(instructions=insns, fingerprint=draw(st.text("0123456789abcdef", min_size=16, max_size=16)),
                   constants=consts, const_base=const_base, const_segments=segs, io=io,
                   dram_size=min(used + draw(st.integers(0, 1 << 20)), 1 << 32), debug=debug)
