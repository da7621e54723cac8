"""QADD's two float32 FMAs (MLAS's AVX2 QLinearAdd kernel) against onnxruntime on large random tensors.

The small-vector property test in test_numerics_ort.py rarely meets the elements where the order of
roundings matters (about 1 in 50,000: the SSE2 order ``(off + sa*x) + sb*y`` with four roundings
differed from onnxruntime on hand_tracking's 31st residual add). Here each case has 65,536
elements, every (x, y) code pair once, so every rounding case of that scale set is exercised.
compiler.sim.quant.fma32 is checked against exact rational arithmetic separately.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.isa.numerics import qadd_params
from compiler.sim import quant
from tests.isa.test_numerics_ort import _qlinear_add

pytest.importorskip("onnxruntime")


@settings(max_examples=10, deadline=None)
@given(scales=st.lists(st.floats(1e-3, 0.2), min_size=3, max_size=3),
       zps=st.lists(st.integers(0, 255), min_size=3, max_size=3))
def test_qadd_every_code_pair_matches_onnxruntime(scales, zps):
    a, b = (g.astype(np.uint8).ravel() for g in np.meshgrid(np.arange(256), np.arange(256)))
    sa_, sb_, sc_ = (float(np.float32(s)) for s in scales)
    got = _qlinear_add(a[None], b[None], sa_, zps[0], sb_, zps[1], sc_, zps[2], True)[0]
    sa, sb, off = qadd_params(sa_, zps[0], sb_, zps[1], sc_, zps[2])
    np.testing.assert_array_equal(quant.qadd(a, b, sa, sb, off, 0, 255), got)


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e3, 1e3, width=32), st.floats(-1e3, 1e3, width=32), st.floats(-1e3, 1e3, width=32))
def test_fma32_is_correctly_rounded(a, b, c):
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    r = quant.fma32(a, b, c)
    lo, hi = np.nextafter(r, np.float32(-np.inf)), np.nextafter(r, np.float32(np.inf))
    err = abs(Fraction(float(r)) - exact)
    assert err <= abs(Fraction(float(lo)) - exact) and err <= abs(Fraction(float(hi)) - exact)
