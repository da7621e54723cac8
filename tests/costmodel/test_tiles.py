"""Window tables: FFT autocorrelation (long axes) equals direct counting; table sizes and
overlaps equal set arithmetic."""

from __future__ import annotations

import numpy as np

from costmodel import problem as P
from costmodel.tiles import autocorrelation, shape_of, window_table


def test_fft_autocorrelation_is_exact():
    rng = np.random.default_rng(0)
    for n in (513, 700, 2049, 5000):
        ind = (rng.random(n) < rng.random()).astype(np.int64)
        assert np.array_equal(autocorrelation(ind), np.correlate(ind, ind, mode="full"))


def test_window_table_against_sets_long_conv1d():
    # a raw-audio-like conv1d: 1200 outputs, kernel 10, stride 5 (input axis w = 5q + s)
    prob = P.conv1d(1, 1, 6005, kernel=10, stride=5)
    shape = shape_of(prob)
    ax = next(a for a in shape.axes[0] if not a.single)
    tab = window_table(ax, shape.sizes)
    (c1, _), (c2, _) = ax.terms
    for n1, n2 in ((1, 10), (600, 2), (24, 5)):
        x = {c1 * i + c2 * j for i in range(n1) for j in range(n2)}
        row = tab.lookup[0][n1] * tab.radix[1] + tab.lookup[1][n2]  # mixed radix over the divisors
        assert tab.size[row] == len(x)
        for shift in (0, 1, 5, 7, 50, -3000):
            assert tab.overlap[row, shift + tab.span] == len(x & {v + shift for v in x})
