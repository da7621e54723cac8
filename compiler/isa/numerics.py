"""Register values the compiler must compute exactly as ONNX Runtime does (float32, same order).

The ISA's REQUANT and QADD are defined in docs/isa.md; these helpers give the operands that make
them reproduce onnxruntime bit for bit (checked against onnxruntime in tests/isa).
"""

from __future__ import annotations

import numpy as np


def requant_scale(x_scale: float, w_scale: np.ndarray | float, y_scale: float) -> np.ndarray:
    """Per-channel REQUANT multiplier: ``(x_scale * w_scale[c]) / y_scale`` in float32 (qlinearconv.cc)."""
    f32 = np.float32
    return (f32(x_scale) * np.asarray(w_scale, dtype=f32)) / f32(y_scale)


def qadd_params(a_scale: float, a_zp: int, b_scale: float, b_zp: int, c_scale: float, c_zp: int
                ) -> tuple[np.float32, np.float32, np.float32]:
    """(QADD_SA, QADD_SB, QADD_OFF) for QLinearAdd: ratios to the output scale and the folded zero points."""
    f32 = np.float32
    sa = f32(a_scale) / f32(c_scale)
    sb = f32(b_scale) / f32(c_scale)
    off = f32(c_zp) - (sa * f32(a_zp) + sb * f32(b_zp))
    return sa, sb, f32(off)
