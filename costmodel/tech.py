"""Technology model: energy, area and leakage of MACs, SRAMs, register files, DRAM and wires.

Every number comes from ``costmodel/data/*.csv`` (each row has a ``source``; estimates say so and
how they were derived). Figures are anchored at the node of their source (Horowitz 45 nm, Aladdin
40 nm, the CACTI 7.0 sweep at 45/32/22 nm) and moved to the target node with Stillmaker & Baas
(2017): area by their area table, energy (and, as hwcomponents does, leakage) by their quadratic
energy fit E(V) = a V^2 + b V + c at each node's supply. Nodes between table points (28, 22, 40 nm)
interpolate the coefficients linearly in the node size -- 45 -> 28 nm area then gives 0.377, as
hwcomponents does. SRAM access energy is a fit to the CACTI sweep (form in :func:`sram_energy_fit`;
its error is tested and documented in docs/technology.md).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from costmodel.errors import UserError

DATA = Path(__file__).parent / "data"
MAC_DATATYPES = ("int8", "int16", "fp16", "bf16", "fp32")
DRAM_TYPES = ("LPDDR4", "LPDDR5", "HBM2", "DDR4", "DDR3", "GDDR5")
SRAM_CELLS = ("LSTP", "HP")
MB = 1024 * 1024


def read_table(name: str) -> list[dict[str, str]]:
    """Rows of ``costmodel/data/<name>.csv`` as dicts (strings)."""
    with open(DATA / f"{name}.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@cache
def _scaling() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rows = sorted(read_table("scaling"), key=lambda r: float(r["node_nm"]))
    nodes = np.array([float(r["node_nm"]) for r in rows])
    area = np.array([float(r["area_rel_45"]) for r in rows])
    coef = np.array([[float(r["e_a"]), float(r["e_b"]), float(r["e_c"])] for r in rows])
    vdd = np.array([float(r["vdd_nominal"]) for r in rows])
    return nodes, area, coef, vdd


def _interp(node_nm: float, values: np.ndarray) -> np.ndarray:
    nodes = _scaling()[0]
    if not nodes[0] <= node_nm <= nodes[-1]:
        raise UserError(
            f"technology node {node_nm:g} nm is outside the scaling tables "
            f"({nodes[0]:g}-{nodes[-1]:g} nm, Stillmaker & Baas 2017)"
        )
    i = int(np.searchsorted(nodes, node_nm))
    if nodes[i] == node_nm:
        return values[i]
    t = (node_nm - nodes[i - 1]) / (nodes[i] - nodes[i - 1])
    return values[i - 1] + t * (values[i] - values[i - 1])


def nominal_vdd(node_nm: float) -> float:
    """The supply assumed at a node when a config gives none (scaling.csv ``vdd_nominal``)."""
    return float(_interp(node_nm, _scaling()[3]))


VDD_SPAN = (0.5, 1.5)
"""Supplies a config may set, as fractions of the node's nominal (an estimate: the paper fits each
node around its usual supply; far from it a quadratic loses meaning -- the 180 nm fit turns negative
below 0.73 V)."""


def vdd_range(node_nm: float) -> tuple[float, float]:
    """The supplies the energy fit covers at ``node_nm``: :data:`VDD_SPAN` x the nominal, and above
    the fit's minimum and its zeros, so that energy is positive and rises with the supply."""
    a, b, c = _interp(node_nm, _scaling()[2])
    nominal = nominal_vdd(node_nm)
    lo = max(VDD_SPAN[0] * nominal, -b / (2 * a))  # (a > 0 at every node: the fits are convex)
    disc = b * b - 4 * a * c
    if disc >= 0:
        lo = max(lo, (-b + math.sqrt(disc)) / (2 * a))
    return math.ceil(lo * 100 - 1e-6) / 100, math.floor(VDD_SPAN[1] * nominal * 100 + 1e-6) / 100  # (to 10 mV)


def _energy_fit(node_nm: float, vdd: float | None) -> float:
    a, b, c = _interp(node_nm, _scaling()[2])
    v = nominal_vdd(node_nm) if vdd is None else vdd
    return float(a * v * v + b * v + c)


def energy_factor(
    from_nm: float, to_nm: float, from_vdd: float | None = None, to_vdd: float | None = None
) -> float:
    """Multiply an energy at ``from_nm`` by this to get it at ``to_nm`` (Stillmaker & Baas fit)."""
    return _energy_fit(to_nm, to_vdd) / _energy_fit(from_nm, from_vdd)


def area_factor(from_nm: float, to_nm: float) -> float:
    """Multiply an area at ``from_nm`` by this to get it at ``to_nm`` (Stillmaker & Baas table)."""
    area = _scaling()[1]
    return float(_interp(to_nm, area) / _interp(from_nm, area))


@dataclass(frozen=True)
class Technology:
    """Where a config's circuits are built: node, supply, SRAM cell flavour, DRAM type."""

    node_nm: float
    vdd: float | None = None
    sram_cell: str = "LSTP"
    dram: str = "LPDDR4"

    def energy(self, value: float, at_nm: float, at_vdd: float | None = None) -> float:
        """An energy known at ``at_nm`` moved to this technology."""
        return value * energy_factor(at_nm, self.node_nm, at_vdd, self.vdd)

    def area(self, value: float, at_nm: float) -> float:
        return value * area_factor(at_nm, self.node_nm)


@dataclass(frozen=True)
class Cost:
    """Per-action energy (pJ per word), area and leakage of one circuit instance."""

    read_pj: float
    write_pj: float
    area_mm2: float
    leak_mw: float


@cache
def _mac_rows() -> dict[str, dict[str, str]]:
    return {r["datatype"]: r for r in read_table("mac")}


@cache
def _primitive(name: str) -> tuple[float, float | None]:
    for r in read_table("primitives"):
        if r["quantity"] == name:
            return float(r["value"]), (float(r["node_nm"]) if r["node_nm"] else None)
    raise KeyError(name)


def mac_cost(datatype: str, tech: Technology) -> Cost:
    """One MAC (multiplier + accumulating adder): energy per MAC in ``read_pj`` (= ``write_pj``)."""
    r = _mac_rows()[datatype]
    e = tech.energy(float(r["mult_pj_45nm"]) + float(r["add_pj_45nm"]), 45, 0.9)
    a = tech.area(float(r["mult_area_um2_40nm"]) + float(r["add_area_um2_40nm"]), 40) * 1e-6
    leak = tech.energy(float(r["mult_leak_uw_40nm"]) + float(r["add_leak_uw_40nm"]), 40) * 1e-3
    return Cost(e, e, a, leak)


@cache
def _sram_points() -> tuple[np.ndarray, ...]:
    rows = read_table("sram_cacti")
    node = np.array([float(r["node_nm"]) for r in rows])
    cap = np.array([float(r["capacity_bytes"]) for r in rows])
    width = np.array([float(r["width_bits"]) for r in rows])
    energy = np.array([float(r["read_pj"]) for r in rows])
    return node, cap, width, energy


@cache
def sram_energy_fit() -> tuple[dict[float, float], float, float, float]:
    """Least-squares fit of the CACTI sweep: ``E = a_node (C/1 MiB)^alpha (w/64)^(beta + gamma ln(C/1 MiB))``.

    Returns ``({node: a_node}, alpha, beta, gamma)``; ``a_node`` is the pJ per access of a 1 MiB,
    64-bit-port array. Fitted in log space over all sweep points (nodes share the exponents).
    """
    node, cap, width, energy = _sram_points()
    nodes = sorted(set(node.tolist()), reverse=True)
    lc, lw = np.log(cap / MB), np.log(width / 64)
    cols = [(node == n).astype(float) for n in nodes] + [lc, lw, lc * lw]
    coef = np.linalg.lstsq(np.stack(cols, axis=1), np.log(energy), rcond=None)[0]
    a = {n: float(math.exp(c)) for n, c in zip(nodes, coef[: len(nodes)], strict=True)}
    return a, float(coef[-3]), float(coef[-2]), float(coef[-1])


def sram_fit_energy(capacity_bytes: float, width_bits: float, cacti_node: float) -> float:
    """pJ per access of the fit at one of the CACTI sweep's nodes."""
    a, alpha, beta, gamma = sram_energy_fit()
    lc = math.log(capacity_bytes / MB)
    return a[cacti_node] * math.exp(alpha * lc + (beta + gamma * lc) * math.log(width_bits / 64))


@cache
def _sram_density_and_leak() -> tuple[dict[float, float], float]:
    """Mean mm^2 per MiB per CACTI node, and LSTP leakage mW per MiB at 22 nm (least squares, linear)."""
    rows = read_table("sram_cacti")
    dens: dict[float, list[float]] = {}
    caps, leaks = [], []
    for r in rows:
        if r["area_mm2_per_mb"]:
            dens.setdefault(float(r["node_nm"]), []).append(float(r["area_mm2_per_mb"]))
        if r["leak_mw"]:
            caps.append(float(r["capacity_bytes"]) / MB)
            leaks.append(float(r["leak_mw"]))
    c, lk = np.array(caps), np.array(leaks)
    return {n: float(np.mean(v)) for n, v in dens.items()}, float(c @ lk / (c @ c))


def _nearest_cacti_node(node_nm: float) -> float:
    nodes = sram_energy_fit()[0]
    return min(nodes, key=lambda n: abs(math.log(n / node_nm)))


def port_factors(ports: int) -> tuple[float, float]:
    """(energy, area) multipliers for a ``ports``-ported array vs CACTI's single RW port.

    Estimate: each extra port adds a wordline and a bitline pair per cell, so the cell grows
    linearly in both directions, area ~ ((1 + p)/2)^2; access energy follows wire length ~ (1 + p)/2.
    """
    f = (1 + ports) / 2
    return f, f * f


def sram_cost(
    capacity_words: int, word_bits: int, block_words: int, tech: Technology, ports: int = 1
) -> Cost:
    """An SRAM array: CACTI-fit energy per access / block words, area and leakage by capacity."""
    cap_bytes = capacity_words * word_bits / 8
    width = block_words * word_bits
    cnode = _nearest_cacti_node(tech.node_nm)
    e_port, a_port = port_factors(ports)
    access = tech.energy(sram_fit_energy(cap_bytes, width, cnode), cnode) * e_port
    read = access / block_words
    write = read * _primitive("sram_write_over_read")[0]
    density, leak_per_mb = _sram_density_and_leak()
    area = tech.area(density[cnode] * cap_bytes / MB, cnode) * a_port
    leak = tech.energy(leak_per_mb * cap_bytes / MB, 22)
    if tech.sram_cell == "HP":
        leak *= _primitive("sram_hp_leak_over_lstp")[0]
    return Cost(read, write, area, leak)


def regfile_cost(capacity_words: int, word_bits: int, tech: Technology, ports: int = 1) -> Cost:
    """A register file as flip-flops (Aladdin): energy per bit accessed, area per bit stored."""
    e_bit, e_node = _primitive("regfile_pj_per_bit")
    a_bit, a_node = _primitive("regfile_um2_per_bit")
    leak_density, l_node = _primitive("logic_leak_uw_per_um2")
    e_port, a_port = port_factors(ports)
    e = tech.energy(e_bit * word_bits, e_node or 40) * e_port
    area_um2 = tech.area(a_bit * capacity_words * word_bits, a_node or 40) * a_port
    leak_mw = tech.energy(leak_density * a_bit * capacity_words * word_bits, l_node or 40) * 1e-3
    return Cost(e, e, area_um2 * 1e-6, leak_mw)


@cache
def dram_pj_per_bit(kind: str) -> float:
    for r in read_table("dram"):
        if r["dram"] == kind:
            return float(r["pj_per_bit"])
    raise KeyError(kind)


def dram_cost(word_bits: int, tech: Technology) -> Cost:
    """Off-chip DRAM: per-bit interface+array energy; no on-die area or leakage."""
    e = dram_pj_per_bit(tech.dram) * word_bits
    return Cost(e, e, 0.0, 0.0)


def wire_pj_per_bit_mm(tech: Technology) -> float:
    """On-chip wire energy: Park et al. 45 nm figure scaled by the supply squared only."""
    e, node = _primitive("wire_pj_per_bit_mm")
    v = nominal_vdd(tech.node_nm) if tech.vdd is None else tech.vdd
    return e * (v / nominal_vdd(node or 45)) ** 2


def network_area_mm2(wires: float, length_mm: float, tech: Technology) -> float:
    """Area of ``wires`` parallel tracks ``length_mm`` long (estimate; see primitives.csv)."""
    pitch_mm = _primitive("network_wire_pitch_nm_per_node_nm")[0] * tech.node_nm * 1e-6
    return wires * length_mm * pitch_mm
