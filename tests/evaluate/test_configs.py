"""Evaluation on every shipped config: invariants over random valid mappings, and the systolic example.

The random mappings are checked valid by Mapping.validate (the mapping helper's independent
checker) on a sample, so the invariants are exercised on mappings a user could write.
"""

import math
from pathlib import Path

import numpy as np
import pytest

from costmodel.arch import HWCONFIGS, load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate, evaluate_batch
from costmodel.latency import gemm_view, scalesim_cycles
from costmodel.mapping import MappingBatch
from costmodel.problem import conv2d, depthwise_conv2d, matmul
from costmodel.random_mappings import random_mappings
from dse import api

CONFIGS = sorted(p.stem for p in HWCONFIGS.glob("*.yaml"))
LAYERS = [conv2d(16, 32, 14, 14, kernel=3, padding=1), depthwise_conv2d(32, 16, 16, kernel=3, stride=2),
          matmul(49, 64, 24)]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name", CONFIGS)
def test_invariants_on_shipped_config(name):
    arch = load_architecture(name)
    for li, problem in enumerate(LAYERS):
        batch = random_mappings(problem, arch, 200, seed=li)
        for i in range(0, 200, 50):
            batch.mapping(i, problem).validate(problem, arch)
        ev = evaluate_batch(problem, arch, batch)
        assert (ev.utilization <= 1).all() and (ev.utilization > 0).all()
        assert (ev.latency_cycles >= math.ceil(problem.macs / arch.num_pes)).all()
        # and at least each level's port time, from its counts: words / (busy copies x bandwidth)
        spread = (batch.spatial_x * batch.spatial_y).prod(axis=2)  # [B, L]: copies below each level
        busy = np.concatenate([np.ones((len(batch), 1)), np.cumprod(spread, axis=1)[:, :-1]], axis=1)
        acc = ev.accesses
        for li, lv in enumerate(arch.levels):
            for words, bw in ((acc.reads[:, li].sum(axis=1), lv.read_bw),
                              (acc.fills[:, li].sum(axis=1) + acc.updates[:, li].sum(axis=1), lv.write_bw)):
                if bw is not None:
                    assert (ev.latency_cycles >= words / busy[:, li] / bw - 1e-9).all(), (name, lv.name)
        parts = ev.en.access.sum(axis=(1, 2, 3)) + ev.en.network.sum(axis=(1, 2)) + ev.en.leakage.sum(axis=1)
        np.testing.assert_allclose(ev.energy_pj, parts + ev.en.mac + ev.en.mac_leakage + ev.en.vector_leakage, rtol=1e-12)
        # a single mapping evaluated alone gives the same numbers as its row of the batch
        one = evaluate(problem, arch, batch.mapping(7, problem)).to_dict()
        assert one["energy_pj"] == pytest.approx(ev.energy_pj[7], rel=1e-12)
        assert one["latency_cycles"] == ev.latency_cycles[7]
        # ... to the last bit, breakdowns included, as a batch of one
        for i in range(0, 200, 23):
            alone = evaluate_batch(problem, arch, MappingBatch.from_mappings([batch.mapping(i, problem)], problem, arch))
            for field in ("energy_pj", "latency_cycles", "level_energy_pj", "tensor_energy_pj"):
                assert np.array_equal(getattr(alone, field)[0], getattr(ev, field)[i]), (name, i, field)
        assert one["area_mm2"] > 0


@pytest.mark.parametrize("name", ["tpu_like", "eyeriss_like", "ar_glasses_npu"])
def test_chunks_are_invisible(name, monkeypatch):
    """evaluate_batch takes the batch through its stages in chunks: chunks of 7 (ranges that split
    the kernels' blocks of 64-256 mappings anywhere) give the numbers of one chunk, bit for bit."""
    import costmodel.evaluate as ev_mod

    arch = load_architecture(name)
    problem = LAYERS[0]
    batch = random_mappings(problem, arch, 300, seed=5)
    whole = evaluate_batch(problem, arch, batch)
    monkeypatch.setattr(ev_mod, "CHUNK", 7)
    parts = evaluate_batch(problem, arch, batch)
    for field in ("fills", "reads", "updates", "hops", "tile_words", "temporal_steps"):
        np.testing.assert_array_equal(getattr(parts.accesses, field), getattr(whole.accesses, field))
    for field in ("latency_cycles", "energy_pj", "power_mw", "edp", "utilization"):
        np.testing.assert_array_equal(getattr(parts, field), getattr(whole, field))
    np.testing.assert_array_equal(parts.lat.traffic, whole.lat.traffic)


def test_tpu_like_example_against_scalesim():
    arch = api.load_hw("tpu_like")
    problem = api.load_layer(EXAMPLES / "layers" / "resnet50_conv3x3_128.yaml")
    mapping = api.load_mapping(EXAMPLES / "mappings" / "tpu_like_resnet50_conv3x3_128.yaml", problem, arch)
    # WS on 16 x 16: each fold streams the accumulator's P14 x Q28 = 392 pixels (T); the folds are the
    # other temporal loops, K8 P2 (DRAM) x C8 R3 S3 (scratchpad) = 1152; fill/drain 2*16 + 16 - 2 = 46
    over = evaluate(problem, arch, mapping, systolic_mode="overlapped")
    ss = evaluate(problem, arch, mapping, systolic_mode="scalesim")
    assert ss.batch.lat.compute[0] == 1152 * (392 + 46) == 504_576
    # overlapped: the next fold's 16 weight rows shift in during a 392-cycle stream: one fill/drain
    assert over.batch.lat.compute[0] == 1152 * 392 + 46 == 451_630
    # SCALE-Sim's own schedule streams all M = 28*28 = 784 pixels per fold (no accumulator limit):
    # ceil(1152/16) * ceil(128/16) * (2*16 + 16 + 784 - 2) = 72 * 8 * 830 = 478,080 cycles
    assert scalesim_cycles(gemm_view(problem), 16, 16, "WS") == 478_080


def test_dataframes_and_reserved_names():
    arch = load_architecture("tiny")
    problem = LAYERS[0]
    batch = random_mappings(problem, arch, 20, seed=3)
    df = evaluate_batch(problem, arch, batch).to_dataframe()
    assert len(df) == 20 and {"energy_pj", "latency_cycles", "energy_buffer_pj"} <= set(df.columns)
    one = evaluate(problem, arch, batch.mapping(0, problem))
    rows = one.to_dataframe()
    assert len(rows) == len(arch.levels) * len(problem.tensors)
    d = one.to_dict()
    assert rows["reads"].sum() == sum(a["reads"] for t in d["accesses"].values() for a in t.values())
    # the energy of the accesses, plus MACs, network and leakage, is the total
    rest = d["energy_breakdown_pj"]["mac"] + sum(d["energy_breakdown_pj"]["network"].values()) + \
        sum(d["energy_breakdown_pj"]["leakage"].values())
    access = rows[["read_pj", "fill_pj", "update_pj"]].to_numpy().sum()
    assert access + rest == pytest.approx(d["energy_pj"], rel=1e-12)
    bad = arch.model_copy(update={"levels": (arch.levels[0].model_copy(update={"name": "mac"}), *arch.levels[1:])})
    with pytest.raises(UserError, match="reserved"):
        evaluate_batch(problem, bad, batch)
