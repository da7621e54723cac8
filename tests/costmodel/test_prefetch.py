"""The prefetch hint compiles inside a kernel and changes nothing, even pointed past an array's end."""

import numpy as np
from numba import njit

from costmodel.prefetch import prefetch


@njit
def _sum_with_hints(a):
    total = 0
    for i in range(a.shape[0]):
        prefetch(a, i + 64, 0, 0)  # past the end for the last rows: a hint never faults
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                total += a[i, j, k]
    return total


def test_prefetch_is_a_pure_hint():
    a = np.arange(2 * 3 * 4, dtype=np.int64).reshape(2, 3, 4)
    assert _sum_with_hints(a) == a.sum()
    b = np.arange(24, dtype=np.int64).reshape(4, 3, 2).transpose(2, 1, 0)  # strided view
    assert _sum_with_hints(b) == b.sum()
