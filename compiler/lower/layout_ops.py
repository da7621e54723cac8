"""Layout layers done by addressing and DMA: nearest-neighbour Resize and channel Concat.

Resize (nearest, integer factor f, the ``asymmetric``/``floor`` convention PyTorch exports, which
replicates every input pixel f x f times): each tile of input rows is loaded once, copied by EX
into the output half (VEC MOV: the stores must not read the input half, which the next-but-one
load overwrites once EX has released it), and stored f * f times with ``x_gap = f - 1`` (every
f-th output vector) and a DRAM pitch of f output rows, one STORE per phase -- the ISA's
documented upsampling pattern.
Concat on channels (QLinearConcat): every input is copied into its block-aligned channel slice of
the output through VEC LUT with onnxruntime's requantization table (identity when the scales
match); a slice that does not start on a lane block goes through GEMMs with 0/1 lane-moving tiles.
"""

from __future__ import annotations

from compiler.isa import Buffer, Engine, Gemm, GemmType, Reg, Src1Mode, Store, Vec, VecOp
from compiler.lower import vector
from compiler.lower.emitter import Act, Emitter, Tile, blocks, f32_bits
from costmodel.errors import UserError


def lower_resize_nearest(em: Emitter, node: str, x: Act, y: Act, f: int) -> None:
    L = em.L
    _, c, h, w = x.shape
    if not 1 <= f - 1 <= 63:
        raise UserError(f"node {node} (Resize): factor {f}; the STORE x_gap field allows 2..64")
    rows = max(1, min(h, em.target.spad_rows // (4 * w)))
    if rows * w > em.target.spad_rows // 4:
        raise UserError(f"node {node} (Resize): one input row of {w} pixels does not fit a quarter of the SPAD")
    tiles, t = [], 0
    for i in range(blocks(c, L)):
        for r0 in range(0, h, rows):
            r = min(rows, h - r0)
            src, base = (t % 2) * rows * w, (2 + t % 2) * rows * w  # input half, output half
            tile = Tile(f"block {i} rows {r0}-{r0 + r - 1}",
                        ld=em.load_rows(Buffer.SPAD, src, r * w, x.addr + (i * h + r0) * w * L),
                        ex=[Vec(op=VecOp.MOV, dst=base + o, src0=src + o, mx=mx, my=my, sx=1, sy=mx)
                            for o, mx, my in vector._flat_walks(r * w)])
            out_plane = y.addr + i * h * f * w * f * L
            for a in range(f):
                for b in range(f):
                    tile.st.append(Store(buf=Buffer.SPAD, sram=base, y_size=r, x_size=w, x_gap=f - 1,
                                         dram_addr=out_plane + ((r0 * f + a) * w * f + b) * L,
                                         dram_pitch=f * w * f * L))
            tiles.append(tile)
            t += 1
    em.pipeline(tiles)


def nearest_index(n_in: int, n_out: int, scale: float) -> list[int]:
    """onnxruntime's source index per output index: asymmetric (x_out / scale in float32), floor, clamp."""
    import numpy as np

    x = np.floor(np.arange(n_out, dtype=np.float32) / np.float32(scale))
    return np.clip(x, 0, n_in - 1).astype(int).tolist()


def lower_resize_gather(em: Emitter, node: str, x: Act, y: Act, scales: tuple[float, float]) -> None:
    """Nearest resize with any factors: per output row, one VEC MOV per run of output columns that
    read the same input pixel (sx = 0), from the input plane in SPAD; one tile per channel block."""
    L = em.L
    _, c, h, w = x.shape
    ho, wo = y.shape[2:]
    rows_i, cols_i = nearest_index(h, ho, scales[0]), nearest_index(w, wo, scales[1])
    if 2 * (h * w + ho * wo) > em.target.spad_rows or wo > 256:
        raise UserError(f"node {node} (Resize): a {h}x{w} -> {ho}x{wo} plane does not fit SPAD (non-integer factors "
                        "are lowered for planes that fit)")
    runs = []  # (first output column, length, input column)
    for xo, ci in enumerate(cols_i):
        if runs and runs[-1][2] == ci:
            runs[-1][1] += 1
        else:
            runs.append([xo, 1, ci])
    tiles = []
    for i in range(blocks(c, L)):
        a0 = (i % 2) * (h * w + ho * wo)
        o0 = a0 + h * w
        tile = Tile(f"block {i}", ld=em.load_rows(Buffer.SPAD, a0, h * w, x.addr + i * h * w * L))
        for yo, ri in enumerate(rows_i):
            for x0, n, ci in runs:
                tile.ex.append(Vec(op=VecOp.MOV, dst=o0 + yo * wo + x0, src0=a0 + ri * w + ci, mx=n, sx=0))
        tile.st = vector._store_rows(em, o0, ho * wo, y.addr + i * ho * wo * L)
        tiles.append(tile)
    em.pipeline(tiles)


def lower_concat(em: Emitter, node: str, parts: list[Act], y: Act) -> None:
    """Block-aligned slices: LUT copies. Otherwise lanes move across blocks: see _concat_permute."""
    L = em.L
    offsets = [sum(p.shape[1] for p in parts[:k]) for k in range(len(parts))]
    if all(off % L == 0 for off in offsets):
        for k, (x, off) in enumerate(zip(parts, offsets, strict=True)):
            _, _, h, w = x.shape
            part = Act(y.name, x.shape, y.addr + (off // L) * h * w * L, y.scale, y.zero_point, y.dtype)
            em.tile = f"input {k}"
            vector.lower_lut(em, node, x, part, vector.lut_table(x, y, lambda v: v))
        return
    same = []
    for x in parts:  # requantize to the output's parameters first (onnxruntime's identity table)
        if (x.scale, x.zero_point) != (y.scale, y.zero_point):
            tmp = em.new_act(f"{x.name}@requant", x.shape, y.scale, y.zero_point)
            vector.lower_lut(em, node, x, tmp, vector.lut_table(x, y, lambda v: v))
            x = tmp
        same.append(x)
    _concat_permute(em, node, same, offsets, y)


def _concat_permute(em: Emitter, node: str, parts: list[Act], offsets: list[int], y: Act) -> None:
    """Output block j = sum over the input blocks overlapping it of GEMM(input block, 0/1 lane-move tile),
    then REQUANT by 1.0 (exact for 0..255). Lanes past C become 0 (no consumer reads them)."""
    import numpy as np

    L, tg = em.L, em.target
    _, _, h, w = y.shape
    plane = h * w
    contrib: dict[int, list[tuple[Act, int, int]]] = {}  # out block -> (input, input block, tile row)
    tiles_w = []
    for x, off in zip(parts, offsets, strict=True):
        for i in range(blocks(x.shape[1], L)):
            lo, hi = off + i * L, off + min(x.shape[1], (i + 1) * L)  # global channels of this input block
            for j in range(lo // L, (hi - 1) // L + 1):
                tile = np.zeros((L, L), np.int8)
                for g in range(max(lo, j * L), min(hi, (j + 1) * L)):
                    tile[g - lo, g - j * L] = 1
                contrib.setdefault(j, []).append((x, i, len(tiles_w)))
                tiles_w.append(tile)
    w_addr = em.const(np.stack(tiles_w), "weights")
    per_tile = max(len(v) for v in contrib.values())
    chunk = min(plane, tg.acc_rows, (tg.spad_rows // 2 - per_tile * L) // (per_tile + 1))
    chunk = chunk // 256 * 256 if chunk > 256 else chunk
    if chunk < 1:
        raise UserError(f"node {node} (Concat): {per_tile} overlapping inputs per block do not fit SPAD")
    em.setreg(Engine.EX, Reg.OUT_ZP, 0)
    em.setreg(Engine.EX, Reg.QMIN, 0)
    em.setreg(Engine.EX, Reg.QMAX, 255)
    em.setreg(Engine.EX, Reg.S1, f32_bits(1.0))
    half = (per_tile + 1) * chunk + per_tile * L
    out = []
    t = 0
    for j, srcs in sorted(contrib.items()):
        for r0 in range(0, plane, chunk):
            n = min(chunk, plane - r0)
            base = (t % 2) * half
            tile = Tile(f"out block {j} rows {r0}-{r0 + n - 1}")
            for q, (x, i, wt) in enumerate(srcs):
                a0, w0 = base + q * chunk, base + per_tile * chunk + q * L
                tile.ld += em.load_rows(Buffer.SPAD, a0, n, x.addr + (i * plane + r0) * L)
                tile.ld += em.load_rows(Buffer.SPAD, w0, L, w_addr + wt * L * L)
                for o, mx, my in vector._flat_walks(n):
                    tile.ex.append(Gemm(loadw=True, acc=q > 0, dtype=GemmType.U8, a_base=a0 + o, w_base=w0,
                                        c_base=o, mx=mx, my=my, a_sx=1, a_sy=mx))
            o0 = base + per_tile * chunk + per_tile * L
            tile.ex += [Vec(op=VecOp.REQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                            dst=o0 + o, src0=o, src1=int(Reg.S1), mx=mx, my=my, sx=1, sy=mx)
                        for o, mx, my in vector._flat_walks(n)]
            tile.st = vector._store_rows(em, o0, n, y.addr + (j * plane + r0) * L)
            out.append(tile)
            t += 1
    em.pipeline(out)
