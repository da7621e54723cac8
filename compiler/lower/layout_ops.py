"""Layout layers done by addressing and DMA: nearest-neighbour Resize and channel Concat.

Resize (nearest, integer factor f, the ``asymmetric``/``floor`` convention PyTorch exports, which
replicates every input pixel f x f times): each tile of input rows is loaded once and stored f * f
times with ``x_gap = f - 1`` (every f-th output vector) and a DRAM pitch of f output rows, one
STORE per phase -- the ISA's documented upsampling pattern; EX only passes the token on (NOP).
Concat on channels (QLinearConcat): every input is copied into its block-aligned channel slice of
the output through VEC LUT with onnxruntime's requantization table (identity when the scales
match); a slice that does not start on a lane block is rejected.
"""

from __future__ import annotations

from compiler.isa import Buffer, Engine, Nop, Store
from compiler.lower import vector
from compiler.lower.emitter import Act, Emitter, Tile, blocks
from costmodel.errors import UserError


def lower_resize_nearest(em: Emitter, node: str, x: Act, y: Act, f: int) -> None:
    L = em.L
    _, c, h, w = x.shape
    if not 1 <= f - 1 <= 63:
        raise UserError(f"node {node} (Resize): factor {f}; the STORE x_gap field allows 2..64")
    rows = max(1, min(h, em.target.spad_rows // (2 * w)))
    if rows * w > em.target.spad_rows // 2:
        raise UserError(f"node {node} (Resize): one input row of {w} pixels does not fit half the SPAD")
    tiles, t = [], 0
    for i in range(blocks(c, L)):
        for r0 in range(0, h, rows):
            r = min(rows, h - r0)
            base = (t % 2) * rows * w
            tile = Tile(f"block {i} rows {r0}-{r0 + r - 1}",
                        ld=em.load_rows(Buffer.SPAD, base, r * w, x.addr + (i * h + r0) * w * L),
                        ex=[Nop(engine=Engine.EX)])
            out_plane = y.addr + i * h * f * w * f * L
            for a in range(f):
                for b in range(f):
                    tile.st.append(Store(buf=Buffer.SPAD, sram=base, y_size=r, x_size=w, x_gap=f - 1,
                                         dram_addr=out_plane + ((r0 * f + a) * w * f + b) * L,
                                         dram_pitch=f * w * f * L))
            tiles.append(tile)
            t += 1
    em.pipeline(tiles)


def lower_concat(em: Emitter, node: str, parts: list[Act], y: Act) -> None:
    L = em.L
    offset = 0
    for k, x in enumerate(parts):
        if offset % L:
            raise UserError(f"node {node} (Concat): input {k} starts at channel {offset}, not a multiple of the "
                            f"{L} lanes; channel concat is lowered by addressing at block granularity only")
        _, c, h, w = x.shape
        part = Act(y.name, x.shape, y.addr + (offset // L) * h * w * L, y.scale, y.zero_point, y.dtype)
        em.tile = f"input {k}"
        vector.lower_lut(em, node, x, part, vector.lut_table(x, y, lambda v: v))
        offset += c
