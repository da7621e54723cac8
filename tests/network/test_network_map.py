"""map_model: equal shapes solved once, determinism, totals = sum of layers, database answers."""

from __future__ import annotations

import pytest

import dse.network.solve as solve_mod
from costmodel.errors import UserError
from costmodel.evaluate import evaluate
from costmodel.vector import layer_cost
from dse.api import load_hw
from dse.network import map_model
from tests.network.helpers import FAST, workload


@pytest.fixture(scope="module")
def tiny():
    return load_hw("tiny")


def _strip(doc: dict) -> dict:
    """The document without timing fields (which differ between runs)."""
    doc = {k: v for k, v in doc.items() if k != "search_seconds"}
    doc["layers"] = [{k: v for k, v in x.items() if k != "search_seconds"} for x in doc["layers"]]
    return doc


def test_equal_shapes_are_searched_once(tiny, monkeypatch) -> None:
    calls = []
    real = solve_mod.run_search

    def counting(search, arch=None):
        calls.append(search.problem)
        return real(search, arch)

    monkeypatch.setattr(solve_mod, "run_search", counting)
    res = map_model(workload(), tiny, db=False, workers=1, progress=False, **FAST)
    assert len(calls) == 2  # conv_a == conv_b (same Problem), plus the matmul
    assert len(set(calls)) == 2
    by = {x.name: x for x in res.layers}
    assert by["conv_b"].same_as == "conv_a"
    assert by["conv_b"].mapping == by["conv_a"].mapping
    assert by["conv_b"].mappings_evaluated == 0 and by["conv_a"].mappings_evaluated > 0
    assert res.searched == 2


def test_same_seed_same_answer_for_any_worker_count(tiny) -> None:
    one = map_model(workload(), tiny, db=False, workers=1, progress=False, seed=3, **FAST).to_dict()
    two = map_model(workload(), tiny, db=False, workers=2, progress=False, seed=3, **FAST).to_dict()
    again = map_model(workload(), tiny, db=False, workers=1, progress=False, seed=3, **FAST).to_dict()
    assert _strip(one) == _strip(two) == _strip(again)


def test_totals_are_the_sum_of_the_layers(tiny) -> None:
    res = map_model(workload(), tiny, db=False, workers=1, progress=False, **FAST)
    wl = workload()
    energy = cycles = macs = 0.0
    for layer, r in zip(wl.layers(), res.layers):
        assert layer.name == r.name
        if layer.kind == "mac":
            ev = evaluate(layer.problem, tiny, r.mapping)  # re-evaluate the returned mapping
            # fused post-op: 288 ReLUs at one MAC's energy each (tiny has no vector unit)
            energy += ev.energy_pj + layer.vector_ops * tiny.mac.energy_pj
            cycles += ev.latency_cycles
            macs += layer.problem.macs
        elif layer.op_type != "Reshape":
            c = layer_cost(tiny, layer)
            energy += c["energy_pj"]
            cycles += c["latency_cycles"]
    tot = res.totals
    assert tot["energy_pj"] == pytest.approx(energy, rel=1e-12)
    assert tot["latency_cycles"] == cycles
    assert tot["latency_s"] == pytest.approx(cycles / tiny.clock_hz)
    assert tot["macs"] == macs == 2 * 8 * 4 * 36 * 9 + 8 * 16 * 12
    assert tot["edp"] == pytest.approx(energy * cycles / tiny.clock_hz)
    assert tot["utilization"] == pytest.approx(macs / (4 * cycles))
    assert tot["power_mw"] == pytest.approx(energy * 1e-9 / (cycles / tiny.clock_hz))
    df = res.to_dataframe()
    assert list(df["name"]) == [x.name for x in wl.layers()]
    assert df["energy_share"].sum() == pytest.approx(1.0)
    assert df["latency_share"].sum() == pytest.approx(1.0)


def test_second_run_comes_from_the_database(tiny, tmp_path) -> None:
    db = tmp_path / "m.sqlite"
    first = map_model(workload(), tiny, db=db, workers=1, progress=False, **FAST)
    second = map_model(workload(), tiny, db=db, workers=1, progress=False, **FAST)
    assert (first.searched, first.from_db) == (2, 0)
    assert (second.searched, second.from_db) == (0, 2)
    assert second.search_seconds == 0.0 and second.totals["mappings_evaluated"] == 0
    assert all(x.from_db for x in second.layers if x.kind == "mac")
    assert [x.mapping for x in first.layers] == [x.mapping for x in second.layers]
    assert first.totals["energy_pj"] == second.totals["energy_pj"]
    # a different seed or objective is a different question
    assert map_model(workload(), tiny, db=db, workers=1, progress=False, seed=1, **FAST).searched == 2
    assert map_model(workload(), tiny, db=db, workers=1, progress=False, objective="energy", **FAST).searched == 2


def test_layer_selection_and_unknown_layer(tiny) -> None:
    res = map_model(workload(), tiny, db=False, workers=1, progress=False, layer="mm", **FAST)
    assert [x.name for x in res.layers] == ["mm"]
    with pytest.raises(UserError, match="'nope': no such layer in toy"):
        map_model(workload(), tiny, db=False, progress=False, layer="nope")
    with pytest.raises(UserError, match="mapper: expected one of"):
        map_model(workload(), tiny, db=False, progress=False, mapper="magic")


def test_a_layer_without_valid_mapping_is_named(tmp_path) -> None:
    from tests.network.helpers import REPO

    # the rf (2 words, double-buffered: 1 usable) must keep I, W and O: no tile of any layer fits
    text = (REPO / "hwconfigs/tiny.yaml").read_text().replace("capacity: 16\n", "capacity: 2\n")
    (tmp_path / "small.yaml").write_text(text + "constraints:\n  - {level: rf, keep: [I, W, O]}\n")
    small = load_hw(tmp_path / "small.yaml")
    with pytest.raises(UserError, match=r"layer (conv_a|mm).*level rf needs at least \d+ words"):
        map_model(workload(), small, db=False, workers=1, progress=False, **FAST)


def test_workers_beyond_the_cores_count_as_one_per_core(tiny, monkeypatch) -> None:
    """`--workers 10000` started a process per layer; on one core now no pool is started at all."""
    solve_mod.shutdown_pool()
    monkeypatch.setattr(solve_mod, "default_workers", lambda: 1)
    res = map_model(workload(), tiny, db=False, workers=10_000, progress=False, seed=3, **FAST)
    assert solve_mod._POOL is None and res.searched == 2


@pytest.mark.parametrize(("cpu_max", "cpus"), [("50000 100000\n", 1), ("max 100000\n", None)])
def test_a_cgroup_cpu_quota_caps_the_workers(monkeypatch, cpu_max: str, cpus: int | None) -> None:
    """In a container limited to half a CPU (cgroup v2 ``cpu.max``: quota and period in µs) one per
    core is one, whatever the host's cores and the affinity say; ``max`` is no quota. The cgroup
    files are faked where dask reads them (it opens them by name)."""
    import builtins
    import io
    import os

    import dask.system

    files = {"/proc/self/cgroup": "0::/dse-test\n", "/sys/fs/cgroup/dse-test/cpu.max": cpu_max}

    def fake_open(path, *args, **kwargs):
        if str(path) in files:
            return io.StringIO(files[str(path)])
        if "cgroup" in str(path):
            raise FileNotFoundError(path)  # (no cgroup v1 files)
        return builtins.open(path, *args, **kwargs)

    monkeypatch.setattr(dask.system, "open", fake_open, raising=False)
    cores = len(os.sched_getaffinity(0))
    assert solve_mod.default_workers() == (min(cores, cpus) if cpus else cores)
    assert solve_mod.worker_count(8) == (min(cores, cpus) if cpus else min(cores, 8))


def test_a_recurrent_layer_is_mapped_one_step_at_a_time(tmp_path):
    """An LSTM's h_gates (step t needs h[t-1]) had been mapped as one matmul over all T steps, which
    put T in inner loops and reused the weights across steps: 346 cycles for T = 16 on tpu_like,
    where one step alone takes 290. Now: one step's best mapping, run T times."""
    from onnx import TensorProto, helper

    from compiler.frontend import import_onnx
    from costmodel.arch import load_architecture
    from dse.network import best_mapping
    from tests.frontend.onnx_builders import save, weight

    steps, hidden, size = 16, 32, 16
    node = helper.make_node("LSTM", ["x", "W", "R", "B"], ["Y"], name="lstm", hidden_size=hidden)
    inits = [weight("W", 1, 4 * hidden, size), weight("R", 1, 4 * hidden, hidden), weight("B", 1, 8 * hidden)]
    path = save(tmp_path / "lstm.onnx", [node], [("x", TensorProto.FLOAT, [steps, 1, size])],
                [("Y", TensorProto.FLOAT, None)], inits)
    wl, tpu = import_onnx(path), load_architecture("tpu_like")
    h_layer = next(x for x in wl.layers() if x.name == "lstm/h_gates")
    res = map_model(wl, tpu, db=False, workers=1, progress=False, **FAST)
    h = next(x for x in res.layers if x.name == "lstm/h_gates")
    step = best_mapping(h_layer.attrs["step_problem"], tpu, db=False, **FAST)
    assert h.metrics["recurrent_steps"] == steps and h.problem == h_layer.attrs["step_problem"]
    assert h.metrics["latency_cycles"] == steps * step.metrics["latency_cycles"]
    assert h.metrics["energy_pj"] == pytest.approx(steps * step.metrics["energy_pj"])
    assert h.metrics["macs"] == h_layer.macs == steps * 4 * hidden * hidden
    assert h.metrics["utilization"] == pytest.approx(step.metrics["utilization"])
    reads = h.metrics["accesses"]["DRAM"]["W"]["reads"]
    assert reads == steps * step.metrics["accesses"]["DRAM"]["W"]["reads"] >= steps * 4 * hidden * hidden
