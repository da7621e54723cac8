"""QADD register values the compiler must compute exactly as ONNX Runtime does (float32, same order).

QADD is defined in docs/isa.md; with these operands it reproduces onnxruntime's QLinearAdd bit for
bit (tests/isa/test_numerics_ort.py). REQUANT's per-channel scale is compiler.sim.quant.output_scale.
"""

from __future__ import annotations

import numpy as np


def qadd_params(a_scale: float, a_zp: int, b_scale: float, b_zp: int, c_scale: float, c_zp: int
                ) -> tuple[np.float32, np.float32, np.float32]:
    """(QADD_SA, QADD_SB, QADD_OFF) for QLinearAdd: ratios to the output scale and the folded zero points.

    The offset is ``c_zp - (sa * a_zp + sb * b_zp)`` as MLAS's AVX2 kernel source writes it, compiled
    with FMA contraction: ``c_zp - fma(sa, a_zp, sb * b_zp)`` (the only order that matched onnxruntime
    on every element of 200 random scale/zero-point sets; tests/isa/test_qadd_fma.py)."""
    from compiler.sim.quant import fma32

    f32 = np.float32
    sa = f32(a_scale) / f32(c_scale)
    sb = f32(b_scale) / f32(c_scale)
    off = f32(c_zp) - fma32(sa, f32(a_zp), f32(sb * f32(b_zp)))
    return sa, sb, f32(off)
