"""Cost of the layers that do not run on the MAC array: vector, quantize and layout layers, and the
fused post-ops (ReLU, ...) of MAC layers, so that a network's totals are complete.

The model (every figure here is an *estimate* built from the config's own resolved costs):

* **Compute**: ``ceil(vector_ops / lanes)`` cycles on the config's ``vector_unit``. Energy per
  element op is ``vector_unit.op_pj``, which ``costmodel/arch_resolve.py`` resolves from the
  technology model as one MAC of the unit's datatype (an upper bound for add/max, an estimate for
  exp/div; see docs/technology.md for the MAC figures' sources) unless the YAML overrides it.
  A config without a vector unit runs element ops on the MAC array: ``lanes = num_pes`` and
  ``op_pj = mac.energy_pj`` (estimate: one MAC per element op).
* **Data movement**: the layer's activation inputs are read from DRAM once and its output written
  to DRAM once (the same convention as MAC layers, whose mappings start and end in DRAM), passing
  through the vector unit's level (``vector_unit.level``, default the outermost on-chip level):
  there each input word is filled once and read once, each output word written once and read once
  (line buffers make window re-reads of pooling free: an estimate). Words are
  ``ceil(elements * datatype_bits / level.word_bits)``; energies are the level's resolved
  ``read_pj`` / ``write_pj`` per word.
* **Latency**: compute and transfers overlap (double-buffered streaming), so the layer takes the
  largest of the compute cycles and each port's ``ceil(words / bandwidth)`` (``None`` = unlimited).
* **Leakage**: the whole chip leaks for the layer's duration (every level's instances, every MAC,
  and the vector unit), as ``costmodel/energy.py`` charges MAC layers.
* **Layout layers**: pure views (Reshape, Flatten, Squeeze, Unsqueeze, Identity) cost nothing; other
  layout ops (Transpose, Concat, Split, ...) cost a copy (the same traffic with no element ops).
  **Fused post-ops** of a MAC layer add ``vector_ops * op_pj`` energy and no latency (applied to the
  output stream as it drains). Host layers are not costed (zero, flagged by the caller).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from costmodel.energy import PJ_PER_MW_S

if TYPE_CHECKING:
    from costmodel.arch import Architecture, Level

DATATYPE_BITS = {"int8": 8, "int16": 16, "fp16": 16, "bf16": 16, "fp32": 32}
VIEW_OPS = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"})


@dataclass(frozen=True)
class VectorSpec:
    """What element-wise work runs on: the config's vector unit, or (estimate) the MAC array."""

    lanes: int
    op_pj: float
    bits: int
    level: int  # index of the on-chip level it reads and writes
    leak_mw: float  # of the vector unit alone
    estimated_from_mac_array: bool

    @classmethod
    def of(cls, arch: Architecture) -> VectorSpec:
        vu = arch.vector_unit
        if vu is not None:
            return cls(vu.lanes, float(vu.op_pj), DATATYPE_BITS[vu.datatype], arch.level_index(vu.level),
                       float(vu.leak_mw), False)
        return cls(arch.num_pes, float(arch.mac.energy_pj), DATATYPE_BITS.get(arch.mac.datatype, 8),
                   1 if len(arch.levels) > 1 else 0, 0.0, True)


def _words(elements: int, bits: int, level: Level) -> int:
    return math.ceil(elements * bits / level.word_bits)


def _cycles(words: int, bw: float | None) -> int:
    return 0 if not bw or words == 0 else math.ceil(words / bw)


def chip_leak_mw(arch: Architecture, spec: VectorSpec) -> float:
    """Leakage of the whole chip (levels' instances, MACs, vector unit)."""
    return (sum(lv.leak_mw * lv.instances for lv in arch.levels) + arch.mac.leak_mw * arch.num_pes
            + spec.leak_mw)


def vector_cost(arch: Architecture, vector_ops: int, in_elements: int, out_elements: int,
                *, area_mm2: float | None = None) -> dict[str, Any]:
    """Metrics of one element-wise layer, with the keys of ``Evaluation.to_dict`` (tensors ``I`` =
    all activation inputs, ``O`` = the output)."""
    spec = VectorSpec.of(arch)
    names = [lv.name for lv in arch.levels]
    dram, buf = arch.levels[0], arch.levels[spec.level]
    d_in, d_out = _words(in_elements, spec.bits, dram), _words(out_elements, spec.bits, dram)
    accesses: dict[str, dict[str, dict[str, int]]] = {
        n: {t: {"reads": 0, "writes": 0, "fills": 0, "updates": 0} for t in ("I", "O")} for n in names}
    accesses[dram.name]["I"]["reads"] = d_in
    accesses[dram.name]["O"].update(writes=d_out, updates=d_out)
    cycles = [math.ceil(vector_ops / spec.lanes), _cycles(d_in, dram.read_bw), _cycles(d_out, dram.write_bw)]
    if spec.level != 0:
        b_in, b_out = _words(in_elements, spec.bits, buf), _words(out_elements, spec.bits, buf)
        accesses[buf.name]["I"].update(reads=b_in, writes=b_in, fills=b_in)
        accesses[buf.name]["O"].update(reads=b_out, writes=b_out, updates=b_out)
        cycles += [_cycles(b_in + b_out, buf.read_bw), _cycles(b_in + b_out, buf.write_bw)]
    latency_cycles = max(cycles)
    seconds = latency_cycles / float(arch.clock_hz)
    breakdown: dict[str, Any] = {}
    for lv in arch.levels:
        breakdown[lv.name] = {t: {"read": a["reads"] * lv.read_pj, "fill": a["fills"] * lv.write_pj,
                                  "update": a["updates"] * lv.write_pj}
                              for t, a in accesses[lv.name].items()}
    breakdown["mac"] = 0.0
    breakdown["vector_unit"] = vector_ops * spec.op_pj
    breakdown["network"] = {n: 0.0 for n in names}
    breakdown["leakage"] = {"chip": chip_leak_mw(arch, spec) * seconds * PJ_PER_MW_S}
    energy = (sum(e for n in names for per_t in breakdown[n].values() for e in per_t.values())
              + breakdown["vector_unit"] + breakdown["leakage"]["chip"])
    if area_mm2 is None:
        from costmodel.area import total_area_mm2

        area_mm2 = total_area_mm2(arch)
    return {
        "energy_pj": energy, "latency_cycles": latency_cycles, "latency_s": seconds, "area_mm2": area_mm2,
        "power_mw": energy / PJ_PER_MW_S / seconds if seconds > 0 else 0.0, "macs": 0, "utilization": 0.0,
        "edp": energy * seconds, "accesses": accesses, "energy_breakdown_pj": breakdown,
        "compute_cycles": cycles[0], "vector_ops": int(vector_ops),
        "vector_lanes": spec.lanes, "vector_on_mac_array": spec.estimated_from_mac_array,
    }


def layer_cost(arch: Architecture, layer: Any, *, area_mm2: float | None = None) -> dict[str, Any] | None:
    """Cost of a non-MAC workload layer (``None`` for host layers and pure views: not costed/free)."""
    if layer.kind == "host" or (layer.kind == "layout" and layer.op_type in VIEW_OPS):
        return None
    ops = 0 if layer.kind == "layout" else int(layer.vector_ops)
    n_in = sum(math.prod(s) for s in layer.input_shapes)
    n_out = sum(math.prod(s) for s in layer.output_shapes)
    return vector_cost(arch, ops, n_in, n_out, area_mm2=area_mm2)


def post_ops_pj(arch: Architecture, vector_ops: int) -> float:
    """Energy of a MAC layer's fused element ops (no latency: they run on the draining output)."""
    return vector_ops * VectorSpec.of(arch).op_pj
