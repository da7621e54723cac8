"""Requantization bit for bit against onnxruntime's QLinearConv / QLinearMatMul on random int8 data.

The int32 accumulators come from an independent numpy reference (int64 einsum over sliding
windows); only the requantization under test (``compiler.sim.quant``) turns them into int8/uint8.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx.reference import ReferenceEvaluator

from compiler.sim import quant

from .ort_graphs import conv_model, matmul_model, session, weight_bound


def _conv_acc(x, x_zp, w, bias, stride, pad):
    """int64 reference accumulator: pad with the zero point, subtract it, sum over windows."""
    xi = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=int(x_zp))
    xi = xi - int(x_zp)
    kh, kw = w.shape[2:]
    win = np.lib.stride_tricks.sliding_window_view(xi, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    return np.einsum("ncpqrs,kcrs->nkpq", win, w.astype(np.int64)) + bias.astype(np.int64)[None, :, None, None]


@pytest.mark.parametrize("seed", range(6))
def test_qlinearconv_per_channel_bit_exact(seed):
    rng = np.random.default_rng(seed)
    x_dtype = y_dtype = np.uint8 if seed % 2 else np.int8  # ORT requires y's type == x's type
    qmin, qmax = quant.qrange(x_dtype)
    cin, cout, h = int(rng.integers(1, 9)), int(rng.integers(1, 17)), int(rng.integers(5, 12))
    k, stride, pad = int(rng.choice([1, 3, 5])), int(rng.integers(1, 3)), int(rng.integers(0, 3))
    x = rng.integers(qmin, qmax + 1, (1, cin, h, h)).astype(x_dtype)
    w = rng.integers(-weight_bound(x_dtype), weight_bound(x_dtype) + 1, (cout, cin, k, k)).astype(np.int8)
    bias = rng.integers(-3000, 3000, cout).astype(np.int32)
    x_zp = int(rng.integers(qmin, qmax + 1))
    y_zp = int(rng.integers(*quant.qrange(y_dtype)))
    if seed < 3:  # power-of-two scales: many exact .5 ties, which exercise round-half-even
        x_scale, w_scale, y_scale = 2.0 ** -int(rng.integers(1, 4)), 2.0 ** -rng.integers(1, 6, cout), 1.0
    else:
        x_scale, w_scale, y_scale = rng.uniform(0.005, 0.05), rng.uniform(0.001, 0.02, cout), rng.uniform(0.02, 0.3)
    model = conv_model(x_dtype, y_dtype, w, bias, x_scale, x_zp, w_scale, y_scale, y_zp, x.shape, stride, pad)
    want = session(model).run(None, {"x": x})[0]

    acc = _conv_acc(x, x_zp, w, bias, stride, pad).astype(np.int32)
    scale = quant.output_scale(x_scale, w_scale, y_scale)[None, :, None, None]
    got = quant.requantize(acc, scale, y_zp, y_dtype)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)

    # onnx.reference follows the spec formula: a float64 multiply, + zero point, then round. It departs
    # from ORT by one LSB where the float32 product is a tie (round(t + zp) != round(t) + zp for odd zp)
    # or a float32/float64 near-tie; everywhere else the two agree.
    ref = ReferenceEvaluator(model).run(None, {"x": x})[0]
    diff = np.abs(ref.astype(np.int32) - want.astype(np.int32))
    assert diff.max() <= 1
    t = np.clip(acc.astype(np.float32) * scale, quant.qrange(y_dtype)[0] - y_zp, quant.qrange(y_dtype)[1] - y_zp)
    frac = np.abs(t - np.floor(t) - 0.5)
    explained = (frac == 0) & (y_zp % 2 == 1) | (frac < 1e-4)  # odd-zp tie, or a float32/64 near-tie
    assert not (diff.astype(bool) & ~explained).any()


def test_reference_differs_from_ort_on_ties_with_odd_zero_point():
    # acc = 1, scale = 1/2: t = 0.5.  ORT: rint(0.5) + 1 = 0 + 1 = 1.  Spec/onnx.reference: rint(1.5) = 2.
    x = np.ones((1, 1, 1, 1), np.int8)
    w = np.ones((1, 1, 1, 1), np.int8)
    model = conv_model(np.int8, np.int8, w, np.zeros(1, np.int32), 0.5, 0, np.array([1.0]), 1.0, 1,
                        x.shape, 1, 0)
    assert session(model).run(None, {"x": x})[0].item() == 1
    assert ReferenceEvaluator(model).run(None, {"x": x})[0].item() == 2
    assert quant.requantize(np.array([1]), quant.output_scale(0.5, 1.0, 1.0), 1).item() == 1


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinearmatmul_bit_exact(seed, per_column):
    rng = np.random.default_rng(100 + seed)
    a_dtype = y_dtype = np.uint8 if seed % 2 else np.int8  # ORT requires y's type == a's type
    qmin, qmax = quant.qrange(a_dtype)
    m, k, n = (int(v) for v in rng.integers(1, 70, 3))
    a = rng.integers(qmin, qmax + 1, (m, k)).astype(a_dtype)
    b = rng.integers(-weight_bound(a_dtype), weight_bound(a_dtype) + 1, (k, n)).astype(np.int8)
    a_zp, y_zp = int(rng.integers(qmin, qmax + 1)), int(rng.integers(*quant.qrange(y_dtype)))
    b_scale = rng.uniform(0.001, 0.02, n) if per_column else np.float32(rng.uniform(0.001, 0.02))
    a_scale, y_scale = rng.uniform(0.005, 0.05), rng.uniform(0.05, 2.0)
    model = matmul_model(a_dtype, y_dtype, b, a_scale, a_zp, b_scale, y_scale, y_zp, a.shape)
    want = session(model).run(None, {"a": a})[0]

    acc = ((a.astype(np.int64) - a_zp) @ b.astype(np.int64)).astype(np.int32)
    got = quant.requantize(acc, quant.output_scale(a_scale, b_scale, y_scale), y_zp, y_dtype)
    np.testing.assert_array_equal(got, want)


def test_output_scale_is_float32_in_ort_order():
    # (x*w)/y in float32 differs from x*(w/y) for these values, so the order is observable.
    xs, ws, ys = np.float32(0.1), np.float32(0.3), np.float32(0.7)
    assert quant.output_scale(xs, ws, ys) == np.float32(np.float32(xs * ws) / ys)
    assert np.float32(xs * ws) / ys != xs * np.float32(ws / ys)


def test_requantize_saturates_and_divide_mode():
    acc = np.array([-100000, -3, 3, 100000], np.int32)
    assert quant.requantize(acc, 1.0, 10, np.int8).tolist() == [-128, 7, 13, 127]
    assert quant.requantize(acc, 1.0, 10, np.uint8).tolist() == [0, 7, 13, 255]
    # divide: 3 / 2 = 1.5 -> 2 (half even), -3 / 2 = -1.5 -> -2
    assert quant.requantize(acc, 2.0, 0, np.int8, divide=True).tolist() == [-128, -2, 2, 127]


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # x:           -6 -5 -3 -2  2  3  5  6   with shift 2 (x/4 = -1.5 -1.25 -.75 -.5 .5 .75 1.25 1.5)
        (quant.ROUND_HALF_EVEN, [-2, -1, -1, 0, 0, 1, 1, 2]),
        (quant.ROUND_HALF_UP, [-1, -1, -1, 0, 1, 1, 1, 2]),
        (quant.ROUND_FLOOR, [-2, -2, -1, -1, 0, 0, 1, 1]),
    ],
)
def test_rounding_shift(mode, expected):
    x = np.array([-6, -5, -3, -2, 2, 3, 5, 6], np.int32)
    assert quant.rounding_shift(x, 2, mode).tolist() == expected
    assert quant.rounding_shift(x, 0, mode).tolist() == x.tolist()


def test_rounding_shift_matches_float_rint_for_half_even():
    rng = np.random.default_rng(7)
    x = rng.integers(-(2**31), 2**31, 2000).astype(np.int32)
    s = rng.integers(0, 32, 2000)
    want = np.rint(x.astype(np.float64) / 2.0 ** s).astype(np.int64)  # exact: x / 2**s is a dyadic
    assert (quant.rounding_shift(x, s).astype(np.int64) == want).all()
