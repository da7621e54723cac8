"""Generate docs/isa.md from the field table, so the document cannot drift from the encoder.

Run ``python -m compiler.isa.docgen`` (or ``dse isa-doc``) after changing :mod:`compiler.isa.spec`;
a test fails while the committed file differs from this output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compiler.isa import spec
from compiler.isa.encoding import encode
from compiler.isa.instructions import Gemm
from compiler.isa.spec import ENUM_DOC, FORMATS, INSN_BITS, ISA_VERSION, REG_RESET, VEC_OP_DOC, Field
from costmodel.atomic import atomic_write_text

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "isa.md"


def _encoding(f: Field) -> str:
    if f.enum is not None:
        return f"enum {f.enum.__name__}"
    if f.flag:
        return "flag"
    if f.signed:
        return f"signed, {f.min}..{f.max}"
    if f.bias:
        return f"value - {f.bias}, {f.min}..{f.max}"
    return f"{f.min}..{f.max}"


def _format_section(fmt: spec.Format) -> list[str]:
    engine = f"engine {fmt.engine.name}" if fmt.engine is not None else ("engine given by field `engine`" if any(
        f.name == "engine" for f in fmt.fields) else "seen by all engines")
    out = [f"### `{fmt.mnemonic}` (opcode {int(fmt.opcode)}, {engine})", "", fmt.doc[0].upper() + fmt.doc[1:] + ".",
           "", "| bits | field | width | encoding | meaning |", "|---|---|---|---|---|"]
    for f in fmt.fields:
        bits = f"{f.hi}:{f.lo}" if f.width > 1 else str(f.lo)
        name = "(reserved)" if f.reserved else f"`{f.name}`"
        out.append(f"| {bits} | {name} | {f.width} | {_encoding(f) if not f.reserved else 'must be 0'} | {f.doc} |")
    return [*out, "", fmt.semantics, ""]


def _enum_table(enum: type, docs: dict) -> list[str]:
    out = [f"### {enum.__name__}", "", "| value | name | meaning |", "|---|---|---|"]
    for m in enum:
        reset = f" (reset {REG_RESET.get(m, 0)})" if enum is spec.Reg else ""
        out.append(f"| {int(m)} | `{m.name.lower()}` | {docs[m]}{reset} |")
    return [*out, ""]


PATTERNS = """\
## Programming patterns

How the compiler expresses each layer kind (all addresses are buffer rows; `L = R = C = 16` on tpu_like).

- **Tokens / double buffering.** Each FIFO carries information-less tokens. LD loads tile *i* into
  one half of a ping-pong pair and `push_next`; EX `pop_prev`s, computes, `push_prev`s to free
  that half, and `push_next`s when an output tile is final; ST `pop_prev`s, stores, and
  `push_prev`s to free the output rows. LD's `pop_next` before reusing a half (from the third
  tile on) closes the loop. A missing token is a race or a deadlock in the simulator.
- **Conv k x k, stride s, padding p.** `setreg engine=ld reg=padval value=<x_zp>`; LOAD the input
  tile (one channel block) with `padsel=1` and `y_pad*/x_pad*` = p on the image edges; LOAD the
  `kh*kw` weight tiles of the block (R rows each, tap order `l1 = kh`, `l0 = kw`); LOAD the int32
  bias into ACC with `dram_pitch=0` (one row broadcast over the tile); one GEMM per input-channel
  block with `acc=1`, `loadw=1`, `l1=kh l0=kw`, `a_sx=s`, `a_sy=s*Wt`, `a_s0=d`, `a_s1=d*Wt`
  (`Wt` = padded tile width, `d` = dilation); VEC REQUANT ACC -> SPAD (`src1_mode=fixed` on the CONST
  row of per-channel scales; QMIN = zero point for a fused ReLU); STORE. The input zero point's
  term `-x_zp * sum(w)` is folded into the bias at compile time, so padding with `x_zp` is exact.
- **MatMul / Gemm / FC.** GEMM with the K tiles as taps (`l0*l1 = K/R`) and M as `my` (`a_sy` =
  rows per A row); `w_t=1` takes a tile stored as `B^T` (e.g. `Q * K^T` with K in SPAD as rows).
- **Depthwise conv.** VEC RMAC on the vector unit, channels in lanes: `init=1`,
  `src1_mode=tap` (one SPAD weight row per tap), the same walk as a conv (`sx=s`, `sy=s*Wt`,
  `s0=d`, `s1=d*Wt`), ACC destination; then REQUANT.
- **Pooling.** Max: VEC RMAX `init=1` over the window taps, SPAD -> SPAD on uint8 (pad with 0, the uint8 minimum, via PADVAL).
  Average (onnxruntime's float QLinearAveragePool): RFADD `init=1` over the window (DQ_ZP = x_zp,
  y = a register with x_scale; pad with x_zp via PADVAL) into ACC, FDIV by float32(n), FQUANT by
  y_scale to SPAD. Global average (MLAS, integer): RADD into ACC (more than 256 taps: several RADDs
  with `init=0`), ADD `-n * x_zp`, REQUANT by `x_scale / (y_scale * n)`.
- **Residual add.** VEC QADD of two SPAD tiles (`src1_mode=row`), registers from
  `compiler.isa.numerics.qadd_params`.
- **ReLU / ReLU6 / clamp / sigmoid-like.** CLAMP (or MAX with a register), or LUT with a
  256-entry table built at compile time.
- **Nearest resize.** MOV the tile to an output half, STORE it once per phase with `x_gap = f - 1`
  and `dram_pitch` = f output rows (f = 2: four STOREs).
- **Bilinear resize** (onnxruntime's float path). x weights (dx2, dx1) per output column in CONST
  rows; per output row SETREG BL_WY0 = dy2, BL_WY1 = dy1; per run of output columns with the same
  source columns one RBLEND `init=1`, `sx=0`, `l0=l1=2`, `s0 = x2 - x1`, `s1 = (y2 - y1) * W`,
  `src1_mode=row` on the weight rows, into ACC; FREQUANT to SPAD.
- **Constant @ activation** (`Y = A X`). The activation is the weight tile (rows k, lanes j): VEC
  LUT (int8 reads) maps it to `X - 128`; GEMM `dtype s8` walks the resident `A - a_zp` with
  `l0` = K blocks, `a_sx` = K blocks; a per-row bias `(128 - x_zp) * rowsum(A - a_zp)` is LOADed
  into ACC first (`acc=1`).
- **Concat / reshape / flatten.** Addressing: producers store into their slice of the consumer's
  DRAM tensor (channel concat at channel-block granularity; a channel offset inside a block can be
  moved across lanes by a GEMM with a 0/1 permutation tile and a REQUANT of scale 1.0).
"""


def render() -> str:
    """The full text of docs/isa.md."""
    example = Gemm(pop_prev=True, push_prev=True, loadw=True, acc=True, mx=14, my=14, l0=3, l1=3,
                   a_sx=1, a_sy=16, a_s0=1, a_s1=16)
    lines = [
        f"# Instruction set (ISA version {ISA_VERSION})", "",
        "<!-- GENERATED by `python -m compiler.isa.docgen` from compiler/isa/spec.py; do not edit. -->", "",
        (spec.__doc__ or "").strip(), "",
        f"Every instruction is {INSN_BITS} bits, stored as {INSN_BITS // 8} little-endian bytes; bit 0 is the",
        "least significant bit of byte 0. Bits 3:0 are the opcode and, for queued instructions, bits 7:4 the",
        "token flags. Reserved bits must be 0 (the decoder rejects anything else). Fields marked",
        "`value - 1` hold counts: the assembler text and the instruction objects use the real count.",
        "The decoder also rejects a token flag the engine cannot use (LD has no previous engine, ST no next).",
        "", "## Formats", "",
    ]
    for fmt in FORMATS.values():
        lines += _format_section(fmt)
    lines += ["## VEC operations", "",
              "`x` is the first operand, `y` the second, `d` the destination element; per lane.", "",
              "| value | op | kind | semantics |", "|---|---|---|---|"]
    for op, text in VEC_OP_DOC.items():
        kind = "reduce" if op in spec.REDUCE_OPS else "map"
        lines.append(f"| {int(op)} | `{op.name.lower()}` | {kind} | {text} |")
    lines += ["", "## Enumerations", ""]
    for enum, docs in ENUM_DOC.items():
        lines += _enum_table(enum, docs)
    lines += [PATTERNS, "## Example", "",
              "A 3x3 stride-1 conv tile, 14x14 outputs from a 16-wide input tile in SPAD:", "", "```",
              "gemm loadw=1 acc=1 mx=14 my=14 l0=3 l1=3 a_sx=1 a_sy=16 a_s0=1 a_s1=16 pop_prev push_prev",
              f"= bytes {encode(example).hex()}", "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Write docs/isa.md (or the path given as the only argument)."""
    parser = argparse.ArgumentParser(prog="python -m compiler.isa.docgen", description=main.__doc__)
    parser.add_argument("path", nargs="?", type=Path, default=DOC_PATH, help=f"default {DOC_PATH}")
    path = parser.parse_args(sys.argv[1:] if argv is None else argv).path
    atomic_write_text(path, render())
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
