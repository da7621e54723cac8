"""Requantization and rounding exactly as ONNX Runtime computes them (one place for the numerics).

ONNX Runtime's QLinearConv / QLinearMatMul (``qlinearconv.cc``, ``qlinearmatmul.cc``) compute one
float32 scale per output channel, ``(x_scale * w_scale[c]) / y_scale`` evaluated in float32 in that
order, then MLAS (``MlasRequantizeOutput``) does, per int32 accumulator value ``v``::

    f = float32(v) * scale            # float32 multiply (float32(v) rounds to nearest even)
    f = clamp(f, qmin - zp, qmax - zp)
    out = round_half_even(f) + zp     # MLAS's +12582912.f trick == RNE for |f| < 2**22

The ONNX specification (and ``onnx.reference``) instead multiply in float64 and round *after*
adding the zero point, which differs from ORT by one LSB on ties with an odd zero point and on
float32-vs-float64 near-ties; we mirror ORT (the tests document the difference).

QuantizeLinear (``MlasQuantizeLinear``) divides instead of multiplying: ``f = float32(x) / scale``,
same clamp and rounding; that is REQUANT's divide mode.
"""

from __future__ import annotations

import numpy as np

_QRANGE = {np.dtype(np.int8): (-128, 127), np.dtype(np.uint8): (0, 255)}


def qrange(dtype: np.dtype | type) -> tuple[int, int]:
    """(qmin, qmax) of an 8-bit quantized dtype."""
    return _QRANGE[np.dtype(dtype)]


def output_scale(x_scale: float, w_scale: np.ndarray | float, y_scale: float) -> np.ndarray:
    """The fused per-channel requantization scale, float32, in ORT's operation order."""
    xs = np.float32(x_scale)
    ws = np.asarray(w_scale, dtype=np.float32)
    return (xs * ws / np.float32(y_scale)).astype(np.float32)


def requantize(
    acc: np.ndarray,
    scale: np.ndarray | float,
    zero_point: np.ndarray | int,
    dtype: np.dtype | type = np.int8,
    *,
    divide: bool = False,
) -> np.ndarray:
    """int32 (or float32) values -> int8/uint8, bit-exact with MLAS; ``scale`` broadcasts over lanes.

    Scales and float inputs must be finite (callers check: MLAS gives no defined result for NaN)."""
    qmin, qmax = qrange(dtype)
    return requantize_range(acc, scale, zero_point, qmin, qmax, divide=divide).astype(dtype)


def requantize_range(
    acc: np.ndarray, scale: np.ndarray | float, zero_point: np.ndarray | int, qmin: int, qmax: int,
    *, divide: bool = False,
) -> np.ndarray:
    """REQUANT with explicit saturation bounds (the QMIN/QMAX registers); returns int32."""
    zp = np.asarray(zero_point, dtype=np.int64)
    f = np.asarray(acc).astype(np.float32)
    s = np.asarray(scale, dtype=np.float32)
    with np.errstate(over="ignore"):  # a product beyond float32 becomes +-inf and saturates below
        f = f / s if divide else f * s
    f = np.clip(f, (qmin - zp).astype(np.float32), (qmax - zp).astype(np.float32))
    return (np.rint(f).astype(np.int64) + zp).astype(np.int32)


def fma32(a, b, c) -> np.ndarray:
    """float32 fused multiply-add ``a * b + c`` with one rounding (what ``_mm256_fmadd_ps`` gives).

    The product of two float32 is exact in float64; the float64 sum ``s`` plus its TwoSum error
    ``err`` is the exact result, and rounding ``s`` to float32 is correct unless ``s`` sits exactly
    on a float32 midpoint, where the sign of ``err`` decides (no double rounding)."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    p = a * b
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    with np.errstate(over="ignore"):
        r = s.astype(np.float32)
        other = np.nextafter(r, np.where(s > r, np.float32(np.inf), np.float32(-np.inf))).astype(np.float32)
    r64 = r.astype(np.float64)
    tie = (r64 != s) & ((s - r64) == (other.astype(np.float64) - s)) & (err != 0)
    return np.where(tie, np.where(err > 0, np.maximum(r, other), np.minimum(r, other)), r).astype(np.float32)


def qadd(x: np.ndarray, y: np.ndarray, sa: float, sb: float, off: float, qmin: int, qmax: int) -> np.ndarray:
    """QADD as MLAS's AVX2 QLinearAdd kernel (``MlasQLinearAddKernelAvx2Helper``, the one onnxruntime
    dispatches to on AVX2 machines): ``f = fma(f32(x), sa, fma(f32(y), sb, off))``, two float32 FMAs,
    then round half to even and saturate to [qmin, qmax]; returns int32."""
    with np.errstate(over="ignore"):
        f = fma32(np.asarray(x).astype(np.float32), sa, fma32(np.asarray(y).astype(np.float32), sb, off))
    f = np.clip(f, np.float32(qmin), np.float32(qmax))
    return np.rint(f).astype(np.int32)


ROUND_HALF_EVEN, ROUND_HALF_UP, ROUND_FLOOR = 0, 1, 2
"""The EX register ROUND's values (compiler.isa.spec.Reg.ROUND)."""


def rounding_shift(x: np.ndarray, shift: np.ndarray | int, mode: int = ROUND_HALF_EVEN) -> np.ndarray:
    """Arithmetic right shift of int32 values with rounding; the result wraps to int32.

    Modes: half-even (Gemmini's ``ROUNDING_RIGHT_SHIFT``, RISC-V ``vxrm=rne``), half-up (``vxrm=rnu``:
    ties towards +inf), floor (a plain arithmetic shift, ``vxrm=rdn``). ``shift`` in [0, 31].
    """
    v = np.asarray(x).astype(np.int64)
    s = np.asarray(shift, dtype=np.int64)
    floor = v >> s
    rem = v - (floor << s)  # in [0, 2**s)
    half = np.where(s > 0, np.int64(1) << np.maximum(s - 1, 0), 0)
    above = (rem > half) & (s > 0)
    tie = (rem == half) & (s > 0)
    if mode == ROUND_HALF_EVEN:
        up = above | (tie & ((floor & 1) == 1))
    elif mode == ROUND_HALF_UP:
        up = above | tie
    elif mode == ROUND_FLOOR:
        up = np.zeros_like(above)
    else:
        raise ValueError(f"unknown rounding mode {mode}")
    return (floor + up).astype(np.int32)


def wrap_int32(v: np.ndarray) -> np.ndarray:
    """Two's-complement wrap of an int64 array to int32 (the accumulator's overflow rule)."""
    return np.asarray(v, dtype=np.int64).astype(np.int32)
