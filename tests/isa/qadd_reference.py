"""QADD as docs/isa.md defines it, computed exactly: the reference of the ISA numerics tests (against
onnxruntime) and of the simulator's vector-op oracle."""

from __future__ import annotations

import numpy as np


def qadd_as_documented(x, y, sa, sb, off, qmin, qmax):
    """docs/isa.md: f = fma(f32(x), QADD_SA, fma(f32(y), QADD_SB, QADD_OFF)); d = clamp(rint_half_even(f)).
    The FMAs are evaluated exactly with Python fractions (independent of compiler.sim.quant.fma32)."""
    from fractions import Fraction

    def to_f32(q: Fraction) -> np.float32:  # round half to even to 24 significant bits (normal range)
        if q == 0:
            return np.float32(0)
        e = abs(q).numerator.bit_length() - abs(q).denominator.bit_length()
        e += abs(q) >= Fraction(2) ** e  # now 2**(e-1) <= |q| < 2**e
        m = abs(q) * Fraction(2) ** (24 - e)
        whole, rest = divmod(m.numerator, m.denominator)
        whole += 2 * rest > m.denominator or (2 * rest == m.denominator and whole % 2 == 1)
        return np.float32((1 if q > 0 else -1) * whole * 2.0 ** (e - 24))

    def fma(a, b, c):
        return to_f32(Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c)))

    out = [fma(np.float32(u), sa, fma(np.float32(v), sb, off)) for u, v in zip(x.tolist(), y.tolist(), strict=True)]
    return np.clip(np.rint(np.array(out, np.float32)), qmin, qmax)
