"""From a type-checked HwConfig to a resolved Architecture: cross-field rules, then costs.

Split from :mod:`costmodel.arch` so the format (models and their descriptions) stays readable on
its own. Every rule names the field it is about, so the message points at the right line.
"""

from __future__ import annotations

import math

from costmodel.arch import (
    RESERVED_LEVEL_NAMES,
    Architecture,
    Constraint,
    HwConfig,
    Level,
    LevelConfig,
    MacSpec,
    Systolic,
    VectorUnit,
)
from costmodel.tech import (
    Cost,
    Technology,
    dram_cost,
    mac_cost,
    network_area_mm2,
    regfile_cost,
    sram_cost,
    vdd_range,
    wire_pj_per_bit_mm,
)
from costmodel.yamlio import LineMap, parse_frequency, parse_size

ROLES = ("I", "W", "O")


def _check_levels(cfg: HwConfig, lines: LineMap) -> list[int | None]:
    """Structural rules on the level list; returns each level's capacity in words."""
    seen: dict[str, int] = {}
    caps: list[int | None] = []
    for i, lv in enumerate(cfg.levels):
        at = ("levels", i)
        if lv.name in RESERVED_LEVEL_NAMES:
            raise lines.error(
                (*at, "name"),
                f"expected a level name other than {', '.join(RESERVED_LEVEL_NAMES)} (breakdown keys), got "
                f"'{lv.name}'",
            )
        if lv.name in seen:
            raise lines.error(
                (*at, "name"), f"duplicate level name '{lv.name}' (also levels[{seen[lv.name]}])"
            )
        seen[lv.name] = i
        if i == 0 and lv.kind != "dram":
            raise lines.error(
                (*at, "kind"), f"expected the outermost level (levels[0]) to be kind 'dram', got '{lv.kind}'"
            )
        if i > 0 and lv.kind == "dram":
            raise lines.error(
                (*at, "kind"),
                "expected 'sram' or 'regfile': DRAM must be the outermost level (levels[0]) and appear once",
            )
        if not lv.holds:
            raise lines.error((*at, "holds"), "expected at least one tensor role of I, W, O, got []")
        if len(set(lv.holds)) != len(lv.holds):
            raise lines.error((*at, "holds"), f"expected distinct roles, got {lv.holds}")
        if i == 0 and set(lv.holds) != set(ROLES):
            raise lines.error((*at, "holds"), f"expected DRAM to hold all of I, W, O, got {lv.holds}")
        if lv.double_buffered and lv.ideal_overlap:
            raise lines.error(
                (*at, "ideal_overlap"),
                "expected at most one of double_buffered and "
                "ideal_overlap (double buffering already overlaps transfers)",
            )
        caps.append(_capacity(lv, lines, at))
    return caps


def _capacity(lv: LevelConfig, lines: LineMap, at: tuple) -> int | None:
    if lv.capacity is None:
        if lv.kind != "dram":
            raise lines.error(
                (*at, "capacity"),
                f"required for a {lv.kind} level: expected a size like '64 KiB' or a word count",
            )
        return None
    try:
        return parse_size(lv.capacity, lv.word_bits)
    except (TypeError, ValueError) as exc:
        raise lines.error((*at, "capacity"), str(exc)) from None


def _level_cost(lv: LevelConfig, cap: int | None, tech: Technology) -> Cost:
    if lv.kind == "dram":
        return dram_cost(lv.word_bits, tech)
    assert cap is not None
    if lv.kind == "sram":
        return sram_cost(cap, lv.word_bits, lv.block_words, tech, lv.ports)
    return regfile_cost(cap, lv.word_bits, tech, lv.ports)


def _pick(override: float | None, default: float) -> float:
    return default if override is None else override


def _known_level(name: str | None, cfg: HwConfig, lines: LineMap, path: tuple) -> None:
    names = [lv.name for lv in cfg.levels]
    if name is not None and name not in names:
        raise lines.error(path, f"expected a level name ({', '.join(names)}), got '{name}'")


def resolve(cfg: HwConfig, lines: LineMap, source: str) -> Architecture:
    """Apply the cross-field rules and fill in every cost from the technology model."""
    caps = _check_levels(cfg, lines)
    try:
        clock_hz = parse_frequency(cfg.clock)
    except (TypeError, ValueError) as exc:
        raise lines.error(("clock",), str(exc)) from None
    t = cfg.technology
    if t.vdd is not None:  # (a rule across fields: a study may sweep the node and the supply together)
        lo, hi = vdd_range(t.node_nm)
        if not lo <= t.vdd <= hi:
            raise lines.error(("technology", "vdd"), f"expected a supply the energy model covers at "
                              f"{t.node_nm:g} nm, {lo:.2f}-{hi:.2f} V, got {t.vdd:g}")
    tech = Technology(t.node_nm, t.vdd, t.sram_cell, t.dram)
    fan = [lv.fanout.x * lv.fanout.y for lv in cfg.levels]
    num_pes = math.prod(fan)
    if cfg.mac.count is not None and cfg.mac.count != num_pes:
        product = " x ".join(
            f"{lv.fanout.x}x{lv.fanout.y}" for lv in cfg.levels if lv.fanout.x * lv.fanout.y > 1
        )
        raise lines.error(
            ("mac", "count"),
            f"expected the product of all fan-outs ({product or '1'} = {num_pes}), got {cfg.mac.count}",
        )
    instances = [math.prod(fan[:i]) for i in range(len(fan) + 1)]  # instances[L] = MACs
    mc = mac_cost(cfg.mac.datatype, tech)
    mac = MacSpec(
        datatype=cfg.mac.datatype,
        energy_pj=_pick(cfg.mac.energy_pj, mc.read_pj),
        area_mm2=_pick(cfg.mac.area_mm2, mc.area_mm2),
        leak_mw=_pick(cfg.mac.leak_mw, mc.leak_mw),
    )
    costs = [_level_cost(lv, cap, tech) for lv, cap in zip(cfg.levels, caps, strict=True)]
    areas = [_pick(lv.area_mm2, c.area_mm2) for lv, c in zip(cfg.levels, costs, strict=True)]
    wire = wire_pj_per_bit_mm(tech)
    levels = []
    for i, (lv, cap, c) in enumerate(zip(cfg.levels, caps, costs, strict=True)):
        children = instances[i + 1]
        # One child's footprint: every inner level instance under it plus its MACs.
        below = sum(areas[j] * instances[j] for j in range(i + 1, len(cfg.levels))) + mac.area_mm2 * num_pes
        pitch_mm = math.sqrt(below / children)
        levels.append(
            Level(
                name=lv.name,
                kind=lv.kind,
                holds=tuple(lv.holds),
                capacity_words=cap,
                word_bits=lv.word_bits,
                block_words=lv.block_words,
                ports=lv.ports,
                read_bw=lv.read_bw,
                write_bw=lv.write_bw,
                fanout_x=lv.fanout.x,
                fanout_y=lv.fanout.y,
                multicast=lv.multicast,
                spatial_reduction=lv.spatial_reduction,
                double_buffered=lv.double_buffered,
                ideal_overlap=lv.ideal_overlap,
                instances=instances[i],
                read_pj=_pick(lv.read_pj, c.read_pj),
                write_pj=_pick(lv.write_pj, c.write_pj),
                hop_pj=_pick(lv.hop_pj, wire * lv.word_bits * pitch_mm),
                leak_mw=_pick(lv.leak_mw, c.leak_mw),
                area_mm2=areas[i],
                network_area_mm2=_pick(
                    lv.network_area_mm2, network_area_mm2(children * lv.word_bits, pitch_mm, tech)
                ),
            )
        )
    return Architecture(
        name=cfg.name,
        source=source,
        description=cfg.description,
        clock_hz=clock_hz,
        node_nm=t.node_nm,
        vdd=t.vdd,
        sram_cell=t.sram_cell,
        dram_type=t.dram,
        levels=tuple(levels),
        mac=mac,
        systolic=_systolic(cfg, levels, lines),
        vector_unit=_vector(cfg, levels, mac, tech, lines),
        compilable=cfg.compilable,
        constraints=tuple(_constraints(cfg, lines)),
        fixed_overhead_mm2=cfg.fixed_overhead_mm2,
        padding=cfg.mapspace.padding if cfg.mapspace else None,
    )


def _systolic(cfg: HwConfig, levels: list[Level], lines: LineMap) -> Systolic | None:
    s = cfg.systolic
    if s is None:
        return None
    _known_level(s.level, cfg, lines, ("systolic", "level"))
    lv = next((x for x in levels if x.name == s.level), None) or max(levels, key=lambda x: x.fanout)
    if lv.fanout < 2:
        raise lines.error(
            ("systolic",),
            f"expected a level with a fan-out > 1 for the array, "
            f"level '{lv.name}' has {lv.fanout_x}x{lv.fanout_y}",
        )
    return Systolic(dataflow=s.dataflow, level=lv.name, rows=lv.fanout_y, cols=lv.fanout_x)


def _vector(
    cfg: HwConfig, levels: list[Level], mac: MacSpec, tech: Technology, lines: LineMap
) -> VectorUnit | None:
    v = cfg.vector_unit
    if v is None:
        return None
    _known_level(v.level, cfg, lines, ("vector_unit", "level"))
    name = v.level or (levels[1].name if len(levels) > 1 else levels[0].name)
    # Estimate: one element op costs about one MAC of the same datatype (an upper bound for add/max).
    unit = mac_cost(v.datatype, tech)
    return VectorUnit(
        lanes=v.lanes,
        datatype=v.datatype,
        level=name,
        op_pj=_pick(v.op_pj, unit.read_pj),
        area_mm2=_pick(v.area_mm2, unit.area_mm2 * v.lanes),
        leak_mw=_pick(v.leak_mw, unit.leak_mw * v.lanes),
    )


def _constraints(cfg: HwConfig, lines: LineMap) -> list[Constraint]:
    """Names in constraints must exist; a kept tensor must be one the level can hold."""
    first: dict[tuple[str, str], int] = {}  # (level, field) -> the entry that sets it
    for i, c in enumerate(cfg.constraints):
        _known_level(c.level, cfg, lines, ("constraints", i, "level"))
        for name in sorted(c.model_fields_set - {"level"}):
            if (c.level, name) in first:  # (the later entry's value had won silently)
                raise lines.error(("constraints", i, name), f"level {c.level}'s {name} is set already, by "
                                  f"constraints[{first[c.level, name]}]")
            first[c.level, name] = i
        lv = next(x for x in cfg.levels if x.name == c.level)
        for role in c.keep:
            if role not in lv.holds:
                raise lines.error(
                    ("constraints", i, "keep"),
                    f"expected tensors that level '{lv.name}' holds ({', '.join(lv.holds)}), got '{role}'",
                )
        both = set(c.bypass) & set(c.keep)
        if both:
            raise lines.error(
                ("constraints", i), f"expected a tensor kept or bypassed, not both: {sorted(both)}"
            )
    return list(cfg.constraints)
