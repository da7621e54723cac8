"""Properties of evaluation over random layers, random architectures and random valid mappings.

Architectures here are plain namespaces with the fields of CONTRACTS.md (``costmodel.arch.Level``),
so that hypothesis can draw bandwidths, energies, fan-outs and double buffering freely; the shipped
configs are covered in test_configs.py. Every expected value is recomputed here with plain loops
from the access counts and the mapping, not taken from the code under test.
"""

import math
from types import SimpleNamespace as NS

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.evaluate import evaluate_batch
from costmodel.problem import conv2d, matmul
from costmodel.random_mappings import random_mappings

problems = st.one_of(
    st.builds(lambda c, k, h, r, s, g: conv2d(c * g, k * g, h + r - 1, h + r - 1, kernel=r, stride=s, groups=g),
              st.sampled_from([1, 2, 3, 4, 6]), st.sampled_from([1, 2, 4, 8]), st.integers(2, 8),
              st.integers(1, 3), st.integers(1, 2), st.sampled_from([1, 2])),
    st.builds(lambda m, k, n: matmul(m, k, n), st.integers(1, 12), st.integers(1, 12), st.integers(1, 12)),
)


@st.composite
def architectures(draw, systolic: bool = False):
    n_lv = draw(st.integers(2, 4))
    levels, instances = [], 1
    for i in range(n_lv):
        fx, fy = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2, 3]))
        holds = ("I", "W", "O") if i == 0 else tuple(t for t in "IWO" if draw(st.booleans())) or ("O",)
        levels.append(NS(
            name=f"L{i}", holds=holds, capacity_words=None if i == 0 else draw(st.sampled_from([None, 64, 512])),
            fanout_x=fx, fanout_y=fy, fanout=fx * fy, multicast=draw(st.booleans()), spatial_reduction=draw(st.booleans()),
            double_buffered=draw(st.booleans()), ideal_overlap=draw(st.booleans()),
            read_bw=draw(st.sampled_from([None, 0.5, 1, 4])), write_bw=draw(st.sampled_from([None, 1, 2])),
            read_pj=draw(st.floats(0, 100)), write_pj=draw(st.floats(0, 100)), hop_pj=draw(st.floats(0, 2)),
            leak_mw=draw(st.floats(0, 5)), instances=instances,
        ))
        instances *= fx * fy
    sys_ = None
    if systolic:
        sys_ = NS(dataflow=draw(st.sampled_from(["WS", "OS", "IS"])),
                  rows=levels[-1].fanout_y, cols=levels[-1].fanout_x)
    return NS(name="random", levels=tuple(levels), num_pes=instances, clock_hz=draw(st.sampled_from([2e8, 1e9])),
              mac=NS(energy_pj=draw(st.floats(0, 3)), leak_mw=draw(st.floats(0, 0.1))), systolic=sys_)


def busy_copies(batch, i: int, level: int) -> int:
    """Copies of ``level`` in use by mapping ``i``: spatial factors of the levels above it."""
    return math.prod(int(batch.spatial_x[i, m, d] * batch.spatial_y[i, m, d])
                     for m in range(level) for d in range(batch.temporal.shape[2]))


@settings(max_examples=100, deadline=None)
@given(problem=problems, arch=architectures(), seed=st.integers(0, 2**16))
def test_energy_latency_utilization_invariants(problem, arch, seed):
    batch = random_mappings(problem, arch, 16, seed=seed)
    ev = evaluate_batch(problem, arch, batch)
    acc = ev.accesses
    for i in range(len(batch)):
        # energy: recomputed from the counts, level by level and tensor by tensor
        cycles = int(ev.latency_cycles[i])
        seconds = cycles / arch.clock_hz
        want = problem.macs * arch.mac.energy_pj
        for li, lv in enumerate(arch.levels):
            for ti in range(len(problem.tensors)):
                want += acc.reads[i, li, ti] * lv.read_pj
                want += (acc.fills[i, li, ti] + acc.updates[i, li, ti]) * lv.write_pj
                want += acc.hops[i, li, ti] * lv.hop_pj
            want += lv.leak_mw * 1e-3 * lv.instances * seconds * 1e12  # mW -> W, J -> pJ
        want += arch.mac.leak_mw * 1e-3 * arch.num_pes * seconds * 1e12
        assert math.isclose(ev.energy_pj[i], want, rel_tol=1e-9, abs_tol=1e-6)
        # ... and equals the sum of the leaves of its breakdown
        br = ev.row(i, {"total": 0.0}).energy_breakdown()
        leaves = br.pop("mac") + sum(br.pop("network").values()) + sum(br.pop("leakage").values())
        leaves += sum(v for per_t in br.values() for acts in per_t.values() for v in acts.values())
        assert math.isclose(ev.energy_pj[i], leaves, rel_tol=1e-12, abs_tol=1e-9)
        # latency: at least the perfect-array compute time, and every level's traffic time
        assert cycles >= math.ceil(problem.macs / arch.num_pes)
        assert cycles >= int(np.prod(batch.temporal[i]))
        for li, lv in enumerate(arch.levels):
            busy = busy_copies(batch, i, li)
            if lv.read_bw:
                assert cycles >= acc.reads[i, li].sum() / busy / lv.read_bw - 1e-9
            if lv.write_bw:
                assert cycles >= (acc.fills[i, li].sum() + acc.updates[i, li].sum()) / busy / lv.write_bw - 1e-9
        assert 0 < ev.utilization[i] <= 1
        assert math.isclose(ev.power_mw[i], ev.energy_pj[i] * 1e-12 / seconds * 1e3, rel_tol=1e-9)
        assert math.isclose(ev.edp[i], ev.energy_pj[i] * seconds, rel_tol=1e-9)
    serial = evaluate_batch(problem, arch, batch, overlap=False)
    assert (serial.latency_cycles >= ev.latency_cycles).all()
    # without overlap every level's slowest port adds up on top of compute (the temporal steps: no
    # systolic mode, no vector unit here), each port's cycles recomputed from the counts
    for i in range(len(batch)):
        want = int(np.prod(batch.temporal[i]))
        for li, lv in enumerate(arch.levels):
            busy = busy_copies(batch, i, li)
            words = (acc.reads[i, li].sum(), acc.fills[i, li].sum() + acc.updates[i, li].sum())
            want += max(0 if bw is None else math.ceil(w / busy / bw) for w, bw in zip(words, (lv.read_bw, lv.write_bw)))
        assert serial.latency_cycles[i] == want


@settings(max_examples=60, deadline=None)
@given(problem=problems, arch=architectures(systolic=True), seed=st.integers(0, 2**16))
def test_systolic_modes_are_ordered(problem, arch, seed):
    batch = random_mappings(problem, arch, 16, seed=seed)
    scalesim = evaluate_batch(problem, arch, batch, systolic_mode="scalesim").lat.compute
    overlapped = evaluate_batch(problem, arch, batch, systolic_mode="overlapped").lat.compute
    steps = batch.temporal.prod(axis=(1, 2))
    assert (steps <= overlapped).all() and (overlapped <= scalesim).all()
    ev = evaluate_batch(problem, arch, batch)
    assert (ev.utilization <= 1).all()


def test_an_empty_batch_has_empty_breakdowns():
    """random_mappings(n=0) and MappingBatch.from_mappings([]) are batches too: their breakdowns and
    DataFrame are empty, with the columns of any batch (the per-level sum failed to reshape)."""
    from costmodel.arch import load_architecture

    arch, p = load_architecture("tiny"), matmul(16, 16, 24)
    empty, one = (evaluate_batch(p, arch, random_mappings(p, arch, n, seed=0)) for n in (0, 1))
    assert empty.level_energy_pj.shape == (0, len(arch.levels))
    assert list(empty.to_dataframe().columns) == list(one.to_dataframe().columns) and len(empty.to_dataframe()) == 0


def test_the_dataframes_energy_columns_add_up_to_the_energy():
    """A stacked bar of a batch's DataFrame: the level columns and the MAC energy had left out the
    MACs' and the vector unit's leakage (up to 40 % of the energy on ar_glasses_npu)."""
    from costmodel.arch import HWCONFIGS, load_architecture

    layer = conv2d(8, 16, 8, 8, kernel=3, padding=1)
    for path in sorted(HWCONFIGS.glob("*.yaml")):
        arch = load_architecture(path.stem)
        df = evaluate_batch(layer, arch, random_mappings(layer, arch, 20, seed=0)).to_dataframe()
        parts = [c for c in df.columns if c.startswith("energy_") and c != "energy_pj"]
        parts += ["mac_energy_pj", "mac_leakage_pj", "vector_unit_leakage_pj"]
        np.testing.assert_allclose(df[parts].sum(axis=1), df["energy_pj"], rtol=1e-9, err_msg=path.stem)
        assert (df["vector_unit_leakage_pj"] > 0).all() == (getattr(arch, "vector_unit", None) is not None)
