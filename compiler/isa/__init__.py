"""The accelerator's ISA: instruction table, encoder/decoder, assembler text and the .axb container.

``spec`` holds the one field table; ``instructions`` the decoded dataclasses; ``encoding`` the
128-bit encode/decode; ``text`` the assembler/disassembler; ``binary`` the file container.
"""

from compiler.isa.encoding import decode, decode_program, encode, encode_program
from compiler.isa.instructions import (
    Barrier,
    Finish,
    Gemm,
    Instruction,
    Load,
    Nop,
    SetReg,
    Store,
    Vec,
    engine_of,
)
from compiler.isa.spec import (
    INSN_BYTES,
    ISA_VERSION,
    Buffer,
    Elem,
    Engine,
    GemmType,
    IsaError,
    Opcode,
    Reg,
    Src1Mode,
    VecOp,
)

__all__ = [
    "INSN_BYTES", "ISA_VERSION", "Barrier", "Buffer", "Elem", "Engine", "Finish", "Gemm", "GemmType",
    "Instruction", "IsaError", "Load", "Nop", "Opcode", "Reg", "SetReg", "Src1Mode", "Store", "Vec", "VecOp",
    "decode", "decode_program", "encode", "encode_program", "engine_of",
]
