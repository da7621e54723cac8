"""The accelerator's ISA: instruction table, encoder/decoder, assembler text and the .axb container.

``spec`` holds the one field table (``enums`` its value meanings); ``instructions`` the decoded
dataclasses; ``encoding`` the 128-bit encode/decode; ``program`` the in-memory Program and its
tables; ``binary`` the .axb container; ``text`` the assembler/disassembler; ``layout`` the DRAM
layouts of I/O tensors; ``numerics`` the QADD register values; ``docgen`` writes docs/isa.md.
"""

from compiler.isa.binary import read_binary, write_binary
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
from compiler.isa.program import DebugEntry, IOTensor, Program
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
from compiler.isa.text import assemble, disassemble

__all__ = [
    "INSN_BYTES",
    "ISA_VERSION",
    "Barrier",
    "Buffer",
    "DebugEntry",
    "Elem",
    "Engine",
    "Finish",
    "Gemm",
    "GemmType",
    "IOTensor",
    "Instruction",
    "IsaError",
    "Load",
    "Nop",
    "Opcode",
    "Program",
    "Reg",
    "SetReg",
    "Src1Mode",
    "Store",
    "Vec",
    "VecOp",
    "assemble",
    "decode",
    "decode_program",
    "disassemble",
    "encode",
    "encode_program",
    "engine_of",
    "read_binary",
    "write_binary",
]
