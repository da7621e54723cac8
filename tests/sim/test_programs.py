"""Hand-written conv and matmul programs: simulated outputs equal numpy / onnxruntime exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.isa.binary import read_binary, write_binary
from compiler.isa.text import assemble, disassemble
from compiler.sim import quant, simulate

from .ort_graphs import conv_model, matmul_model, session, weight_bound
from .sim_programs import L, conv_program, depthwise_program, matmul_program

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def numpy_conv(x, w, stride, pad, x_zp):
    """Direct definition: out[k,p,q] = sum_{c,r,s} (xpad[c, p*stride+r, q*stride+s] - zp) * w[k,c,r,s]."""
    xp = np.pad(x[0].astype(np.int64), ((0, 0), (pad, pad), (pad, pad)), constant_values=x_zp) - x_zp
    cout, _, kh, kw = w.shape
    ho, wo = (xp.shape[1] - kh) // stride + 1, (xp.shape[2] - kw) // stride + 1
    out = np.zeros((cout, ho, wo), np.int64)
    for r in range(kh):
        for s in range(kw):
            patch = xp[:, r : r + stride * (ho - 1) + 1 : stride, s : s + stride * (wo - 1) + 1 : stride]
            out += np.einsum("chw,kc->khw", patch, w[:, :, r, s].astype(np.int64))
    return out[None]


@SETTINGS
@given(m=st.integers(1, 40), kb=st.integers(1, 3), nb=st.integers(1, 3), a_zp=st.integers(-128, 127),
       seed=st.integers(0, 2**16))
def test_matmul_program_equals_numpy(m, kb, nb, a_zp, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, kb * L)).astype(np.int8)
    b = rng.integers(-128, 128, (kb * L, nb * L)).astype(np.int8)
    program, inputs = matmul_program(a, b, a_zp=a_zp)
    got = simulate(program, inputs).outputs["y"]
    np.testing.assert_array_equal(got, (a.astype(np.int64) - a_zp) @ b.astype(np.int64))


@SETTINGS
@given(h=st.integers(3, 12), w=st.integers(3, 12), k=st.sampled_from([1, 3, 5]), stride=st.integers(1, 2),
       pad=st.integers(0, 2), cin=st.integers(1, 40), cout=st.integers(1, 40), x_zp=st.integers(-128, 127),
       seed=st.integers(0, 2**16))
def test_conv_program_equals_numpy(h, w, k, stride, pad, cin, cout, x_zp, seed):
    if h + 2 * pad < k or w + 2 * pad < k:
        return
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, cin, h, w)).astype(np.int8)
    wt = rng.integers(-128, 128, (cout, cin, k, k)).astype(np.int8)
    program, inputs = conv_program(x, wt, stride=stride, pad=pad, x_zp=x_zp)
    np.testing.assert_array_equal(simulate(program, inputs).outputs["y"], numpy_conv(x, wt, stride, pad, x_zp))


def test_conv_3x3_padded_strided_hand_sized():
    # 10x9 input, 3x3, stride 2, pad 1 -> (10 + 2 - 3)//2 + 1 = 5 rows, (9 + 2 - 3)//2 + 1 = 5 columns
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 16, 10, 9)).astype(np.int8)
    wt = rng.integers(-128, 128, (16, 16, 3, 3)).astype(np.int8)
    for barrier in (False, True):  # tokens, or barriers instead of tokens
        program, inputs = conv_program(x, wt, stride=2, pad=1, x_zp=7, barrier=barrier)
        y = simulate(program, inputs).outputs["y"]
        assert y.shape == (1, 16, 5, 5)
        np.testing.assert_array_equal(y, numpy_conv(x, wt, 2, 1, 7))


def test_requantized_matmul_program_equals_onnxruntime():
    rng = np.random.default_rng(3)
    for unsigned in (False, True):
        m, k, n = 23, 48, 32
        lo, hi = quant.qrange(np.uint8 if unsigned else np.int8)
        a = rng.integers(lo, hi + 1, (m, k)).astype(np.uint8 if unsigned else np.int8)
        b = rng.integers(-weight_bound(a.dtype), weight_bound(a.dtype) + 1, (k, n)).astype(np.int8)
        a_zp, y_zp = int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1))
        a_scale, b_scale, y_scale = 0.02, rng.uniform(0.002, 0.02, n), 0.9
        want = session(matmul_model(a.dtype, a.dtype, b, a_scale, a_zp, b_scale, y_scale, y_zp, a.shape)).run(
            None, {"a": a})[0]
        program, inputs = matmul_program(a, b, a_zp=a_zp, scales=quant.output_scale(a_scale, b_scale, y_scale),
                                         y_zp=y_zp, unsigned=unsigned)
        got = simulate(program, inputs).outputs["y"]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_assembled_and_file_round_trip_run_identically(tmp_path):
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (1, 8, 7, 7)).astype(np.int8)
    wt = rng.integers(-128, 128, (12, 8, 3, 3)).astype(np.int8)
    program, inputs = conv_program(x, wt, stride=1, pad=1, x_zp=-3)
    text_program = assemble(disassemble(program))
    path = write_binary(program, tmp_path / "conv.axb")
    want = numpy_conv(x, wt, 1, 1, -3)
    for p in (text_program, read_binary(path), path):
        r = simulate(p, inputs)
        np.testing.assert_array_equal(r.outputs["y"], want)


def test_timing_only_mode_gives_the_same_cycles_without_outputs():
    rng = np.random.default_rng(6)
    a = rng.integers(-128, 128, (30, 32)).astype(np.int8)
    b = rng.integers(-128, 128, (32, 48)).astype(np.int8)
    program, inputs = matmul_program(a, b)
    full = simulate(program, inputs)
    fast = simulate(program, {}, functional=False)
    assert fast.outputs == {} and fast.cycles == full.cycles and fast.busy == full.busy
    assert simulate(program, inputs, timing=False).cycles is None


@pytest.mark.parametrize(("k", "stride", "pad", "seed"), [(3, 1, 1, 0), (3, 2, 1, 1), (5, 1, 2, 2), (3, 2, 0, 3)])
def test_depthwise_conv_on_the_vector_unit_equals_onnxruntime(k, stride, pad, seed):
    rng = np.random.default_rng(seed)
    c, h = 13, 11
    x = rng.integers(-128, 128, (1, c, h, h)).astype(np.int8)
    w = rng.integers(-127, 128, (c, 1, k, k)).astype(np.int8)
    bias = rng.integers(-2000, 2000, c).astype(np.int32)
    x_zp, y_zp = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    x_scale, w_scale, y_scale = 0.03, rng.uniform(0.002, 0.02, c), 0.25
    model = conv_model(np.int8, np.int8, w, bias, x_scale, x_zp, w_scale, y_scale, y_zp, x.shape, stride, pad,
                       group=c)
    want = session(model).run(None, {"x": x})[0]
    program, inputs = depthwise_program(x, w, bias, quant.output_scale(x_scale, w_scale, y_scale), stride=stride,
                                        pad=pad, x_zp=x_zp, y_zp=y_zp)
    np.testing.assert_array_equal(simulate(program, inputs).outputs["y"], want)


@pytest.mark.parametrize(("cin", "cout", "k", "stride", "pad", "seed"),
                         [(3, 16, 3, 2, 1, 0), (20, 24, 3, 1, 1, 1), (33, 17, 1, 1, 0, 2), (16, 40, 5, 2, 2, 3)])
def test_qlinearconv_program_equals_onnxruntime(cin, cout, k, stride, pad, seed):
    # the layer recipe of docs/isa.md: zero-point padding, bias with -x_zp*sum(w) folded in, one GEMM per
    # input-channel block accumulating in ACC, per-channel REQUANT; channel counts that are not multiples of 16
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, cin, 9, 10)).astype(np.int8)
    w = rng.integers(-127, 128, (cout, cin, k, k)).astype(np.int8)
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    x_zp, y_zp = int(rng.integers(-128, 128)), int(rng.integers(-128, 128))
    x_scale, w_scale, y_scale = 0.02, rng.uniform(0.001, 0.01, cout), 0.5
    model = conv_model(np.int8, np.int8, w, bias, x_scale, x_zp, w_scale, y_scale, y_zp, x.shape, stride, pad)
    want = session(model).run(None, {"x": x})[0]
    program, inputs = conv_program(x, w, stride=stride, pad=pad, x_zp=x_zp, bias=bias, y_zp=y_zp,
                                   scales=quant.output_scale(x_scale, w_scale, y_scale))
    np.testing.assert_array_equal(simulate(program, inputs).outputs["y"], want)
