"""The arithmetic of GEMM and VEC, one numpy call chain per instruction (never a loop per element).

These functions take decoded field values and buffer arrays and know nothing of engines, tokens
or bounds checks (those live in :mod:`compiler.sim.execute`). Every buffer is a 2-D array of
``rows x L`` lanes: SPAD as int8 (reinterpreted as uint8 where the instruction says so), ACC and
CONST as int32 (CONST reinterpreted as float32 bits where an op reads scales).

Integer exactness: GEMM sums are computed with float32 BLAS in chunks along K short enough that
every partial sum is an integer below 2**24, hence exact in float32 (512 products for int8 data,
see :func:`exact_matmul`); the chunks are added in int64 and wrapped to int32 (two's-complement
wrap-around, which is order-independent). A conv tile is the affine A walk of the ISA
(:func:`walk`), gathered with fancy indexing -- the ISA itself has no im2col.
"""

from __future__ import annotations

import numpy as np

from compiler.sim import quant


def walk(base: int, mx: int, my: int, l0: int, l1: int, sx: int, sy: int, s0: int, s1: int) -> np.ndarray:
    """Row addresses ``base + l1*s1 + l0*s0 + my*sy + mx*sx`` as an int64 array [taps, My*Mx]."""
    taps = (np.arange(l1, dtype=np.int64)[:, None] * s1 + np.arange(l0, dtype=np.int64)[None, :] * s0).ravel()
    pix = (np.arange(my, dtype=np.int64)[:, None] * sy + np.arange(mx, dtype=np.int64)[None, :] * sx).ravel()
    return base + taps[:, None] + pix[None, :]


def _abs_max(x: np.ndarray) -> int:
    """The largest |element| as a Python int (``np.abs`` of int8 -128 is -128: a bound of 0 had made
    a GEMM whose only nonzero weight is -128 all zeros)."""
    return max(abs(int(x.max())), abs(int(x.min()))) if x.size else 0


def exact_matmul(a: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``a @ w`` of integer arrays as exact int64, with float32 BLAS where that is exact.

    A float32 partial sum of ``n`` products bounded by ``b`` is exact while ``n * b <= 2**24``, so K
    is cut into chunks of ``2**24 // b`` terms (512 for int8 x uint8); beyond that, int64 matmul.
    """
    bound = _abs_max(a) * _abs_max(w)
    out = np.zeros((a.shape[0], w.shape[1]), dtype=np.int64)
    if bound == 0:
        return out
    per = 2**24 // bound
    if per == 0:
        return a.astype(np.int64) @ w.astype(np.int64)
    for lo in range(0, a.shape[1], per):
        part = a[:, lo : lo + per].astype(np.float32) @ w[lo : lo + per].astype(np.float32)
        out += part.astype(np.int64)
    return out


def weight_tiles(spad: np.ndarray, w_base: int, taps: int, rows: int, transpose: bool) -> np.ndarray:
    """The ``taps`` weight tiles [taps, R, C] at ``w_base`` (tile t at w_base + t*R), int8."""
    w = spad[w_base : w_base + taps * rows].reshape(taps, rows, spad.shape[1])
    return w.transpose(0, 2, 1) if transpose else w


def gemm(
    spad: np.ndarray, acc: np.ndarray, a_rows: np.ndarray, weights: np.ndarray, c_base: int,
    *, unsigned: bool, accumulate: bool,
) -> None:
    """ACC[c_base + m] = (ACC or 0) + sum_t A[a_rows[t, m]] @ W[t], int32 wrap-around, in place.

    ``a_rows`` is the walk [T, M]; ``weights`` is [T, R, C] (or [1, R, C]: one reused tile).
    """
    taps, m = a_rows.shape
    a = spad.view(np.uint8) if unsigned else spad
    ga = a[a_rows]  # [T, M, R]
    if weights.shape[0] == 1 and taps > 1:  # one stationary tile: sum the taps' A first (exact ints)
        total = exact_matmul(ga.astype(np.int64).sum(axis=0), weights[0])
    else:
        total = exact_matmul(ga.transpose(1, 0, 2).reshape(m, -1), weights.reshape(-1, weights.shape[2]))
    rows = slice(c_base, c_base + m)
    if accumulate:
        total += acc[rows]
    acc[rows] = quant.wrap_int32(total)


def lanes(buf: np.ndarray, unsigned: bool) -> np.ndarray:
    """A buffer viewed with its lane type: 8-bit lanes as int8, or uint8 when asked; 32-bit as int32."""
    if buf.dtype.itemsize == 1 and unsigned:
        return buf.view(np.uint8)
    return buf


def to_lanes(values: np.ndarray, dtype: np.dtype, unsigned: bool) -> np.ndarray:
    """Convert exact results to a destination lane: 8-bit saturates, 32-bit wraps."""
    if values.dtype == object:  # exact big integers (RMAC of 32-bit operands)
        values = np.clip(values, -(2**63), 2**63 - 1) if np.dtype(dtype).itemsize == 1 else values % 2**32
        values = values.astype(np.int64) if np.dtype(dtype).itemsize == 1 else values.astype(np.uint64)
    if np.dtype(dtype).itemsize == 1:
        lo, hi = (0, 255) if unsigned else (-128, 127)
        out = np.clip(values, lo, hi).astype(np.uint8 if unsigned else np.int8)
        return out.view(np.int8)
    return quant.wrap_int32(values)


def f32_bits(v: np.ndarray) -> np.ndarray:
    """int32 lanes (or register values) reinterpreted as float32."""
    return np.ascontiguousarray(np.asarray(v, dtype=np.int64).astype(np.int32)).view(np.float32)


def bits_f32(f: np.ndarray) -> np.ndarray:
    """float32 values as the int32 bit patterns a 32-bit lane holds (int64 array)."""
    return np.ascontiguousarray(np.asarray(f, dtype=np.float32)).view(np.int32).astype(np.int64)


def fp32_tap_sum(x: np.ndarray, y: np.ndarray, zp: int, old: np.ndarray | None) -> np.ndarray:
    """RFADD over taps [T, M, L]: ``f = f + f32(x_t - zp) * y_t`` in float32, one tap after the other
    (a loop over the <= 256 taps, vectorized over elements and lanes; numpy rounds every multiply
    and add to float32, no fused multiply-add). Returns the float32 bits."""
    f = np.zeros(x.shape[1:], np.float32) if old is None else f32_bits(old)
    y = np.asarray(y, dtype=np.float32)
    for t in range(x.shape[0]):
        f = (f + (x[t].astype(np.int64) - zp).astype(np.float32) * y[t]).astype(np.float32)
    return bits_f32(f)


def fp32_blend(x: np.ndarray, wx: np.ndarray, wy: list, zp: int, scale, old: np.ndarray | None) -> np.ndarray:
    """RBLEND over taps [T, M, L], T = L1 * L0: tap (l1, l0) adds ``(wx[m, l0] * wy[l1]) * (f32(x - zp) *
    scale)`` to a float32 sum, in tap order, every operation rounded to float32. Returns the bits."""
    l0 = wx.shape[1]
    f = np.zeros(x.shape[1:], np.float32) if old is None else f32_bits(old)
    wx = np.asarray(wx, np.float32)
    for t in range(x.shape[0]):
        c = (wx[:, t % l0] * np.float32(wy[t // l0])).astype(np.float32)[:, None]
        deq = ((x[t].astype(np.int64) - zp).astype(np.float32) * np.float32(scale)).astype(np.float32)
        f = (f + (c * deq).astype(np.float32)).astype(np.float32)
    return bits_f32(f)


def lane_sum(x: np.ndarray) -> np.ndarray:
    """LSUM: every lane gets the sum over the row's lanes (x: [..., L], exact int64)."""
    return np.broadcast_to(x.sum(axis=-1, keepdims=True, dtype=np.int64), x.shape)


def lane_max(x: np.ndarray) -> np.ndarray:
    """LMAX: every lane gets the max over the row's lanes."""
    return np.broadcast_to(x.max(axis=-1, keepdims=True), x.shape)


def lut(x: np.ndarray, table: np.ndarray, lut_min: int) -> np.ndarray:
    """LUT: entry ``x - lut_min`` of a flat int32 table (row-major CONST rows); bounds checked by caller."""
    return table[x.astype(np.int64) - lut_min]


def reduce_taps(op: str, x: np.ndarray, y: np.ndarray | None, old: np.ndarray | None) -> np.ndarray:
    """RADD / RMAX / RMIN / RMAC over the tap axis 0 of x [T, M, L]; ``old`` None means init."""
    if op == "RADD":
        r = x.sum(axis=0, dtype=np.int64)
    elif op == "RMAC":
        xi, yi = x.astype(np.int64), np.asarray(y, dtype=np.int64)
        bound = int(np.abs(xi).max(initial=0)) * int(np.abs(yi).max(initial=0)) * x.shape[0]
        if bound >= 2**62:  # 32 x 32-bit products summed could leave int64: exact Python integers
            xi, yi = xi.astype(object), yi.astype(object)
        r = (xi * yi).sum(axis=0)
    elif op == "RMAX":
        r = x.max(axis=0).astype(np.int64)
    elif op == "RMIN":
        r = x.min(axis=0).astype(np.int64)
    else:
        raise ValueError(op)
    if old is None:
        return r
    if op in ("RADD", "RMAC"):
        return old.astype(r.dtype) + r
    return np.maximum(old, r) if op == "RMAX" else np.minimum(old, r)
