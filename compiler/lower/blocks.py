"""Output blocks of a GEMM layer (dense conv, FC): constants, the EX software pipeline, store chunks.

Each output block of L channels is computed on the array into one ACC half, then gets a bias ADD and
a REQUANT on the vector unit (two VEC passes of its rows) into SPAD, and is stored. These helpers
order and place that work within a tile (shared by compiler.lower.conv's conv and FC lowerings).
"""

from __future__ import annotations

import numpy as np

from compiler.isa import Buffer, Elem, Gemm, Load, Src1Mode, Vec, VecOp
from compiler.lower.emitter import MAX_CHUNKS, Emitter


def _lanes(values: np.ndarray, rows: int, lanes: int, dtype) -> np.ndarray:
    out = np.zeros(rows * lanes, dtype)
    out[: values.size] = values.reshape(-1)
    return out.reshape(rows, lanes)


def interleaved_consts(em: Emitter, bias: np.ndarray, scales: np.ndarray, nblocks: int) -> int:
    """CONST rows [block j: bias (int32), scale (fp32 bits)] so that a group of blocks loads as one box."""
    L = em.L
    rows = np.stack([_lanes(bias.astype(np.int32), nblocks, L, np.int32),
                     _lanes(scales.astype(np.float32), nblocks, L, np.float32).view(np.int32)], axis=1)
    return em.const(rows, "other")


def const_rows(em: Emitter, c_addr: int, j0: int, gn: int, g: int, nblocks: int, half: int, first: bool,
               new_group: bool) -> tuple[int, list]:
    """CONST row of block j0's bias (its scale: the next row) and the LOADs the tile needs: every
    block's two rows once, in the first tile, when they fit CONST (nothing is reloaded, so the next
    tiles' loads never wait for this tile's VECs), else the group's rows in CONST half ``half``."""
    if 2 * nblocks <= em.target.const_rows:
        rows, sram, n, addr = 2 * j0, 0, 2 * nblocks, c_addr
        if not first:
            return rows, []
    else:
        rows = sram = half * 2 * g
        n, addr = 2 * gn, c_addr + j0 * 8 * em.L
        if not new_group:
            return rows, []
    return rows, [Load(buf=Buffer.CONST, elem=Elem.B32, sram=sram, y_size=n, dram_addr=addr, dram_pitch=4 * em.L)]


def first_write(ex: list, posts: list[list]) -> int:
    """EX index of the tile's first REQUANT, the first instruction writing its SPAD output half: only it
    needs ST to have stored that half's previous tile (the GEMMs before it may run ahead)."""
    return next(i for i, x in enumerate(ex) if x is posts[0][-1])


def free_at(em: Emitter, ex: list, nblocks: int) -> int:
    """EX index after which LD may refill the tile's input half: its last GEMM when the constants
    stay resident (the VECs after it read only ACC and CONST), else the tile's last instruction."""
    if 2 * nblocks > em.target.const_rows:
        return -1
    return max(i for i, x in enumerate(ex) if isinstance(x, Gemm))


def software_pipeline(gemms: list[list], posts: list[list]) -> list:
    """EX order G0, then block j's GEMMs interleaved one by one with block j-1's bias/requant VECs,
    then the last block's VECs: EX issues in order, so each unit's next instruction must not sit
    behind a long run of the other's; with the blocks in alternate ACC halves the array computes
    block j while the vector unit finishes block j-1 (max of the two per block, not their sum)."""
    from itertools import zip_longest

    out: list = list(gemms[0]) if gemms else []
    for j in range(1, len(gemms)):
        out += [x for pair in zip_longest(gemms[j], posts[j - 1]) for x in pair if x is not None]
    return out + (list(posts[-1]) if posts else [])


def store_chunks(ex: list, posts: list[list]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Split a tile's output blocks (one STORE each) into up to 1 + MAX_CHUNKS chunks; EX signals ST
    after each chunk's last REQUANT, so the tile's first blocks are stored while EX computes the rest."""
    n = len(posts)
    parts = min(n, 1 + MAX_CHUNKS)
    if parts < 2:
        return (), ()
    ends = [(c + 1) * n // parts - 1 for c in range(parts - 1)]  # last block of each chunk but the last
    where = {id(x): i for i, x in enumerate(ex)}
    return tuple(where[id(posts[e][-1])] for e in ends), tuple(e + 1 for e in ends)


def bias_requant(bias_row: int, scale_row: int, r: int, wo: int, dst: int, acc: int = 0) -> list:
    """ACC rows [acc, acc + r*wo) += CONST bias row, then REQUANT with the CONST scale row into SPAD ``dst``.

    Output blocks alternate between two ACC halves (``acc``), so the array computes the next block
    while the vector unit requantizes this one (the ACC level is double-buffered in the hwconfig)."""
    walk = {"mx": wo, "my": r, "sx": 1, "sy": wo}
    return [
        Vec(op=VecOp.ADD, dst_buf=Buffer.ACC, src0_buf=Buffer.ACC, src1_buf=Buffer.CONST, src1_mode=Src1Mode.FIXED,
            dst=acc, src0=acc, src1=bias_row, **walk),
        Vec(op=VecOp.REQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_buf=Buffer.CONST,
            src1_mode=Src1Mode.FIXED, dst=dst, src0=acc, src1=scale_row, **walk),
    ]
