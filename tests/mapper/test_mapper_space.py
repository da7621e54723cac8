"""Mapspace: size formulas, fan-out and capacity rules vs Mapping.validate, and constraints."""

import itertools
import math

import numpy as np
import pytest

from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.problem import conv2d, matmul
from dse.mapspace import Mapspace
from dse.mapspace.factorizations import prime_factors


def _closed_form(n, k):
    return math.prod(math.comb(e + k - 1, k - 1) for e in prime_factors(n).values())


def test_size_matches_formula_and_enumeration():
    arch = load_architecture("tiny")  # 3 levels, a 2x2 fan-out below the buffer: 5 slots per dim
    p = matmul(4, 6, 2)
    ms = Mapspace(p, arch)
    size = ms.size()
    # M4 over 5 slots: C(2+4,4) = 15; K6 = 2*3: 5 * 5 = 25; N2: 5  (B=1: 1)
    assert size.tilings == 15 * 25 * 5 == _closed_form(4, 5) * _closed_form(6, 5) * _closed_form(2, 5)
    # keep options: buffer and rf each hold I, W, O -> 2^6
    assert size.keep_options == 64
    assert size.orders_raw == math.factorial(4) ** 3
    # spatial_tilings, counted by brute force over the factor tuples
    rows = ms.tiling_rows(0, ms.num_tilings)
    t, sx, sy = ms.decode(rows)
    assert (t * sx * sy).prod(axis=1).tolist() == [[1, 4, 2, 6]] * len(rows)  # dims B M N K
    brute = 0
    for m in itertools.product(*[ms.tables[d].table.tolist() for d in range(4)]):
        f = np.ones((3, 3, 4), int)
        for di, row in enumerate(m):
            for (li, k), v in zip(ms.tables[di].slots, row):
                f[k, li, di] = v
        brute += f[1, 1].prod() <= 2 and f[2, 1].prod() <= 2
    assert size.spatial_tilings == ms.num_tilings == brute == len({r.tobytes() for r in rows})


def test_capacity_rule_equals_mapping_validate():
    arch = load_architecture("tiny")
    p = conv2d(4, 8, 6, 6, kernel=3, padding=1)
    ms = Mapspace(p, arch)
    rng = np.random.default_rng(0)
    rows = ms.tiling_rows_at(rng.integers(0, ms.num_tilings, 300))
    t, sx, sy = ms.decode(rows)
    fit = ms.capacity_ok(t, sx, sy)
    ks = rng.integers(0, len(ms.keep_options), 300)
    batch = ms.batch(rows, np.tile(np.arange(8), (300, 3, 1)), ks)
    for i in range(300):
        try:
            batch.mapping(i, p).validate(p, arch)
            valid = True
        except UserError:
            valid = False
        assert valid == fit[i, ks[i]]
    assert fit.any() and not fit.all()


def test_constraints_from_yaml(tmp_path):
    arch = load_architecture("tiny")
    p = conv2d(4, 8, 6, 6, kernel=3, padding=1)
    f = tmp_path / "c.yaml"
    f.write_text("constraints:\n"
                 "  - {level: buffer, spatial_x: [K], spatial_y: {C: 2}, bypass: [W]}\n"
                 "  - {level: rf, temporal: {S: 3}, order: [R, S], keep: [W]}\n")  # (3 W words: the rf has 8)
    ms = Mapspace(p, arch, f)
    rows = ms.tiling_rows(0, min(ms.num_tilings, 5000))
    t, sx, sy = ms.decode(rows)
    d = {n: i for i, n in enumerate(p.dim_names)}
    assert (sx[:, 1].prod(axis=1) == sx[:, 1, d["K"]]).all()  # only K on X
    assert (sy[:, 1, d["C"]] == 2).all() and (sy[:, 1].prod(axis=1) == 2).all()
    assert (t[:, 2, d["S"]] == 3).all()
    assert not ms.keep_options[:, 1, 1].any() and ms.keep_options[:, 2, 1].all()  # W: bypass buf, keep rf
    levels = ms.row_levels[rows + ms.row_offset][:, None, :] >> np.arange(ms.n_levels)[:, None]
    assert ((levels & 1).astype(bool) == (t > 1)).all()  # fixed temporal factors included
    fitting = rows[ms.capacity_ok(t, sx, sy).any(axis=1)][:50]  # (expand skips tilings that fit nowhere)
    checked = 0
    for batch, _, _ in ms.expand(fitting):
        for r, f in zip(batch.order[:, 2], batch.temporal[:, 2]):
            # the rf's active loops (factor > 1; a loop of 1 is transparent) end with R then S, those of
            # the two that are active
            active = sorted((rank, n) for n, rank in zip(p.dim_names, r) if f[d[n]] > 1)
            tail = [n for n in ("R", "S") if f[d[n]] > 1]
            assert [n for _, n in active[len(active) - len(tail):]] == tail, (r, f)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("entry,match", [
    ({"level": "nowhere"}, "level"),
    ({"level": "rf", "temporal": {"X": 2}}, "unknown dimension"),
    ({"level": "rf", "keep": ["W"], "bypass": ["W"]}, "both kept and bypassed"),
    ({"level": "rf", "temporal": {"K": 3}}, "contradictory constraints: dimension K"),
    ({"level": "buffer", "spatial_x": {"K": 4}}, "fan-out is 2"),
    ({"level": "DRAM", "bypass": ["I"]}, "outermost"),
    ({"level": "rf", "shape": 1}, "unknown field"),
    # YAML's true is an int to Python: it had been taken for the factor 1
    ({"level": "rf", "temporal": {"K": True}}, r"temporal\.K: expected a positive integer factor, got True"),
    ({"level": "buffer", "spatial_x": {"K": True}}, r"spatial_x\.K: expected a positive integer factor, got True"),
])
def test_bad_constraints_say_why(entry, match):
    with pytest.raises(UserError, match=match):
        Mapspace(conv2d(4, 8, 6, 6, kernel=3), load_architecture("tiny"), [entry])


def test_config_constraints_are_honoured():
    arch = load_architecture("nvdla_small_like")  # spatial_x: [K], spatial_y: [C], keep W at mac_weight
    p = conv2d(16, 16, 8, 8, kernel=3)
    ms = Mapspace(p, arch)
    _, sx, sy = ms.spatial_factors()  # every spatial unrolling of the mapspace
    d = {n: i for i, n in enumerate(p.dim_names)}
    assert (sx[:, :, [i for n, i in d.items() if n != "K"]] == 1).all()
    assert (sy[:, :, [i for n, i in d.items() if n != "C"]] == 1).all()
    assert (sx[:, :, d["K"]] > 1).any() and (sy[:, :, d["C"]] > 1).any()  # (the array is used)
    lv, w = [x.name for x in arch.levels].index("mac_weight"), [t.name for t in p.tensors].index("W")
    assert ms.keep_options[:, lv, w].all()


@pytest.mark.parametrize("cfg", ["tiny", "edge_tpu_like", "ar_glasses_npu"])
def test_spatial_pes_and_selected_factors(cfg):
    """Each unrolling's PE count is the product of its spatial factors, and the factors of selected
    unrollings are those rows of the full table; every tiling of an unrolling has its spatial
    factors (decoded from the tiling rows, independently of spatial_factors)."""
    ms = Mapspace(conv2d(16, 32, 14, 14, kernel=3, padding=1), load_architecture(cfg))
    t, sx, sy = ms.spatial_factors()
    assert (ms.spatial_pes() == (sx * sy).prod(axis=(1, 2))).all()
    which = np.random.default_rng(0).choice(ms.num_spatial, size=min(50, ms.num_spatial), replace=False)
    for full, part in zip((t, sx, sy), ms.spatial_factors(which)):
        assert (part == full[which]).all()
    for m in which[:10]:
        lo, hi = ms.spatial_range(int(m))
        _, dx, dy = ms.decode(ms.tiling_rows(lo, min(hi, lo + 20)))
        assert (dx == sx[m]).all() and (dy == sy[m]).all()
