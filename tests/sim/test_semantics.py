"""Every GEMM/VEC op against a loop oracle written from the spec's pseudo-code (docs/isa.md).

The oracle walks elements, taps and lanes one at a time with Python integers (and numpy float32
scalars where the spec says fp32); the simulator does one vectorized call per instruction. Random
instructions come from hypothesis; destinations never alias sources, so loop order cannot matter.
"""

from __future__ import annotations

import struct
from fractions import Fraction
from math import floor

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from compiler.isa import Buffer, Engine, Gemm, GemmType, Reg, Src1Mode, Vec, VecOp
from compiler.isa.spec import REDUCE_OPS
from compiler.sim import compute, kernels
from compiler.sim.state import MachineState, SimError
from compiler.target import Target
from tests.isa.qadd_reference import qadd_as_documented

FLOAT_OPS = frozenset({VecOp.RFADD, VecOp.FDIV, VecOp.FQUANT, VecOp.RBLEND, VecOp.FREQUANT})

T = Target(spad_bytes=256 * 16, acc_bytes=64 * 64, const_bytes=64 * 64)  # 256 SPAD, 64 ACC, 64 CONST rows
L = T.lanes
ROWS = {Buffer.SPAD: 256, Buffer.ACC: 64, Buffer.CONST: 64}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def f32(bits: int) -> np.float32:
    return np.float32(struct.unpack("<f", struct.pack("<i", int(np.int64(bits).astype(np.int32))))[0])


def bits(x: float) -> int:
    return struct.unpack("<i", struct.pack("<f", x))[0]


def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def rint(f: np.float32) -> int:
    return round(float(f))  # Python's round() is half to even


def random_state(rng: np.random.Generator, scales: bool) -> MachineState:
    s = MachineState.create(T, 0)
    s.buffers[Buffer.SPAD][:] = rng.integers(-128, 128, s.buffers[Buffer.SPAD].shape)
    s.buffers[Buffer.ACC][:] = rng.integers(-(2**31), 2**31, s.buffers[Buffer.ACC].shape)
    if scales:  # REQUANT reads CONST/ACC rows as fp32 scales: finite, positive
        for b in (Buffer.CONST, Buffer.ACC):
            s.buffers[b][:] = rng.uniform(1e-4, 3.0, s.buffers[b].shape).astype(np.float32).view(np.int32)
    else:
        s.buffers[Buffer.CONST][:] = rng.integers(-3000, 3000, s.buffers[Buffer.CONST].shape)
    regs = s.regs[int(Engine.EX)]
    regs[int(Reg.OUT_ZP)] = int(rng.integers(-20, 20))
    regs[int(Reg.CLAMP_LO)], regs[int(Reg.CLAMP_HI)] = sorted(int(v) for v in rng.integers(-200, 200, 2))
    regs[int(Reg.ROUND)] = int(rng.integers(0, 3))
    regs[int(Reg.LUT_MIN)] = -128
    regs[int(Reg.QADD_SA)] = bits(float(rng.uniform(0.1, 2)))
    regs[int(Reg.QADD_SB)] = bits(float(rng.uniform(0.1, 2)))
    regs[int(Reg.QADD_OFF)] = bits(float(rng.uniform(-30, 30)))
    for r in range(16, 32):
        regs[r] = bits(float(rng.uniform(0.01, 2))) if scales else int(rng.integers(0, 32))
    return s


def read(s: MachineState, buf: Buffer, row: int, u8: bool) -> list[int]:
    v = s.buffers[buf][row]
    return [int(x) for x in (v.view(np.uint8) if (u8 and buf == Buffer.SPAD) else v)]


def convert(v: int, buf: Buffer, u8: bool) -> int:
    if buf != Buffer.SPAD:
        return wrap32(v)
    lo, hi = (0, 255) if u8 else (-128, 127)
    return min(max(v, lo), hi)


def shr(x: int, s: int, mode: int) -> int:
    q = Fraction(x, 2**s)
    return round(q) if mode == 0 else (floor(q + Fraction(1, 2)) if mode == 1 else floor(q))


def lane_op(s: MachineState, op: VecOp, x: int, y, reg) -> int:
    if op == VecOp.MOV:
        return x
    if op in (VecOp.ADD, VecOp.SUB, VecOp.MUL, VecOp.MAX, VecOp.MIN):
        return {VecOp.ADD: x + y, VecOp.SUB: x - y, VecOp.MUL: x * y, VecOp.MAX: max(x, y), VecOp.MIN: min(x, y)}[op]
    if op == VecOp.SHR:
        return shr(x, y, reg(Reg.ROUND))
    if op == VecOp.CLAMP:
        return min(max(x, reg(Reg.CLAMP_LO)), reg(Reg.CLAMP_HI))
    if op in (VecOp.REQUANT, VecOp.REQUANT_DIV):
        f = np.float32(x) * f32(y) if op == VecOp.REQUANT else np.float32(x) / f32(y)
        zp = reg(Reg.OUT_ZP)
        f = min(max(float(f), reg(Reg.QMIN) - zp), reg(Reg.QMAX) - zp)
        return rint(np.float32(f)) + zp
    if op == VecOp.QADD:
        # two fused multiply-adds, each rounded once (docs/isa.md), evaluated exactly: four separate
        # float32 roundings differ by 1 beside a .5 tie (x=-104, y=-121: -126 against -127)
        sa, sb, off = (f32(reg(r)) for r in (Reg.QADD_SA, Reg.QADD_SB, Reg.QADD_OFF))
        return int(qadd_as_documented(np.array([x]), np.array([y]), sa, sb, off, reg(Reg.QMIN), reg(Reg.QMAX))[0])
    raise AssertionError(op)


def oracle_vec(s: MachineState, i: Vec) -> np.ndarray:
    """The destination rows after ``i``, computed element by element."""
    reg = lambda r: int(s.regs[int(Engine.EX), int(r)])
    out = []
    for my in range(i.my):
        for mx in range(i.mx):
            m = my * i.mx + mx
            old = read(s, i.dst_buf, i.dst + m, i.u8)
            acc = None if (i.init or i.op not in REDUCE_OPS) else old
            for l1 in range(i.l1):
                for l0 in range(i.l0):
                    t = l1 * i.l0 + l0
                    x = read(s, i.src0_buf, i.src0 + l1 * i.s1 + l0 * i.s0 + my * i.sy + mx * i.sx, i.u8)
                    if i.src1_mode == Src1Mode.REG:
                        y = [reg(i.src1)] * L
                    else:
                        row = {Src1Mode.ROW: i.src1 + m, Src1Mode.TAP: i.src1 + t, Src1Mode.FIXED: i.src1}[i.src1_mode]
                        y = read(s, i.src1_buf, row, i.u8)
                    if i.op == VecOp.LSUM:
                        r = [sum(x)] * L
                    elif i.op == VecOp.LMAX:
                        r = [max(x)] * L
                    elif i.op == VecOp.LUT:
                        table = s.buffers[Buffer.CONST][i.src1 :].ravel()
                        r = [int(table[v - reg(Reg.LUT_MIN)]) for v in x]
                    elif i.op in REDUCE_OPS:
                        term = [a * b for a, b in zip(x, y, strict=True)] if i.op == VecOp.RMAC else x
                        if acc is None:
                            r = term
                        elif i.op in (VecOp.RADD, VecOp.RMAC):
                            r = [a + b for a, b in zip(acc, term, strict=True)]
                        else:
                            pick = max if i.op == VecOp.RMAX else min
                            r = [pick(a, b) for a, b in zip(acc, term, strict=True)]
                        acc = r
                    else:
                        r = [lane_op(s, i.op, a, b, reg) for a, b in zip(x, y, strict=True)]
            out.append([convert(v, i.dst_buf, i.u8) for v in r])
    dtype = s.buffers[i.dst_buf].dtype
    res = np.array(out, dtype=np.int64)
    return (res.astype(np.uint8).view(np.int8) if dtype == np.int8 and i.u8 else res.astype(dtype))


@st.composite
def vec_insns(draw):
    # The float32 ops (RFADD, FDIV, FQUANT, RBLEND, FREQUANT) have their own float32 references in
    # tests/isa/test_float_vec_ops.py; this integer loop oracle covers the rest.
    op = draw(st.sampled_from([o for o in VecOp if o not in FLOAT_OPS]))
    reduce = op in REDUCE_OPS
    mx, my = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    l0, l1 = (draw(st.integers(1, 3)), draw(st.integers(1, 2))) if reduce else (1, 1)
    src0_buf = draw(st.sampled_from([Buffer.SPAD, Buffer.ACC]))
    if op == VecOp.LUT:
        src0_buf = Buffer.SPAD  # int8 inputs index a 256-entry table
    mode = draw(st.sampled_from(list(Src1Mode)))
    src1_buf = draw(st.sampled_from(list(Buffer)))
    if op in (VecOp.REQUANT, VecOp.REQUANT_DIV) and src1_buf == Buffer.SPAD:
        src1_buf = Buffer.CONST
    if op == VecOp.LUT:
        mode, src1_buf = Src1Mode.FIXED, Buffer.CONST
    src1 = draw(st.integers(16, 31)) if mode == Src1Mode.REG else draw(st.integers(0, 6 if op != VecOp.LUT else 40))
    if op == VecOp.SHR:
        mode, src1 = Src1Mode.REG, draw(st.integers(16, 31))
    dst_buf = draw(st.sampled_from([b for b in Buffer if b not in (src0_buf, src1_buf)] or [Buffer.ACC]))
    if dst_buf in (src0_buf, src1_buf):
        dst_buf = next(b for b in Buffer if b not in (src0_buf, src1_buf))
    return Vec(op=op, init=draw(st.booleans()), src1_mode=mode, u8=draw(st.booleans()), dst_buf=dst_buf,
               src0_buf=src0_buf, src1_buf=src1_buf, dst=draw(st.integers(0, 40)), src0=draw(st.integers(0, 6)),
               src1=src1, mx=mx, my=my, l0=l0, l1=l1, sx=draw(st.integers(0, 2)), sy=draw(st.integers(0, 5)),
               s0=draw(st.integers(0, 3)), s1=draw(st.integers(0, 6)))


@SETTINGS
@given(insn=vec_insns(), seed=st.integers(0, 2**16))
# beside a .5 tie (element [3, 9]: exactly -126.5000047): two FMAs give -127, four roundings -126
@example(insn=Vec(op=VecOp.QADD, src1_mode=Src1Mode.ROW, src0_buf=Buffer.SPAD, src1_buf=Buffer.SPAD,
                  dst_buf=Buffer.ACC, mx=4, my=3), seed=3)
def test_vec_matches_loop_oracle(insn, seed):
    rng = np.random.default_rng(seed)
    s = random_state(rng, scales=insn.op in (VecOp.REQUANT, VecOp.REQUANT_DIV))
    if insn.op == VecOp.SHR:  # shift amounts in [0, 31]
        s.regs[int(Engine.EX), 16:32] = rng.integers(0, 32, 16)
    want = oracle_vec(s, insn)
    compute.vec(s, insn, "test", compute=True)
    got = s.buffers[insn.dst_buf][insn.dst : insn.dst + insn.mx * insn.my]
    np.testing.assert_array_equal(got, want)


def test_relu_in_place_and_maxpool_hand_example():
    s = MachineState.create(T, 0)
    s.buffers[Buffer.SPAD][0:4] = np.array([-3, 5, -1, 2])[:, None]  # 2x2 window, one value per row
    # in-place ReLU: MAX with a register holding 0 (element m reads then writes row m)
    compute.vec(s, Vec(op=VecOp.MAX, src1_mode=Src1Mode.REG, src1=16, dst=0, src0=0, mx=4, sx=1), "t", True)
    assert s.buffers[Buffer.SPAD][0:4, 0].tolist() == [0, 5, 0, 2]
    # 2x2 max-pool of a 2-wide image: taps (l1, l0) step s1 = 2 (a row), s0 = 1 (a column)
    compute.vec(s, Vec(op=VecOp.RMAX, init=True, dst=10, src0=0, l0=2, l1=2, s0=1, s1=2), "t", True)
    assert s.buffers[Buffer.SPAD][10, 0] == 5


def oracle_gemm(s: MachineState, g: Gemm, weights_before: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    spad = s.buffers[Buffer.SPAD]
    a_view = spad.view(np.uint8) if g.dtype == GemmType.U8 else spad
    acc = s.buffers[Buffer.ACC].astype(np.int64).copy()
    w = weights_before
    for l1 in range(g.l1):
        for l0 in range(g.l0):
            t = l1 * g.l0 + l0
            if g.loadw:
                w = spad[g.w_base + t * L : g.w_base + (t + 1) * L].astype(np.int64)
                if g.w_t:
                    w = w.T
            for my in range(g.my):
                for mx in range(g.mx):
                    a = g.a_base + l1 * g.a_s1 + l0 * g.a_s0 + my * g.a_sy + mx * g.a_sx
                    c = g.c_base + my * g.mx + mx
                    init = not g.acc and t == 0
                    row = (0 if init else acc[c]) + a_view[a].astype(np.int64) @ w
                    acc[c] = [wrap32(int(v)) for v in row]
    return acc.astype(np.int32), w


@st.composite
def gemm_insns(draw):
    return Gemm(loadw=draw(st.booleans()), w_t=draw(st.booleans()), acc=draw(st.booleans()),
                dtype=draw(st.sampled_from(list(GemmType))), a_base=draw(st.integers(0, 20)),
                w_base=draw(st.integers(100, 130)), c_base=draw(st.integers(0, 30)),
                mx=draw(st.integers(1, 5)), my=draw(st.integers(1, 3)), l0=draw(st.integers(1, 3)),
                l1=draw(st.integers(1, 2)), a_sx=draw(st.integers(0, 3)), a_sy=draw(st.integers(0, 9)),
                a_s0=draw(st.integers(0, 4)), a_s1=draw(st.integers(0, 12)))


@SETTINGS
@given(g=gemm_insns(), seed=st.integers(0, 2**16))
def test_gemm_matches_loop_oracle(g, seed):
    rng = np.random.default_rng(seed)
    s = random_state(rng, scales=False)
    s.buffers[Buffer.ACC][:] = rng.integers(2**31 - 2**20, 2**31, s.buffers[Buffer.ACC].shape)  # wraps
    s.weights = rng.integers(-128, 128, (L, L)).astype(np.int8)  # a tile from an earlier loadw
    want_acc, want_w = oracle_gemm(s, g, s.weights.astype(np.int64))
    compute.gemm(s, g, "test", compute=True)
    np.testing.assert_array_equal(s.buffers[Buffer.ACC], want_acc)
    np.testing.assert_array_equal(s.weights, want_w)  # the last tile stays in the PEs


def test_shr_rounding_modes_through_the_register():
    s = MachineState.create(T, 0)
    s.buffers[Buffer.ACC][0:8] = np.array([-6, -5, -3, -2, 2, 3, 5, 6])[:, None]  # / 4: ties at -1.5 -.5 .5 1.5
    s.regs[int(Engine.EX), 16] = 2
    want = {0: [-2, -1, -1, 0, 0, 1, 1, 2], 1: [-1, -1, -1, 0, 1, 1, 1, 2], 2: [-2, -2, -1, -1, 0, 0, 1, 1]}
    for mode, expected in want.items():
        s.regs[int(Engine.EX), int(Reg.ROUND)] = mode
        compute.vec(s, Vec(op=VecOp.SHR, src1_mode=Src1Mode.REG, src1=16, dst_buf=Buffer.ACC, src0_buf=Buffer.ACC,
                           dst=10, src0=0, mx=8, sx=1), "t", True)
        assert s.buffers[Buffer.ACC][10:18, 3].tolist() == expected


def test_exact_matmul_beyond_float32_integers():
    # K = 3000 products of 255 * 127 reach 9.7e7 > 2**24: naive float32 would round, chunks must not
    rng = np.random.default_rng(2)
    a = rng.integers(200, 256, (5, 3000))
    w = rng.integers(100, 128, (3000, 7))
    np.testing.assert_array_equal(kernels.exact_matmul(a, w), a @ w)
    big = np.full((2, 2), 2**20)  # one product is already above 2**24: the int64 path
    np.testing.assert_array_equal(kernels.exact_matmul(big, big), big @ big)


def test_vec_rejects_reading_rows_an_earlier_element_overwrote():
    s = MachineState.create(T, 0)
    # dst = src0 + 1: element 1 would read row 1, which element 0 has just written
    shifted = Vec(op=VecOp.MOV, dst=1, src0=0, mx=4, sx=1)
    with pytest.raises(SimError, match="earlier elements already overwrote"):
        compute.vec(s, shifted, "t", True)
    # dst = src0 - 1 is fine: every row is read before the element that overwrites it (a shift down)
    s.buffers[Buffer.SPAD][0:6, 0] = [9, 1, 2, 3, 4, 5]
    compute.vec(s, Vec(op=VecOp.MOV, dst=0, src0=1, mx=5, sx=1), "t", True)
    assert s.buffers[Buffer.SPAD][0:6, 0].tolist() == [1, 2, 3, 4, 5, 5]


def test_exact_matmul_with_minus_128():
    """|int8 -128| is 128 (np.abs gives -128): a weight block whose only nonzero is -128 came out all
    zeros, and an underestimated bound made long float32 chunks inexact."""
    def check(a, w):
        np.testing.assert_array_equal(kernels.exact_matmul(a, w), a.astype(np.int64) @ w.astype(np.int64))

    check(np.array([[1, 2]], np.int8), np.array([[-128], [0]], np.int8))
    a = np.full((2, 1100), -128, np.int8)  # a sum of (-128) x (-128) products past 2**24, made odd by one
    a[0, 1] = -127
    w = np.full((1100, 1), -128, np.int8)
    w[1, 0] = 1
    check(a, w)
