"""Die area of a config: MACs, every storage level times its instances, networks, fixed overhead.

All per-instance figures are already resolved on the Architecture (technology model or the YAML's
overrides), so this only multiplies and adds; keys are stable for reports and the JSON output.
"""

from __future__ import annotations

from costmodel.arch import Architecture


def area_breakdown(arch: Architecture) -> dict[str, float]:
    """mm^2 per component: ``mac``, one key per level (all instances), ``network``, ``vector_unit``,
    ``fixed_overhead``, and ``total`` (their sum)."""
    parts: dict[str, float] = {"mac": arch.mac.area_mm2 * arch.num_pes}
    for lv in arch.levels:
        parts[lv.name] = lv.area_mm2 * lv.instances
    parts["network"] = sum(lv.network_area_mm2 for lv in arch.levels)
    parts["vector_unit"] = arch.vector_unit.area_mm2 if arch.vector_unit else 0.0
    parts["fixed_overhead"] = arch.fixed_overhead_mm2
    parts["total"] = sum(parts.values())
    return parts


def total_area_mm2(arch: Architecture) -> float:
    return area_breakdown(arch)["total"]
