"""The fast mapper's walker-pool descent and evaluator: deterministic, no mapping evaluated twice,
budget respected (any pool width)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from costmodel.arch import load_architecture
from costmodel.problem import conv2d, matmul
from dse.mappers import genomes
from dse.mappers.fast import fast_map
from dse.mappers.objectives import Objective

TPU = load_architecture("tpu_like")
TINY = load_architecture("tiny")
CONV = conv2d(16, 32, 14, 14, kernel=3, padding=1)


def _canonical(batch) -> set[bytes]:
    """One key per mapping: factors, keeps, and per level the loops with a factor above 1 from outer
    to inner (the cost model ignores where factor-1 loops sit), written apart from the evaluator's hash."""
    keys = set()
    for i in range(len(batch)):
        t = batch.temporal[i]
        nest = [tuple(d for d in np.argsort(batch.order[i][li], kind="stable") if t[li, d] > 1)
                for li in range(t.shape[0])]
        keys.add(np.concatenate([t.ravel(), batch.spatial_x[i].ravel(), batch.spatial_y[i].ravel(),
                                 batch.keep[i].ravel().astype(np.int64)]).tobytes() + repr(nest).encode())
    return keys


def test_same_seed_same_result_on_a_big_config():
    a = fast_map(CONV, TPU, seed=5, max_evaluations=4000)
    b = fast_map(CONV, TPU, seed=5, max_evaluations=4000)
    assert a.mapping == b.mapping and a.metrics == b.metrics
    assert a.mappings_evaluated == b.mappings_evaluated <= 4000


def _spied(problem, arch, **kw) -> tuple[list, object]:
    """Every (batch, evaluation) the Evaluator sent to the cost model during one fast_map run, and
    the run's result."""
    calls: list = []
    real = genomes.evaluate_batch

    def spy(problem, arch, batch, **ekw):
        ev = real(problem, arch, batch, **ekw)
        calls.append((batch, ev))
        return ev

    genomes.evaluate_batch = spy
    try:
        res = fast_map(problem, arch, **kw)
    finally:
        genomes.evaluate_batch = real
    return calls, res


@settings(max_examples=4, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([1, 3, 8]))
def test_no_mapping_evaluated_twice_and_budget_kept(seed, width):
    calls, res = _spied(matmul(16, 8, 12), TINY, seed=seed, max_evaluations=2500, width=width)
    seen = [b for b, _ in calls]
    total = sum(len(b) for b in seen)
    assert total == res.mappings_evaluated <= 2500
    keys = set()
    for b in seen:
        k = _canonical(b)
        assert len(k) == len(b)  # no duplicate inside a batch
        assert not keys & k  # nor across batches
        keys |= k


def _edp_score(energy_pj, latency_cycles) -> np.ndarray:
    return Objective.parse("edp").score(np.asarray(energy_pj), np.asarray(latency_cycles))


def _victory_run(victory: int) -> tuple[list[np.ndarray], list[bytes], object]:
    """(scores of each evaluated batch, their canonical keys, the result) of one fast_map run."""
    calls, res = _spied(CONV, TPU, seed=3, max_evaluations=6000, victory=victory)
    scores = [_edp_score(ev.energy_pj, ev.latency_cycles) for _, ev in calls]
    return scores, [b"".join(sorted(_canonical(b))) for b, _ in calls], res


def test_victory_truncates_the_same_search_where_it_stalled():
    """The victory condition only cuts the search short: its batches are a prefix of the search
    without it, ending at the first batch after which ``victory`` evaluations in a row brought no
    better score (recomputed here from the batches' own evaluations)."""
    victory = 400
    full_scores, full_keys, full = _victory_run(6000)
    _, cut_keys, cut = _victory_run(victory)
    assert cut_keys == full_keys[:len(cut_keys)]  # the same batches, in the same order
    assert len(cut_keys) < len(full_keys)  # it did stop early
    best, improved_at, done = np.inf, 0, 0
    stop = None
    for k, sc in enumerate(full_scores):
        done += len(sc)
        if sc.min() < best:
            best, improved_at = float(sc.min()), done
        if done - improved_at >= victory:
            stop = k + 1
            break
    assert stop == len(cut_keys)
    assert cut.mappings_evaluated == done and cut.stats["improved_at"] == improved_at

    def score(res) -> float:
        return float(_edp_score([res.metrics["energy_pj"]], [res.metrics["latency_cycles"]])[0])

    assert np.isclose(score(cut), best)  # the result is the best of what it evaluated
    assert score(full) <= score(cut)


def test_small_mapspace_is_used_up_not_looped_on():
    """A budget far above the mapspace's size: the search stops, having evaluated every mapping of the
    brute-force enumeration (distinct up to where factor-1 loops sit) exactly once."""
    from mapper_configs import two_level
    from mapper_reference import enumerate_all

    arch, p = two_level(), matmul(2, 2, 3)
    every: set[bytes] = set()
    for b, _ in enumerate_all(p, arch):
        every |= _canonical(b)
    calls, res = _spied(p, arch, seed=0, max_evaluations=100_000)
    keys: set[bytes] = set()
    for b, _ in calls:
        k = _canonical(b)
        assert len(k) == len(b) and not keys & k  # none twice
        keys |= k
    assert keys == every and res.mappings_evaluated == len(every)
