"""From a QDQ model to per-op lowering calls, through onnxruntime's own fused graph.

Why the fused graph: bit-exactness is defined against onnxruntime, and ORT computes a QDQ model
by first rewriting it (QDQ groups -> QLinearConv, QGemm, QLinearAdd, QLinearAveragePool, uint8
MaxPool). We let ORT do that rewrite (graph optimization level EXTENDED, saved to a temporary
file) and lower exactly the kernels ORT runs, with their quantization parameters. A node ORT
leaves in float (DequantizeLinear -> op -> QuantizeLinear) is lowered only where the ISA has ops
that repeat ORT's float32 steps (DQ -> Q requantization pairs, DQ -> Resize(linear) -> Q) or
within 1 LSB (DQ -> ReduceMean(H, W) -> Q; compiler.quantize turns such ReduceMeans into
GlobalAveragePool, which is exact); any other is rejected by name.
The graph's float input passes through one QuantizeLinear (the binary's uint8 input, with that
scale and zero point) and every output through one DequantizeLinear (the binary's uint8 output).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from compiler.frontend.mac_layers import auto_pads
from compiler.isa.program import IOTensor
from compiler.lower import const_matmul, conv, layout_ops, ort_ref, resize_linear, vector
from compiler.lower.emitter import Act, Emitter, act_bytes
from compiler.lower.ort_ref import fused_model  # noqa: F401 - re-exported (compiler.compile, tests)
from costmodel.errors import UserError


class GraphLowering:
    """Walks the fused graph in order and lowers each node; activations live in DRAM between nodes."""

    def __init__(self, model, em: Emitter) -> None:
        from onnx import numpy_helper

        self.model, self.em = model, em
        self.consts = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.acts: dict[str, Act] = {}
        self.consumers: dict[str, list] = {}
        self.producer: dict[str, object] = {}
        for n in model.graph.node:
            # an unnamed node (onnx.helper's default) is named by its first output, as its layer is in the
            # debug map: messages had read `node  (QLinearConv): ...`
            n.name = n.name or n.output[0]
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)
            for o in n.output:
                self.producer[o] = n
        self.graph_inputs = {i.name: i for i in model.graph.input if i.name not in self.consts}
        self.graph_outputs = [o.name for o in model.graph.output]
        self.io: list[IOTensor] = []

    # --- helpers -------------------------------------------------------------------------------
    def c(self, node, index: int, what: str) -> np.ndarray:
        if index >= len(node.input) or not node.input[index]:
            raise UserError(f"node {node.name} ({node.op_type}): missing input {index} ({what})")
        name = node.input[index]
        if name not in self.consts:
            raise UserError(f"node {node.name} ({node.op_type}): {what} {name!r} is not a constant; "
                            "the compiler needs constant weights and quantization parameters")
        return self.consts[name]

    def act(self, node, index: int) -> Act:
        name = node.input[index]
        if name not in self.acts:
            raise UserError(f"node {node.name} ({node.op_type}): input {name!r} is not a quantized tensor the "
                            "accelerator holds (it comes from a float op)")
        return self.acts[name]

    def out(self, node, shape: tuple[int, ...], scale, zp, index: int = 0) -> Act:
        if len(shape) not in (2, 4):
            raise UserError(f"node {node.name} ({node.op_type}): output of shape {list(shape)}; only 2-D (N, C) and "
                            "4-D (N, C, H, W) tensors are lowered (1-D convolutions and sequences are not)")
        if len(shape) == 4 and shape[0] != 1:  # (the 4-D handlers compute one sample: a batch lost the rest)
            raise UserError(f"node {node.name} ({node.op_type}): output of shape {list(shape)}, a batch of "
                            f"{shape[0]}; 4-D tensors are lowered for batch 1 only: export the model with batch 1 "
                            "and run the binary once per sample")
        zp = np.asarray(zp)
        dtype = "uint8" if zp.dtype == np.uint8 else "int8"
        a = self.em.new_act(node.output[index], shape, float(np.asarray(scale).reshape(-1)[0]),
                            int(zp.reshape(-1)[0]), dtype)
        self.acts[node.output[index]] = a
        return a

    @staticmethod
    def attrs(node) -> dict:
        from onnx import helper

        return {a.name: helper.get_attribute_value(a) for a in node.attribute}

    # --- the walk ------------------------------------------------------------------------------
    def run(self) -> None:
        handlers: dict[str, Callable] = {
            "QuantizeLinear": self.quantize, "DequantizeLinear": self.dequantize, "QLinearConv": self.qconv,
            "QGemm": self.qgemm, "QLinearMatMul": self.qmatmul, "QLinearAdd": self.qadd,
            "MaxPool": self.maxpool, "QLinearAveragePool": self.avgpool,
            "QLinearGlobalAveragePool": self.gap, "ReduceMean": self.reduce_mean,
            "QLinearLeakyRelu": self.leaky_relu, "QLinearSigmoid": self.sigmoid, "Resize": self.resize, "QLinearConcat": self.concat,
            "Reshape": self.reshape, "Flatten": self.reshape, "Squeeze": self.reshape, "Unsqueeze": self.reshape,
        }
        for node in self.model.graph.node:
            handler = handlers.get(node.op_type)
            if handler is None:
                raise UserError(f"node {node.name} ({node.op_type}): the target cannot execute "
                                f"{node.op_type} (ORT runs it in float, or no lowering exists); supported: "
                                f"{sorted(handlers)}")
            handler(node)
        missing = [o for o in self.graph_outputs if o not in {t.name for t in self.io}]
        if missing:
            raise UserError(f"graph output(s) {missing} are not produced by a DequantizeLinear of an accelerator "
                            "tensor")

    def expose_all(self) -> None:
        """Every activation not yet in the I/O table becomes an extra output (same DRAM bytes)."""
        named = {t.name for t in self.io}
        for name, a in self.acts.items():
            if name not in named and a.addr not in {t.addr for t in self.io if t.direction == "input"}:
                self.io.append(IOTensor(name, "output", a.dtype, a.shape, a.layout + str(self.em.L), a.addr, a.scale,
                                        a.zero_point))

    def _layer(self, node) -> None:
        self.em.begin_layer(node.name, node.op_type)

    def quantize(self, node) -> None:
        src = node.input[0]
        if src in self.graph_inputs:
            vi = self.graph_inputs[src].type.tensor_type
            shape = tuple(d.dim_value if d.dim_value > 0 else 1 for d in vi.shape.dim)
            a = self.out(node, shape, self.c(node, 1, "scale"), self.c(node, 2, "zero point"))
            a.name = src
            self.io.append(IOTensor(src, "input", a.dtype, shape, a.layout + str(self.em.L), a.addr, a.scale,
                                    a.zero_point))
        elif self.producer.get(src) is None or self.producer[src].op_type not in ("ReduceMean", "DequantizeLinear",
                                                                                   "Resize"):
            p = self.producer.get(src)
            what = f"the output of node {p.name} ({p.op_type})" if p is not None else repr(src)
            raise UserError(f"node {node.name} (QuantizeLinear) quantizes {what}, which onnxruntime computes in "
                            "float (no integer kernel for it after QDQ fusion); the target has no float unit")

    def dequantize(self, node) -> None:
        y = node.output[0]
        if y in self.graph_outputs:
            a = self.act(node, 0)
            self.io.append(IOTensor(y, "output", a.dtype, a.shape, a.layout + str(self.em.L), a.addr, a.scale,
                                    a.zero_point))
            return
        users = self.consumers.get(y, [])
        if users and all(u.op_type == "QuantizeLinear" for u in users):  # a requantization: one LUT each
            x = self.act(node, 0)
            x = Act(x.name, x.shape, x.addr, float(self.c(node, 1, "scale")), int(self.c(node, 2, "zero point")),
                    x.dtype)
            for q in users:
                out = self.out(q, x.shape, self.c(q, 1, "scale"), self.c(q, 2, "zero point"))
                self._layer(q)
                vector.lower_lut(self.em, self.em.node, x, out, vector.lut_table(x, out, lambda v: v))
            return
        if not all(u.op_type in ("ReduceMean", "Resize") for u in users):  # lowered by their handlers
            raise UserError(f"node {users[0].name} ({users[0].op_type}): onnxruntime runs this op in float "
                            "(DequantizeLinear -> op -> QuantizeLinear); the target has no float unit")

    def qconv(self, node) -> None:
        at = self.attrs(node)
        x = self.act(node, 0)
        w = self.c(node, 3, "weight")
        if np.any(self.c(node, 5, "weight zero point") != 0):
            raise UserError(f"node {node.name} (QLinearConv): asymmetric weights (w_zp != 0) are not supported")
        if len(w.shape) != 4:
            raise UserError(f"node {node.name} (QLinearConv): only 2-D convolution is lowered")
        pads = tuple(at.get("pads", [0, 0, 0, 0]))
        auto = at.get("auto_pad", b"NOTSET")
        stride, dilation = tuple(at.get("strides", [1, 1])), tuple(at.get("dilations", [1, 1]))
        if (same := auto_pads(auto.decode() if isinstance(auto, bytes) else auto, x.shape[2:], w.shape[2:],
                              stride, dilation)) is not None:
            (top, bottom), (left, right) = same
            pads = (top, left, bottom, right)
        spec = conv.ConvSpec(w=w, bias=self.consts[node.input[8]] if len(node.input) > 8 and node.input[8]
                             else np.zeros(w.shape[0], np.int32), w_scale=self.c(node, 4, "weight scale"),
                             stride=stride, pads=(pads[0], pads[1], pads[2], pads[3]),
                             dilation=dilation, group=int(at.get("group", 1)),
                             y_scale=float(self.c(node, 6, "y scale")), y_zp=int(self.c(node, 7, "y zero point")))
        ho, wo = conv._out_dims(x, spec)
        y = self.out(node, (1, w.shape[0], ho, wo), spec.y_scale, self.c(node, 7, "y zero point"))
        self._layer(node)
        if spec.group == 1:
            conv.lower_conv(self.em, self.em.node, x, spec, y)
        elif spec.group == x.shape[1] == w.shape[0] and w.shape[1] == 1:
            conv.lower_depthwise(self.em, self.em.node, x, spec, y)
        else:
            raise UserError(f"node {node.name} (QLinearConv): group {spec.group} with {x.shape[1]} -> {w.shape[0]} "
                            "channels; only dense (group 1) and depthwise convolution are lowered")

    def _fc(self, node, x: Act, w_kn, bias, w_scale, y_scale, y_zp) -> None:
        """lower_fc per chunk of at most 256 rows (the GEMM walk); rows of the 2-D layout are contiguous."""
        if len(x.shape) != 2:
            raise UserError(f"node {node.name} ({node.op_type}): input of shape {list(x.shape)}, expected 2-D")
        y = self.out(node, (x.shape[0], w_kn.shape[1]), y_scale, y_zp)
        self._layer(node)
        xrow, yrow, tiles = act_bytes((1, x.shape[1]), self.em.L), act_bytes((1, y.shape[1]), self.em.L), 0
        for r0 in range(0, x.shape[0], 256):
            r = min(256, x.shape[0] - r0)
            xs = Act(x.name, (r, x.shape[1]), x.addr + r0 * xrow, x.scale, x.zero_point, x.dtype)
            ys = Act(y.name, (r, y.shape[1]), y.addr + r0 * yrow, y.scale, y.zero_point, y.dtype)
            self.em.tile = f"rows {r0}-{r0 + r - 1}"
            conv.lower_fc(self.em, self.em.node, xs, w_kn, bias, np.asarray(w_scale, np.float32).reshape(-1),
                          float(np.asarray(y_scale)), int(np.asarray(y_zp)), ys)
            tiles += self.em.layers[-1]["tiles"]
        self.em.layers[-1]["tiles"] = tiles

    def qgemm(self, node) -> None:
        at = self.attrs(node)
        if at.get("transA", 0) or float(at.get("alpha", 1.0)) != 1.0 or len(node.input) < 8:
            raise UserError(f"node {node.name} (QGemm): transA, alpha != 1 or a float output is not lowered")
        if np.any(self.c(node, 5, "B zero point") != 0):
            raise UserError(f"node {node.name} (QGemm): asymmetric weights are not supported")
        b = self.c(node, 3, "B")
        b = b.T if at.get("transB", 0) else b
        bias = self.consts[node.input[6]] if node.input[6] else np.zeros(b.shape[1], np.int32)
        self._fc(node, self.act(node, 0), b, bias, self.c(node, 4, "B scale"), self.c(node, 7, "y scale"),
                 self.c(node, 8, "y zero point"))

    def qmatmul(self, node) -> None:
        if node.input[0] in self.consts:  # constant @ activation (a graph adjacency, a mesh up-sampling)
            x = self.act(node, 3)
            a = self.c(node, 0, "A")
            if len(x.shape) != 2 or a.ndim != 2:
                raise UserError(f"node {node.name} (QLinearMatMul): constant {list(a.shape)} @ activation "
                                f"{list(x.shape)}; only 2-D operands are lowered")
            x = Act(x.name, x.shape, x.addr, float(self.c(node, 4, "B scale")), int(self.c(node, 5, "B zero point")),
                    x.dtype)
            y = self.out(node, (a.shape[0], x.shape[1]), self.c(node, 6, "y scale"), self.c(node, 7, "y zero point"))
            self._layer(node)
            const_matmul.lower_const_matmul(self.em, self.em.node, a, int(self.c(node, 2, "A zero point")),
                                            float(self.c(node, 1, "A scale")), x, y)
            return
        if np.any(self.c(node, 5, "B zero point") != 0):
            raise UserError(f"node {node.name} (QLinearMatMul): asymmetric weights are not supported")
        b = self.c(node, 3, "B")
        self._fc(node, self.act(node, 0), b, np.zeros(b.shape[1], np.int32), self.c(node, 4, "B scale"),
                 self.c(node, 6, "y scale"), self.c(node, 7, "y zero point"))

    def qadd(self, node) -> None:
        a, b = self.act(node, 0), self.act(node, 3)
        y = self.out(node, a.shape, self.c(node, 6, "C scale"), self.c(node, 7, "C zero point"))
        self._layer(node)
        vector.lower_add(self.em, self.em.node, a, b, y)

    def leaky_relu(self, node) -> None:
        """QLinearLeakyRelu: onnxruntime looks it up in a 256-entry table; the same table, on VEC LUT."""
        x = self.act(node, 0)
        alpha = np.float32(self.attrs(node).get("alpha", 0.01))
        y = self.out(node, x.shape, self.c(node, 3, "Y scale"), self.c(node, 4, "Y zero point"))
        self._layer(node)
        table = vector.lut_table(x, y, lambda v: np.where(v >= 0, v, (alpha * v).astype(np.float32)))
        vector.lower_lut(self.em, self.em.node, x, y, table)

    def sigmoid(self, node) -> None:
        """QLinearSigmoid: onnxruntime builds a 256-entry table with MLAS's vectorized logistic and looks
        every element up in it (``QLinearLookupBase``); the table is read from that kernel itself by
        running the node on the 256 codes, then lowered as VEC LUT (exact by construction)."""
        x = self.act(node, 0)
        y = self.out(node, x.shape, self.c(node, 3, "Y scale"), self.c(node, 4, "Y zero point"))
        self._layer(node)
        vector.lower_lut(self.em, self.em.node, x, y, ort_ref.kernel_table(self.model, node, self.consts))

    def resize(self, node) -> None:
        at = self.attrs(node)
        if at.get("mode", b"nearest") in (b"linear", "linear"):
            self._resize_linear(node, at)
            return
        x = self.act(node, 0)
        conv_ = (at.get("mode", b"nearest"), at.get("coordinate_transformation_mode", b"half_pixel"),
                 at.get("nearest_mode", b"round_prefer_floor"))
        conv_ = tuple(v.decode() if isinstance(v, bytes) else v for v in conv_)
        if len(node.input) > 2 and node.input[2]:
            scales = [float(v) for v in self.c(node, 2, "scales")]
        else:
            scales = [o / i for o, i in zip(self.c(node, 3, "sizes").tolist(), x.shape, strict=True)]
        if conv_ != ("nearest", "asymmetric", "floor") or len(x.shape) != 4 or len(scales) != 4 \
                or scales[:2] != [1.0, 1.0]:
            raise UserError(f"node {node.name} (Resize): only nearest / asymmetric / floor on H and W is lowered "
                            f"(got {conv_}, scales {scales})")
        if len(node.input) > 3 and node.input[3]:
            ho, wo = (int(v) for v in self.c(node, 3, "sizes")[2:])
        else:
            ho, wo = (int(np.floor(x.shape[2 + a] * np.float32(scales[2 + a]))) for a in range(2))
        y = self.out(node, (1, x.shape[1], ho, wo), x.scale, np.asarray(x.zero_point, np.uint8))
        self._layer(node)
        f = scales[2]
        if f == scales[3] == int(f) and f >= 2 and (ho, wo) == (x.shape[2] * f, x.shape[3] * f):
            layout_ops.lower_resize_nearest(self.em, self.em.node, x, y, int(f))
        else:
            layout_ops.lower_resize_gather(self.em, self.em.node, x, y, (scales[2], scales[3]))

    def _resize_linear(self, node, at: dict) -> None:
        """DequantizeLinear -> Resize(linear) -> QuantizeLinear, which onnxruntime runs in float."""
        dq = self.producer.get(node.input[0])
        users = self.consumers.get(node.output[0], [])
        if dq is None or dq.op_type != "DequantizeLinear" or len(users) != 1 or users[0].op_type != "QuantizeLinear":
            raise UserError(f"node {node.name} (Resize linear): only DequantizeLinear -> Resize -> QuantizeLinear "
                            "(onnxruntime's float path) is lowered")
        src = self.act(dq, 0)
        x = Act(src.name, src.shape, src.addr, float(self.c(dq, 1, "scale")), int(self.c(dq, 2, "zero point")),
                src.dtype)
        mode = at.get("coordinate_transformation_mode", b"half_pixel")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        if len(x.shape) != 4 or at.get("antialias", 0) or at.get("exclude_outside", 0):
            raise UserError(f"node {node.name} (Resize linear): only 4-D inputs without antialias are lowered")
        if len(node.input) > 3 and node.input[3]:
            sizes = [int(v) for v in self.c(node, 3, "sizes")]
            scales = [float(np.float32(o) / np.float32(i)) for o, i in zip(sizes, x.shape, strict=True)]
        else:
            scales = [float(v) for v in self.c(node, 2, "scales")]
            sizes = [int(np.float32(sc) * d) for sc, d in zip(scales, x.shape, strict=True)]
        if sizes[:2] != list(x.shape[:2]):
            raise UserError(f"node {node.name} (Resize linear): resizing N or C is not lowered")
        q = users[0]
        y = self.out(q, (1, x.shape[1], sizes[2], sizes[3]), self.c(q, 1, "scale"), self.c(q, 2, "zero point"))
        self._layer(node)
        resize_linear.lower_resize_bilinear(self.em, self.em.node, x, y, (scales[2], scales[3]), mode)

    def concat(self, node) -> None:
        if int(self.attrs(node).get("axis", 1)) != 1:
            raise UserError(f"node {node.name} (Concat): only the channel axis (1) is lowered")
        parts = []
        for k in range(2, len(node.input), 3):
            a = self.act(node, k)
            parts.append(Act(a.name, a.shape, a.addr, float(self.c(node, k + 1, "scale")),
                             int(self.c(node, k + 2, "zero point")), a.dtype))
        if len({p.shape[2:] for p in parts}) != 1 or any(len(p.shape) != 4 for p in parts):
            raise UserError(f"node {node.name} (Concat): inputs of different spatial shapes")
        c = sum(p.shape[1] for p in parts)
        y = self.out(node, (1, c, *parts[0].shape[2:]), self.c(node, 0, "Y scale"), self.c(node, 1, "Y zero point"))
        self._layer(node)
        layout_ops.lower_concat(self.em, self.em.node, parts, y)

    def _pool_attrs(self, node, x: Act) -> tuple:
        at = self.attrs(node)
        if len(x.shape) != 4 or any(d != 1 for d in at.get("dilations", [1, 1])) \
                or at.get("channels_last", 0) or at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise UserError(f"node {node.name} ({node.op_type}): dilation, auto_pad or channels_last is not lowered")
        k = tuple(at["kernel_shape"])
        s = tuple(at.get("strides", [1, 1]))
        p = tuple(at.get("pads", [0, 0, 0, 0]))
        if at.get("ceil_mode", 0):  # the partial last window = extra bottom/right padding (0 in max; in average
            extra = []              # the divisor is the kernel size or the in-image count, as ORT's)
            for a in range(2):
                n, lo, hi = x.shape[2 + a], p[a], p[a + 2]
                out = -(-(n + lo + hi - k[a]) // s[a]) + 1
                if (out - 1) * s[a] >= n + lo:  # ONNX / ORT: a last window starting in the end padding is dropped
                    out -= 1
                extra.append(max(0, (out - 1) * s[a] + k[a] - (n + lo + hi)))
            p = (p[0], p[1], p[2] + extra[0], p[3] + extra[1])
        return k, s, (p[0], p[1], p[2], p[3]), at

    def maxpool(self, node) -> None:
        x = self.act(node, 0)
        k, s, p, _ = self._pool_attrs(node, x)
        ho, wo = vector.pool_out(x.shape[2], x.shape[3], k, s, p)
        y = self.out(node, (1, x.shape[1], ho, wo), x.scale, np.asarray(x.zero_point, np.uint8))
        self._layer(node)
        vector.lower_pool(self.em, self.em.node, x, y, k, s, p, "max")

    def avgpool(self, node) -> None:
        x = self.act(node, 0)
        k, s, p, at = self._pool_attrs(node, x)
        if at.get("count_include_pad", 0) and p != tuple(at.get("pads", [0, 0, 0, 0])):
            warnings.warn(f"node {node.name} ({node.op_type}): ceil_mode with "
                          "count_include_pad, and a last window overhangs the edge: onnxruntime's int8 kernel, "
                          "which the binary follows bit for bit, divides those windows by the kernel size, where "
                          "the float model (torch, onnx.reference) divides by the count inside the padded image; "
                          "count_include_pad=False avoids it", UserWarning, stacklevel=2)
        ho, wo = vector.pool_out(x.shape[2], x.shape[3], k, s, p)
        y = self.out(node, (1, x.shape[1], ho, wo), self.c(node, 3, "y scale"), self.c(node, 4, "y zero point"))
        self._layer(node)
        if k == tuple(x.shape[2:]) and not any(p):  # ORT's fallback_to_global: the integer MLAS kernel
            vector.lower_global_avg(self.em, self.em.node, x, y)
        else:
            vector.lower_pool(self.em, self.em.node, x, y, k, s, p, "avg",
                              count_pad=bool(at.get("count_include_pad", 0)) or not any(p))

    def gap(self, node) -> None:
        x = self.act(node, 0)
        y = self.out(node, (1, x.shape[1], 1, 1), self.c(node, 3, "y scale"), self.c(node, 4, "y zero point"))
        self._layer(node)
        vector.lower_global_avg(self.em, self.em.node, x, y)

    def reduce_mean(self, node) -> None:
        dq = self.producer.get(node.input[0])
        users = self.consumers.get(node.output[0], [])
        if dq is None or dq.op_type != "DequantizeLinear" or len(users) != 1 or users[0].op_type != "QuantizeLinear":
            raise UserError(f"node {node.name} (ReduceMean): only DequantizeLinear -> ReduceMean -> QuantizeLinear "
                            "is lowered")
        x = self.act(dq, 0)
        at = self.attrs(node)
        axes = at.get("axes")
        if axes is None and len(node.input) > 1:
            axes = self.c(node, 1, "axes").tolist()
        if len(x.shape) != 4 or sorted(int(a) % 4 for a in (axes or [])) != [2, 3] or not at.get("keepdims", 1):
            raise UserError(f"node {node.name} (ReduceMean): only a mean over H and W with keepdims is lowered")
        q = users[0]
        y = self.out(q, (1, x.shape[1], 1, 1), self.c(q, 1, "scale"), self.c(q, 2, "zero point"))
        self._layer(node)
        vector.lower_global_avg(self.em, self.em.node, x, y)

    def reshape(self, node) -> None:
        """Reshape/Flatten by addressing: allowed when the blocked DRAM bytes are unchanged."""
        x = self.act(node, 0)
        at = self.attrs(node)
        n = int(np.prod(x.shape))
        if node.op_type == "Reshape":
            target = [int(d) for d in self.c(node, 1, "shape")]
            target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
            shape = tuple(np.empty(n, np.uint8).reshape(target).shape)
        elif node.op_type == "Flatten":
            ax = int(at.get("axis", 1))
            shape = (int(np.prod(x.shape[:ax])), int(np.prod(x.shape[ax:])))
        else:
            shape = tuple(d for d in x.shape if d != 1) or (1,)
            shape = (1,) * (4 - len(shape)) + shape if node.op_type == "Unsqueeze" else shape
        L = self.em.L
        same = (len(shape) in (2, 4) and act_bytes(shape, L) == act_bytes(x.shape, L)
                and (np.prod(x.shape[2:]) == 1 if len(x.shape) == 4 else True)
                and (np.prod(shape[2:]) == 1 if len(shape) == 4 else True) and shape[0] == x.shape[0] == 1)
        flat = all(len(s) == 2 and s[1] % L == 0 for s in (x.shape, shape))  # (M, K/L, L) = row-major order
        if not (same or flat):
            raise UserError(f"node {node.name} ({node.op_type}): {list(x.shape)} -> {list(shape)} changes the "
                            "channel-blocked DRAM layout; lowered by addressing: (1, C, 1, 1) <-> (1, C), and 2-D "
                            f"(M, K) <-> (M', K') with K and K' multiples of {L}")
        self.acts[node.output[0]] = Act(node.output[0], shape, x.addr, x.scale, x.zero_point, x.dtype)
