"""Vector-unit layers: QLinearAdd (residual add), LUT activations, MaxPool, average and global average pooling.

QLinearAdd is QADD with ``compiler.isa.numerics.qadd_params`` (bit-exact with ORT's MLAS order).
MaxPool on uint8 is RMAX over the window; padding loads 0, the uint8 minimum, so it never wins.
Average pooling follows onnxruntime's QLinearAveragePool (``qlinear_pool.cc``) step for step, in
float32: every window element is dequantized (``f32(x - x_zp) * x_scale``) and added in window order
(RFADD), the sum is divided by the kernel size (FDIV) and quantized as ``nearbyintf(f / y_scale +
y_zp)`` (FQUANT). Padding loads ``x_zp``, which dequantizes to 0.0 and leaves the float sum as it is
(ORT skips padded positions). Global average pooling follows MLAS's
``MlasQLinearGlobalAveragePoolNchw``: an exact int32 sum (RADD), ``- n * x_zp`` (ADD), and
MLAS's requantization by the float32 ``x_scale / (y_scale * n)`` (REQUANT).
"""

from __future__ import annotations

import numpy as np

from compiler.isa import Buffer, Elem, Engine, Load, Reg, Src1Mode, Store, Vec, VecOp
from compiler.isa.numerics import qadd_params
from compiler.lower.emitter import Act, Emitter, Tile, act_bytes, blocks, f32_bits
from costmodel.errors import UserError

_WALK = 256  # VEC mx / my limit


def _flat_walks(n: int) -> list[tuple[int, int, int]]:
    """(offset, mx, my) pieces covering n consecutive rows with VEC walks."""
    full, rem = divmod(n, _WALK)
    out = []
    for r0 in range(0, full, _WALK):
        out.append((r0 * _WALK, _WALK, min(_WALK, full - r0)))
    if rem:
        out.append((full * _WALK, rem, 1))
    return out


def _u8(node: str, *acts: Act) -> None:
    for a in acts:
        if a.dtype != "uint8":
            raise UserError(f"node {node}: {a.dtype} tensor {a.name!r}; the compiler lowers uint8 QDQ models")


def _rows_pipeline(em: Emitter, rows: int, regions: int, body) -> None:
    """Elementwise layers: chunks of ``rows`` blocked-layout rows, ``regions`` SPAD regions per half;
    ``body(tile, bases, r0, n)`` fills a tile whose regions start at ``bases``."""
    per = em.target.spad_rows // (2 * regions)
    chunk = min(rows, per // _WALK * _WALK or per)
    tiles = []
    for t, r0 in enumerate(range(0, rows, chunk)):
        n = min(chunk, rows - r0)
        bases = [(t % 2) * regions * chunk + k * chunk for k in range(regions)]
        tile = Tile(f"rows {r0}-{r0 + n - 1}")
        body(tile, bases, r0, n)
        tiles.append(tile)
    em.pipeline(tiles)


def _store_rows(em: Emitter, sram: int, n: int, addr: int) -> list:
    vb = em.L
    return [Store(buf=Buffer.SPAD, sram=sram + o, y_size=min(4096, n - o), dram_addr=addr + o * vb, dram_pitch=vb)
            for o in range(0, n, 4096)]


def lower_add(em: Emitter, node: str, a: Act, b: Act, y: Act) -> None:
    """Elementwise QLinearAdd of two same-shape tensors, in chunks of rows of the blocked layout."""
    _u8(node, a, b, y)
    if a.shape != b.shape:
        raise UserError(f"node {node} (Add): shapes {list(a.shape)} and {list(b.shape)}; broadcasting is not "
                        "lowered")
    sa, sb, off = qadd_params(a.scale, a.zero_point, b.scale, b.zero_point, y.scale, y.zero_point)
    for reg, v in ((Reg.QADD_SA, sa), (Reg.QADD_SB, sb), (Reg.QADD_OFF, off)):
        em.setreg(Engine.EX, reg, f32_bits(v))
    em.setreg(Engine.EX, Reg.QMIN, 0)
    em.setreg(Engine.EX, Reg.QMAX, 255)
    vb = em.L

    def body(tile: Tile, bases: list[int], r0: int, n: int) -> None:
        pa, pb, po = bases
        tile.ld = em.load_rows(Buffer.SPAD, pa, n, a.addr + r0 * vb) + em.load_rows(Buffer.SPAD, pb, n, b.addr + r0 * vb)
        tile.ex = [Vec(op=VecOp.QADD, u8=True, src1_mode=Src1Mode.ROW, dst=po + o, src0=pa + o, src1=pb + o, mx=mx,
                       my=my, sx=1, sy=mx) for o, mx, my in _flat_walks(n)]
        tile.st = _store_rows(em, po, n, y.addr + r0 * vb)

    _rows_pipeline(em, act_bytes(a.shape, em.L) // em.L, 3, body)


def lut_table(x: Act, y: Act, fn) -> np.ndarray:
    """onnxruntime's 256-entry table (QlinearBuildLookupTable): dequantize every uint8 code in float32,
    apply ``fn`` in float32, quantize as QuantizeLinear (divide, round half to even, + zp, saturate)."""
    codes = np.arange(256, dtype=np.int32)
    deq = (np.float32(x.scale) * (codes - x.zero_point).astype(np.float32)).astype(np.float32)
    out = fn(deq).astype(np.float32)
    q = np.rint((out / np.float32(y.scale)).astype(np.float32)) + y.zero_point
    return np.clip(q, 0, 255).astype(np.int32)


def lower_lut(em: Emitter, node: str, x: Act, y: Act, table: np.ndarray) -> None:
    """An elementwise uint8 -> uint8 function as VEC LUT over a 256-entry table in CONST (16 rows)."""
    _u8(node, x, y)
    L = em.L
    t_rows = -(-256 // L)
    t_addr = em.const(np.resize(table.astype(np.int32), t_rows * L).reshape(t_rows, L), "lut")
    em.emit(Load(buf=Buffer.CONST, elem=Elem.B32, sram=0, y_size=t_rows, dram_addr=t_addr, dram_pitch=4 * L))
    em.setreg(Engine.EX, Reg.LUT_MIN, 0)

    def body(tile: Tile, bases: list[int], r0: int, n: int) -> None:
        px, po = bases
        tile.ld = em.load_rows(Buffer.SPAD, px, n, x.addr + r0 * L)
        tile.ex = [Vec(op=VecOp.LUT, u8=True, src1_mode=Src1Mode.FIXED, src1_buf=Buffer.CONST, dst=po + o,
                       src0=px + o, src1=0, mx=mx, my=my, sx=1, sy=mx) for o, mx, my in _flat_walks(n)]
        tile.st = _store_rows(em, po, n, y.addr + r0 * L)

    _rows_pipeline(em, act_bytes(x.shape, L) // L, 2, body)


def pool_out(h: int, w: int, k: tuple[int, int], s: tuple[int, int], pads: tuple[int, int, int, int]
             ) -> tuple[int, int]:
    return (h + pads[0] + pads[2] - k[0]) // s[0] + 1, (w + pads[1] + pads[3] - k[1]) // s[1] + 1


def _valid_counts(h: int, w: int, ho: int, wo: int, kernel, stride, pads) -> np.ndarray:
    """onnxruntime's divisor without count_include_pad: ``(hend - hstart) * (wend - wstart)`` per output,
    the window clipped to the image (qlinear_pool.cc)."""
    def axis(n_in: int, n_out: int, k: int, s: int, p: int) -> np.ndarray:
        start = np.arange(n_out) * s - p
        return np.minimum(start + k, n_in) - np.maximum(start, 0)

    return (axis(h, ho, kernel[0], stride[0], pads[0])[:, None] * axis(w, wo, kernel[1], stride[1], pads[1])[None, :])


def lower_pool(em: Emitter, node: str, x: Act, y: Act, kernel: tuple[int, int], stride: tuple[int, int],
               pads: tuple[int, int, int, int], mode: str, count_pad: bool = True) -> None:
    """Max (RMAX) or average (RFADD, FDIV, FQUANT) pooling over windows; tiles = (channel block, output
    rows). Without ``count_pad`` (count_include_pad = 0) the divisor of each output is its window's
    in-image count: a float32 row per output in CONST (FDIV src1_mode ROW), loaded with each tile."""
    _u8(node, x, y)
    L, tg = em.L, em.target
    _, c, h, w = x.shape
    kh, kw = kernel
    ho, wo = pool_out(h, w, kernel, stride, pads)
    if kh > 16 or kw > 16 or stride[1] > 15 or max(pads) > 7 or wo > 256:
        raise UserError(f"node {node} ({mode} pool): kernel {kernel}, stride {stride}, pads {pads} or output width "
                        f"{wo} exceed the VEC walk (16 taps per axis, sx <= 15, pads <= 7, 256 columns)")
    wp = w + pads[1] + pads[3]

    def rin(r: int) -> int:
        return (r - 1) * stride[0] + kh

    per_const = tg.const_rows // 2 if not count_pad else 1 << 30
    rows = next((r for r in range(min(ho, 256, tg.acc_rows // wo), 0, -1)
                 if 2 * rin(r) * wp + 2 * r * wo <= tg.spad_rows and r * wo <= per_const), 0)
    if rows == 0:
        raise UserError(f"node {node}: one output row of the pool does not fit SPAD")
    n = kh * kw
    if mode == "avg":
        em.setreg(Engine.LD, Reg.PADVAL, x.zero_point)  # a pad dequantizes to 0.0: the float sum is unchanged
        _qpool_setup(em, x, y, n)
        if not count_pad:
            counts = _valid_counts(h, w, ho, wo, kernel, stride, pads).astype(np.float32).reshape(-1)
            d_addr = em.const(np.repeat(counts[:, None], L, axis=1).view(np.int32), "scales")
    in_half, out_base = rin(rows) * wp, 2 * rin(rows) * wp
    tiles, t = [], 0
    for i in range(blocks(c, L)):
        for r0 in range(0, ho, rows):
            r = min(rows, ho - r0)
            a0, o0 = (t % 2) * in_half, out_base + (t % 2) * rows * wo
            p0, p1 = r0 * stride[0], (r0 + r - 1) * stride[0] + kh
            lo, hi = max(p0 - pads[0], 0), min(p1 - pads[0], h)
            tile = Tile(f"block {i} rows {r0}-{r0 + r - 1}")
            tile.ld = [Load(buf=Buffer.SPAD, padsel=mode == "avg", sram=a0, y_size=hi - lo, x_size=w,
                            dram_addr=x.addr + (i * h + lo) * w * L, dram_pitch=w * L,
                            y_pad0=max(0, pads[0] - p0), y_pad1=max(0, p1 - pads[0] - h), x_pad0=pads[1],
                            x_pad1=pads[3])]
            walk = {"mx": wo, "my": r, "l0": kw, "l1": kh, "sx": stride[1], "sy": stride[0] * wp, "s0": 1, "s1": wp}
            if mode == "max":
                tile.ex = [Vec(op=VecOp.RMAX, init=True, u8=True, dst=o0, src0=a0, **walk)]
            else:
                div = None
                if not count_pad:
                    div = (t % 2) * per_const
                    tile.ld.append(Load(buf=Buffer.CONST, elem=Elem.B32, sram=div, y_size=r * wo,
                                        dram_addr=d_addr + r0 * wo * 4 * L, dram_pitch=4 * L))
                tile.ex = [Vec(op=VecOp.RFADD, init=True, u8=True, dst_buf=Buffer.ACC, src0=a0, dst=0,
                               src1_mode=Src1Mode.REG, src1=int(Reg.S1), **walk), *_qpool_finish(0, o0, wo, r, div)]
            tile.st = [Store(buf=Buffer.SPAD, sram=o0, y_size=r, x_size=wo,
                             dram_addr=y.addr + (i * ho + r0) * wo * L, dram_pitch=wo * L)]
            tiles.append(tile)
            t += 1
    em.pipeline(tiles)


def _qpool_setup(em: Emitter, x: Act, y: Act, n: int) -> None:
    """EX registers of QLinearAveragePool: DQ_ZP = x_zp, S1 = x_scale, S2 = float32(n), S3 = y_scale."""
    em.setreg(Engine.EX, Reg.DQ_ZP, x.zero_point)
    em.setreg(Engine.EX, Reg.S1, f32_bits(x.scale))
    em.setreg(Engine.EX, Reg.S2, f32_bits(n))
    em.setreg(Engine.EX, Reg.S3, f32_bits(y.scale))
    em.setreg(Engine.EX, Reg.OUT_ZP, y.zero_point)
    em.setreg(Engine.EX, Reg.QMIN, 0)
    em.setreg(Engine.EX, Reg.QMAX, 255)


def _qpool_finish(acc: int, dst: int, mx: int, my: int, div: int | None = None) -> list:
    """The float32 window sums in ACC -> ``/ n`` (FDIV; by register S2, or by the per-output CONST rows
    at ``div``) -> uint8 as ``nearbyintf(f / y_scale + y_zp)``."""
    walk = {"mx": mx, "my": my, "sx": 1, "sy": mx, "src1_mode": Src1Mode.REG}
    by = ({"src1": int(Reg.S2)} if div is None else {"src1": div, "src1_buf": Buffer.CONST, "src1_mode": Src1Mode.ROW})
    return [Vec(op=VecOp.FDIV, dst_buf=Buffer.ACC, src0_buf=Buffer.ACC, dst=acc, src0=acc, **{**walk, **by}),
            Vec(op=VecOp.FQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, dst=dst, src0=acc,
                src1=int(Reg.S3), **walk)]


def _gap_setup(em: Emitter, node: str, x: Act, y: Act, n: int) -> None:
    """EX registers of MLAS's global average: S0 = -n * x_zp, S1 = the float32 ``x_scale / (y_scale * n)``
    (``CheckQLinearGlobalAveragePoolScaleAndSize``'s expression and order). MLAS refuses a ratio
    outside [2^-32, 256) ("parameter out of computation range"), so onnxruntime cannot run such a
    model: it is refused here too, not compiled into a binary whose reference cannot run."""
    scale = np.float32(x.scale) / (np.float32(y.scale) * np.float32(n))
    if not 2.0 ** -32 <= scale < 256.0:  # (and n < 2^24: the SPAD check above keeps n <= 4095)
        raise UserError(f"node {node} (global average pool): x_scale / (y_scale x {n} elements) = {float(scale):.4g} "
                        "is outside the [2^-32, 256) onnxruntime computes with (its output would be constant): "
                        "calibrate with data whose averages span a range closer to the input's")
    em.setreg(Engine.EX, Reg.S0, -n * x.zero_point)
    em.setreg(Engine.EX, Reg.S1, f32_bits(scale))
    em.setreg(Engine.EX, Reg.OUT_ZP, y.zero_point)
    em.setreg(Engine.EX, Reg.QMIN, 0)
    em.setreg(Engine.EX, Reg.QMAX, 255)


def _gap_finish(acc: int, dst: int, mx: int, my: int) -> list:
    walk = {"mx": mx, "my": my, "sx": 1, "sy": mx}
    return [Vec(op=VecOp.ADD, dst_buf=Buffer.ACC, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG, dst=acc, src0=acc,
                src1=int(Reg.S0), **walk),
            Vec(op=VecOp.REQUANT, u8=True, dst_buf=Buffer.SPAD, src0_buf=Buffer.ACC, src1_mode=Src1Mode.REG,
                dst=dst, src0=acc, src1=int(Reg.S1), **walk)]


def lower_global_avg(em: Emitter, node: str, x: Act, y: Act) -> None:
    """QLinearGlobalAveragePool: RADD chunks of at most 16 x 16 taps into one ACC row per block, then
    MLAS's bias and requantization."""
    _u8(node, x, y)
    L, tg = em.L, em.target
    _, c, h, w = x.shape
    cb = blocks(c, L)
    plane = h * w
    if cb * plane + cb > tg.spad_rows or plane > 4095 or cb > 256:
        raise UserError(f"node {node} (global average pool): the {c}x{h}x{w} input does not fit SPAD")
    _gap_setup(em, node, x, y, plane)
    out = cb * plane
    tile = Tile("all", ld=em.load_rows(Buffer.SPAD, 0, cb * plane, x.addr))
    first = True
    for r0 in range(0, h, 16):
        for c0 in range(0, w, 16):
            tile.ex.append(Vec(op=VecOp.RADD, init=first, u8=True, dst_buf=Buffer.ACC, dst=0, src0=r0 * w + c0,
                               mx=1, my=cb, l0=min(16, w - c0), l1=min(16, h - r0), sy=plane, s0=1, s1=w))
            first = False
    tile.ex += _gap_finish(0, out, 1, cb)
    tile.st = [Store(buf=Buffer.SPAD, sram=out, y_size=cb, dram_addr=y.addr, dram_pitch=L)]
    em.pipeline([tile])
