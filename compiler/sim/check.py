"""Compare simulated outputs with the ONNX model they were compiled from (``dse simulate --check``).

The model runs on onnxruntime (CPU) and on ``onnx.reference`` with the same inputs. Inputs and
outputs are matched by name with the binary's I/O table; where the model's tensor is float and the
binary's is quantized, the model side is converted with the I/O table's scale and zero point
(inputs dequantized, outputs quantized back as QuantizeLinear does -- exact for a value that came
out of DequantizeLinear). Differences are reported in LSBs of the binary's output.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from compiler.isa.program import IOTensor, Program
from compiler.quantize import WEIGHT_MAX
from compiler.sim import quant
from costmodel.errors import UserError

_ORT_TYPES = {"tensor(float)": np.float32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
              "tensor(int32)": np.int32, "tensor(int16)": np.int16}


@dataclass(frozen=True)
class OutputCheck:
    name: str
    elements: int
    max_lsb_ort: int
    mismatches_ort: int
    max_lsb_reference: int | None  # None: onnx.reference could not run the model
    reference_note: str = ""
    ort_note: str = ""  # why onnxruntime may not be the reference here (saturation_note, float_model_note)

    def to_dict(self) -> dict:
        return asdict(self)


def ort_matmul_integer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """onnxruntime's MatMulInteger of uint8 ``a`` by the int8 constant ``b`` (its uint8 x int8 GEMM)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["a", "b"], ["y"])], "probe",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, list(a.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"a": a})[0]


@functools.cache
def ort_pairs_saturate() -> bool:
    """Whether onnxruntime's uint8 x int8 kernels on this CPU add products in saturating int16 pairs
    (x86 without VNNI: VPMADDUBSW; see compiler.quantize). Probed, not guessed from CPU flags:
    MatMulInteger of 255s by 127s with K = 2 is 64,770, or 32,767 where pairs saturate."""
    y = ort_matmul_integer(np.full((1, 2), 255, np.uint8), np.full((2, 1), 127, np.int8))
    return int(y[0, 0]) != 255 * 127 * 2


# input positions of zero points, per quantized op (they are int8 initializers too, not weights)
_ZERO_POINTS = {"QuantizeLinear": (2,), "DequantizeLinear": (2,), "QLinearConv": (2, 5, 7),
                "QLinearMatMul": (2, 5, 7), "QLinearAdd": (2, 5, 7), "QGemm": (2, 5, 8)}


def saturation_note(model) -> str:
    """A warning when onnxruntime cannot be the exact reference for ``model`` (an onnx ModelProto)
    here: its pairs saturate on this CPU and some int8 weight lies beyond the 7 bits
    compiler.quantize keeps them in. Empty otherwise."""
    from onnx import TensorProto, numpy_helper

    zps = {n.input[i] for n in model.graph.node for i in _ZERO_POINTS.get(n.op_type, ()) if i < len(n.input)}
    big = max((int(np.abs(numpy_helper.to_array(t).astype(np.int64)).max(initial=0))
               for t in model.graph.initializer if t.data_type == TensorProto.INT8 and t.name not in zps), default=0)
    if big <= WEIGHT_MAX or not ort_pairs_saturate():
        return ""
    return (f"int8 weights up to |{big}| and onnxruntime on this CPU adds uint8 x int8 products in saturating "
            "int16 pairs (x86 without VNNI): where it differs, it may be onnxruntime that is off; "
            "`dse compile` quantizes weights to 7 bits to avoid this")


def float_model_note(model) -> str:
    """A note when ``model`` quantizes nothing: a float model (say the .onnx given to `dse compile`
    instead of the .q.onnx it wrote) differs from the int8 binary by its quantization, which is
    not a fault of the binary. Empty otherwise."""
    if any(n.op_type in ("QuantizeLinear", "DynamicQuantizeLinear") or n.op_type.startswith("QLinear")
           for n in model.graph.node):
        return ""
    return ("this model quantizes nothing (a float model): the binary computes its int8 version, which "
            "`dse compile` wrote beside it as <stem>.q.onnx; check against that")


def _feed(value: np.ndarray, io: IOTensor | None, want: type) -> np.ndarray:
    value = np.asarray(value)
    if io is None or value.dtype == want:
        return value.astype(want)
    if np.dtype(want).kind == "f" and value.dtype.kind in "iu":
        return ((value.astype(np.float32) - np.float32(io.zero_point)) * np.float32(io.scale)).astype(np.float32)
    if np.dtype(want).kind in "iu" and value.dtype.kind == "f":
        return quant.requantize(value, io.scale, io.zero_point, want, divide=True)
    return value.astype(want)


def _as_binary(ref: np.ndarray, io: IOTensor) -> np.ndarray:
    ref = np.asarray(ref)
    if ref.dtype.kind == "f" and io.dtype in ("int8", "uint8"):
        return quant.requantize(ref, io.scale, io.zero_point, np.dtype(io.dtype), divide=True)
    return ref


def _reference_model(model):
    """The model as onnx.reference can run it. Its QuantizeLinear / DequantizeLinear exist for opset
    19 and later only ("No implementation for operator 'DequantizeLinear' ... version 18, found 19,
    21, ..."), and ONNX files of opset 17-18 are common (compiler.quantize keeps the source model's
    opset), so an older model is converted to opset 21 first (onnx.version_converter: the QDQ ops
    keep their meaning; per-axis and per-tensor scales are unchanged). A model the converter cannot take
    fails here, and check_outputs reports that instead of a reference figure."""
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 21)
    if opset >= 19:
        return model
    from onnx import version_converter

    return version_converter.convert_version(model, 21)


def check_outputs(program: Program, outputs: dict[str, np.ndarray], inputs: dict[str, np.ndarray],
                  model_path: str | Path) -> list[OutputCheck]:
    """Per binary output: max |simulated - reference| in LSBs, against onnxruntime and onnx.reference."""
    import onnx
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    try:
        model = onnx.load(str(model_path))
        options = ort.SessionOptions()
        options.log_severity_level = 4  # (fatal only: a failed run is reported below, in one line)
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - any load failure is the user's file
        raise UserError(f"check model {model_path}: cannot load the ONNX model ({str(exc).splitlines()[0]})") from None
    io_by_name = {io.name: io for io in program.io}
    feeds = {}
    for meta in session.get_inputs():
        if meta.name not in inputs:
            raise UserError(f"check model {model_path}: the model's input {meta.name!r} is not an input of the binary "
                            f"({sorted(inputs)})")
        feeds[meta.name] = _feed(inputs[meta.name], io_by_name.get(meta.name), _ORT_TYPES.get(meta.type, np.float32))
        got = np.shape(feeds[meta.name])
        if len(got) != len(meta.shape) or any(isinstance(d, int) and d != g for d, g in zip(meta.shape, got)):
            raise UserError(f"check model {model_path}: the model's input {meta.name!r} has shape {list(meta.shape)}, "
                            f"the binary's {list(got)}: not the model this binary was compiled from (its .q.onnx)")
    names = [o.name for o in session.get_outputs()]
    missing = sorted(set(outputs) - set(names))
    if missing:
        raise UserError(f"check model {model_path}: binary output(s) {missing} are not outputs of the model ({names})")
    try:
        ort_out = dict(zip(names, session.run(None, feeds), strict=True))
    except Exception as exc:  # noqa: BLE001 - onnxruntime refuses to run the model on these inputs
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"check model {model_path}: onnxruntime cannot run it on these inputs ({why})") from None
    try:
        ref_out = dict(zip(names, ReferenceEvaluator(_reference_model(model)).run(None, feeds), strict=True))
        note = ""
    except Exception as exc:  # noqa: BLE001 - the reference lacks some ops; report, do not fail
        ref_out, note = {}, f"onnx.reference failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    checks, ort_note = [], saturation_note(model) or float_model_note(model)
    for name, sim in outputs.items():
        io = io_by_name[name]
        if tuple(np.shape(ort_out[name])) != tuple(sim.shape):
            raise UserError(f"check model {model_path}: output {name!r} has shape {list(np.shape(ort_out[name]))} in "
                            f"the model but {list(sim.shape)} in the binary")
        sim64 = sim.astype(np.int64) if sim.dtype.kind in "iu" else sim.astype(np.float64)
        d_ort = np.abs(sim64 - _as_binary(ort_out[name], io).astype(sim64.dtype))
        ref, ref_note = ref_out.get(name), note
        # a reference output of another shape is onnx.reference's own fault (its uint8 MaxPool with
        # ceil_mode, for one): named, not subtracted
        if ref is not None and tuple(np.shape(ref)) != tuple(sim.shape):
            ref, ref_note = None, f"onnx.reference gave shape {list(np.shape(ref))}, onnxruntime and the binary {list(sim.shape)}"
        d_ref = None if ref is None else np.abs(sim64 - _as_binary(ref, io).astype(sim64.dtype))
        checks.append(OutputCheck(name, int(sim.size), int(d_ort.max(initial=0)), int((d_ort > 0).sum()),
                                  None if d_ref is None else int(d_ref.max(initial=0)), ref_note, ort_note))
    return checks


def mapping_sidecar(binary: Path) -> Path:
    """Where ``dse compile`` keeps the per-layer mappings of ``binary``: ``<stem>.map.json`` next to it."""
    return Path(binary).with_name(Path(binary).stem + ".map.json")


def timing_table(layers: list[dict], nodes: list[dict]) -> list[dict]:
    """Per mapped layer: simulated cycles (first start to last end of its instructions) next to the
    analytical latency (costmodel.evaluate) of the mapping it was lowered with, and their ratio."""
    sim = {n["node"]: n for n in nodes}
    rows = []
    for lay in layers:
        if "analytical_cycles" not in lay or lay["node"] not in sim:
            continue
        s, a = int(sim[lay["node"]]["cycles"]), int(lay["analytical_cycles"])
        rows.append({"node": lay["node"], "op": lay["op"], "tiling": lay.get("tiling", ""),
                     "tiles": lay.get("tiles", 0), "sim_cycles": s,
                     "analytical_cycles": a, "ratio": s / a if a else float("inf")})
    return rows


def explain_gaps(program: Program, start: np.ndarray, end: np.ndarray, rows: list[dict], target) -> None:
    """Add to each timing row what its simulated span is made of -- array cycles (GEMM), vector-unit
    cycles (VEC), DMA cycles (LOAD), the prologue before its first EX instruction and the epilogue
    after its last -- and, for a ratio outside [0.9, 1.1], a ``why`` naming the time the cost model
    does not charge. The cost model (costmodel/latency.py) has the first tile's fill, the last tile's
    drain and the vector stage as throughput; what it lacks are per-instruction costs, exposed when
    two engines wait on each other:

    * ``vector-balanced``: VEC work >= 80% of the array's streaming cycles: the array and the vector
      unit wait on each other's ACC half every output block, and each wait exposes a GEMM's fill/drain
      (R + C - 2) and a VEC's pipeline cycles;
    * ``DMA-balanced``: LOAD cycles >= 80% of the EX work: LD and EX alternate on two buffer halves,
      exposing each LOAD's setup (``dma_setup_cycles``) and each GEMM's drain;
    * ``instruction overheads``: otherwise (small layers): DMA setups and GEMM fill/drains, counted."""
    from compiler.isa import Gemm, Load, Store, Vec
    from compiler.sim.timing import latency

    mode, drain = target.gemm_timing, target.rows + target.cols - 2
    by_node: dict[str, list[int]] = {}
    for i, entry in program.debug.items():
        by_node.setdefault(entry.node, []).append(i)
    for r in rows:
        idx = sorted(by_node.get(r["node"], []))
        insns = [(i, program.instructions[i]) for i in idx]
        gemms = [i for i, x in insns if isinstance(x, Gemm)]
        vecs = [i for i, x in insns if isinstance(x, Vec)]
        if not gemms and not vecs:
            continue
        cyc = {i: latency(x, target, mode) for i, x in insns}
        arr, vec = sum(cyc[i] for i in gemms), sum(cyc[i] for i in vecs)
        ld = sum(cyc[i] for i, x in insns if isinstance(x, Load))
        dmas = sum(isinstance(x, Load | Store) for _, x in insns)
        ran = [i for i in idx if start[i] >= 0]
        ex = gemms + vecs
        pro = int(min(start[i] for i in ex) - min(start[i] for i in ran))
        epi = int(max(end[i] for i in ran) - max(end[i] for i in ex))
        r.update(array_cycles=int(arr), vector_cycles=int(vec), load_cycles=int(ld), prologue_cycles=pro,
                 epilogue_cycles=epi)
        if 0.9 <= r["ratio"] <= 1.1:
            continue
        stream = arr - drain * len(gemms)
        gap = f"{r['sim_cycles'] - r['analytical_cycles']:,} cycles over {r['tiles']} tiles"
        if vec >= 0.8 * stream:
            r["reason"] = "vector-balanced"
            r["why"] = (f"vector-balanced: VEC {vec:,} vs GEMM streaming {stream:,} cycles ({len(vecs)} VECs, "
                        f"{len(gemms)} GEMMs); {gap}")
        elif ld >= 0.8 * max(stream, vec):
            r["reason"] = "DMA-balanced"
            r["why"] = f"DMA-balanced: LOAD {ld:,} vs GEMM streaming {stream:,} cycles ({dmas} DMA boxes); {gap}"
        else:
            r["reason"] = "instruction overheads"
            r["why"] = (f"instruction overheads: {dmas} DMA boxes x {target.dma_setup_cycles} setup, "
                        f"{len(gemms)} GEMMs x {drain} fill/drain, {len(vecs)} VECs; {gap}")
