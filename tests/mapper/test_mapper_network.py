"""Network mapping: shapes solved once, vector layers costed, totals are the layers' sums."""

import itertools

import networkx as nx
import pytest

from compiler.frontend.workload import Layer, Workload
from costmodel.arch import load_architecture
from costmodel.errors import UserError
from costmodel.problem import conv2d, matmul
from costmodel.vector import layer_cost, post_ops_pj
from dse.mappers import map_layer
from dse.mappers.network import map_model


def _workload():
    conv = conv2d(4, 4, 6, 6, kernel=3, padding=1)
    fc = matmul(1, 16, 8, kind="fc")
    g = nx.DiGraph()
    layers = [
        Layer("conv1", "Conv", "mac", conv, ((1, 4, 6, 6),), ((1, 4, 6, 6),), macs=conv.macs, post_ops=["Relu"],
              vector_ops=4 * 36),
        Layer("conv2", "Conv", "mac", conv, ((1, 4, 6, 6),), ((1, 4, 6, 6),), macs=conv.macs),
        Layer("pool", "MaxPool", "vector", None, ((1, 4, 6, 6),), ((1, 4, 3, 3),), vector_ops=4 * 9 * 4),
        Layer("flat", "Flatten", "layout", None, ((1, 4, 3, 3),), ((1, 36),)),
        Layer("fc", "Gemm", "mac", fc, ((1, 16),), ((1, 8),), macs=fc.macs),
    ]
    for a in layers:
        g.add_node(a.name, layer=a)
    for a, b in itertools.pairwise(layers):
        g.add_edge(a.name, b.name)
    return Workload("toy", g, {"x": (1, 4, 6, 6)}, {"y": (1, 8)})


def test_map_model_shares_shapes_and_sums():
    arch = load_architecture("tiny")
    w = _workload()
    res = map_model(w, arch, max_evaluations=2000)
    assert res.shapes_searched == 2
    names = [x.name for x in res.layers]
    assert names == ["conv1", "conv2", "pool", "fc"]  # the Flatten view costs nothing
    c1, c2, pool, _fc = res.layers
    assert c1.mapping == c2.mapping and c2.mappings_evaluated == 0  # solved once
    alone = map_layer(w.layer("conv1").problem, arch, max_evaluations=2000)
    assert c2.energy_pj == pytest.approx(alone.metrics["energy_pj"])
    assert c1.energy_pj == pytest.approx(alone.metrics["energy_pj"] + post_ops_pj(arch, 4 * 36))
    assert pool.energy_pj == pytest.approx(layer_cost(arch, w.layer("pool"))["energy_pj"])
    t = res.totals()
    assert t["energy_pj"] == pytest.approx(sum(x.energy_pj for x in res.layers))
    assert t["latency_s"] == pytest.approx(sum(x.latency_s for x in res.layers))
    assert t["edp"] == pytest.approx(t["energy_pj"] * t["latency_s"])
    df = res.to_dataframe()
    assert list(df["name"]) == names and df["energy_share"].sum() == pytest.approx(1.0)
    again = map_model(w, arch, max_evaluations=2000, workers=2)
    assert [x.mapping for x in again.layers] == [x.mapping for x in res.layers]


def test_unknown_layer_name():
    with pytest.raises(UserError, match="no layer named 'conv9'"):
        map_model(_workload(), load_architecture("tiny"), layer="conv9")


def test_database_answers_repeated_queries(tmp_path):
    from dse.mappers.db import MappingDB

    arch = load_architecture("tiny")
    db = MappingDB(tmp_path / "m.sqlite")
    p = conv2d(4, 4, 6, 6, kernel=3, padding=1)
    first = map_layer(p, arch, db=db, max_evaluations=1500)
    again = map_layer(p, arch, db=db, max_evaluations=1500)
    assert not first.from_cache and again.from_cache
    assert again.mapping == first.mapping and again.metrics == first.metrics
    assert again.mappings_evaluated == first.mappings_evaluated
    other = map_layer(p, arch, "energy", db=db, max_evaluations=1500)  # another objective: a new search
    assert not other.from_cache and len(db) == 2
    w = _workload()
    net1 = map_model(w, arch, db=db, max_evaluations=1500)
    net2 = map_model(w, arch, db=MappingDB(tmp_path / "m.sqlite"), max_evaluations=1500)
    assert net1.extra["from_database"] == 1  # the conv shape was stored above, the fc was not
    assert net2.extra["from_database"] == 2 and net2.shapes_searched == 0
    assert [x.mapping for x in net2.layers] == [x.mapping for x in net1.layers]


def test_database_path_error(tmp_path):
    from dse.mappers.db import MappingDB

    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="cannot open the mapping database"):
        MappingDB(tmp_path / "f" / "m.sqlite")
