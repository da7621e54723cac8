"""A batch that is not a set of mappings of its problem is refused before the counting kernel reads
it out of bounds (costmodel.batch_check): each kind of corruption, at any row, names that row."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel import batch_check
from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.evaluate import evaluate, evaluate_batch
from costmodel.mapping import Mapping, MappingBatch, batch_inner
from costmodel.problem import conv2d
from costmodel.random_mappings import random_mappings

PROB = conv2d(16, 32, 14, 14, kernel=3, padding=1)
ARCH = load_architecture("tpu_like")
BATCH = random_mappings(PROB, ARCH, 600, seed=5)
DIMS = PROB.dim_names


def _copy(batch: MappingBatch) -> MappingBatch:
    return MappingBatch(*(np.array(getattr(batch, f)) for f in ("temporal", "spatial_x", "spatial_y", "order", "keep")))


@pytest.mark.parametrize("config", ["tpu_like", "eyeriss_like", "ar_glasses_npu"])
def test_valid_batches_pass(config):
    arch = load_architecture(config)
    batch = random_mappings(PROB, arch, 2000, seed=1)
    views = [batch_inner(getattr(batch, f)) for f in ("temporal", "spatial_x", "spatial_y", "order", "keep")]
    assert batch_check.first_bad_mapping(*views, *batch_check.tables(PROB, arch), 0, len(batch)) == -1


def _corrupt(batch: MappingBatch, i: int, kind: str) -> str:
    """Spoil row ``i`` one way; returns what the message must say."""
    k, q = DIMS.index("K"), DIMS.index("Q")
    if kind == "product":
        batch.temporal[i, 0, q] *= 3
        return "the factors of dim Q multiply to"
    if kind == "zero":
        batch.temporal[i, 1, k] = 0
        return "every factor must be >= 1"
    if kind == "fan-out":  # the same product, but unrolled at DRAM, which has no fan-out
        lv, d = next((lv, d) for lv in range(4) for d in range(len(DIMS)) if batch.temporal[i, lv, d] % 2 == 0)
        batch.temporal[i, lv, d] //= 2
        batch.spatial_x[i, 0, d] *= 2
        return "the spatial X factors at level DRAM multiply to 2, above its fan-out 1"
    if kind == "keep":  # the accumulator holds only O
        batch.keep[i, 2, 1] = True
        return "level accumulator keeps W, which it does not hold"
    batch.order[i, 3, 0] = 99
    return "the ranks of level pe_weight must be a permutation"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, len(BATCH) - 1), st.sampled_from(["product", "zero", "fan-out", "keep", "order"]))
def test_each_corruption_is_named_at_its_row(i, kind):
    batch = _copy(BATCH)
    what = _corrupt(batch, i, kind)
    with pytest.raises(ValueError, match=f"mapping {i}: {what}"):
        evaluate_batch(PROB, ARCH, batch)


def test_shapes_and_fractional_factors_are_refused():
    with pytest.raises(ValueError, match="arrays for 3 levels"):
        evaluate_batch(PROB, ARCH, MappingBatch(*(getattr(BATCH, f)[:, 1:] for f in
                                                  ("temporal", "spatial_x", "spatial_y", "order", "keep"))))
    with pytest.raises(ValueError, match="temporal: expected integers, got dtype float64 with fractions"):
        MappingBatch(BATCH.temporal * 1.5, BATCH.spatial_x, BATCH.spatial_y, BATCH.order, BATCH.keep)


def test_one_invalid_mapping_is_an_error_not_garbage():
    """The single-mapping API validates the mapping (a factor that does not divide the dim once made
    the kernel read outside its tables: varying numbers or a crash; a tile that overflows a buffer
    got numbers)."""
    d = BATCH.mapping(0, PROB).to_dict(ARCH)
    d["levels"][0]["temporal"]["Q"] = 42
    with pytest.raises(UserError, match="dimension Q: factors multiply to"):
        evaluate(PROB, ARCH, Mapping.from_dict(d, ARCH))
    d = BATCH.mapping(0, PROB).to_dict(ARCH)  # every loop at the PEs' weight registers (2 words)
    for lv in d["levels"]:
        lv["temporal"], lv["spatial_x"], lv["spatial_y"], lv["bypass"] = {}, {}, {}, []
    d["levels"][3]["temporal"] = {k: v for k, v in PROB.dims if v > 1}
    with pytest.raises(UserError, match="level pe_weight: tiles of kept tensors need"):
        evaluate(PROB, ARCH, Mapping.from_dict(d, ARCH))


def test_unchecked_equals_checked_on_valid_batches():
    a, b = evaluate_batch(PROB, ARCH, BATCH), evaluate_batch(PROB, ARCH, BATCH, check=False)
    assert np.array_equal(a.energy_pj, b.energy_pj) and np.array_equal(a.latency_cycles, b.latency_cycles)


def test_random_mappings_counts_and_flags():
    assert len(random_mappings(PROB, ARCH, 0, seed=1)) == 0
    assert random_mappings(PROB, ARCH, 0, seed=1).temporal.shape == (0, *BATCH.temporal.shape[1:])
    for n in (-1, 2.5, True):
        with pytest.raises(ValueError, match="n must be an integer >= 0"):
            random_mappings(PROB, ARCH, n)
    with pytest.raises(ValueError, match="bypass_p must be a probability"):
        random_mappings(PROB, ARCH, 5, bypass_p=2.0)
    with pytest.raises(TypeError, match="overlap must be True or False"):
        evaluate_batch(PROB, ARCH, BATCH, overlap="no")


def test_random_mappings_in_bounded_rounds(monkeypatch):
    """A large ``n`` is drawn in rounds of at most ROUND_MAX candidates: exactly n mappings, all valid
    (the batch check, and Mapping.validate with the buffers' capacities), and the rounds draw on one
    stream (nearly all rows distinct: a round restarting the stream would repeat the last one's)."""
    from costmodel import random_mappings as rm

    monkeypatch.setattr(rm, "ROUND_MAX", 256)
    drawn = []
    real = rm._candidates
    monkeypatch.setattr(rm, "_candidates", lambda *a: drawn.append(a[2]) or real(*a))
    batch = rm.random_mappings(PROB, ARCH, 1500, seed=3)
    assert len(batch) == 1500 and max(drawn) == 256 and len(drawn) >= 1500 // 256
    views = [batch_inner(getattr(batch, f)) for f in ("temporal", "spatial_x", "spatial_y", "order", "keep")]
    assert batch_check.first_bad_mapping(*views, *batch_check.tables(PROB, ARCH), 0, len(batch)) == -1
    for i in range(0, 1500, 97):
        batch.mapping(i, PROB).validate(PROB, ARCH)
    rows = np.concatenate([batch.temporal.reshape(1500, -1), batch.order.reshape(1500, -1)], axis=1)
    assert len(np.unique(rows, axis=0)) > 1400
