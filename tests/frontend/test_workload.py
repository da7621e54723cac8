"""The workload graph: edges carry the activation tensors, iteration is topological, every ONNX node
is accounted for, the DataFrame has one row per layer, and the docs' op table is the code's."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import numpy as np
import onnx
from onnx import helper

from compiler.frontend import import_onnx
from compiler.frontend.optable import markdown_table
from tests.frontend.onnx_builders import FLOAT, const, save, weight

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "frontend.md"


def _branchy(path):
    # x -> conv a (K4) -> split into two convs (K2 each) -> concat -> flatten
    nodes = [
        helper.make_node("Conv", ["x", "wa"], ["a"], name="a"),
        helper.make_node("Conv", ["a", "wb"], ["b"], name="b"),
        helper.make_node("Conv", ["a", "wc"], ["c"], name="c"),
        helper.make_node("Concat", ["b", "c"], ["cat"], name="cat", axis=1),
        helper.make_node("Flatten", ["cat"], ["y"], name="flat"),
    ]
    inits = [weight("wa", 4, 3, 1, 1), weight("wb", 2, 4, 1, 1), weight("wc", 2, 4, 1, 1)]
    return save(path, nodes, [("x", FLOAT, [1, 3, 2, 2])], [("y", FLOAT, [1, 16])], inits)


def test_edges_are_tensors_with_shape_and_bytes(tmp_path):
    wl = import_onnx(_branchy(tmp_path / "b.onnx"))
    g = wl.graph
    assert isinstance(g, nx.DiGraph)
    assert set(g.edges) == {("a", "b"), ("a", "c"), ("b", "cat"), ("c", "cat"), ("cat", "flat")}
    edge = g.edges["a", "b"]
    # tensor a: 1x4x2x2 float32 = 16 elements * 4 bytes
    assert (edge["tensor"], edge["shape"], edge["bytes"]) == ("a", (1, 4, 2, 2), 64)
    assert g.nodes["cat"]["layer"].kind == "layout"
    order = [x.name for x in wl.layers()]
    assert order.index("a") < order.index("b") < order.index("cat") < order.index("flat")
    assert wl.inputs == {"x": (1, 3, 2, 2)} and wl.outputs == {"y": (1, 16)}
    # MACs: a 4*3*4 = 48; b and c 2*4*4 = 32 each
    assert [x.macs for x in wl.mac_layers()] == [48, 32, 32] and wl.total_macs == 112


def test_dataframe_one_row_per_layer(tmp_path):
    wl = import_onnx(_branchy(tmp_path / "b.onnx"))
    df = wl.to_dataframe()
    assert list(df["name"]) == [x.name for x in wl.layers()]
    assert {"name", "op_type", "kind", "dims", "macs", "params", "input_shapes", "output_shapes"} <= set(df.columns)
    assert df["macs"].sum() == wl.total_macs and df["params"].sum() == wl.total_params
    assert df.loc[df["name"] == "a", "dims"].item() == "N1 G1 K4 C3 P2 Q2 R1 S1"


def test_every_node_of_a_foreign_model_is_accounted_for():
    path = LIGHT / "light_squeezenet.onnx"
    wl = import_onnx(path)
    names = {n.name or f"{n.op_type}_{i}" for i, n in enumerate(onnx.load(str(path)).graph.node)}
    covered = {n for x in wl.layers() for n in x.onnx_nodes} | set(wl.folded)
    assert covered == names
    assert nx.is_directed_acyclic_graph(wl.graph) and nx.is_weakly_connected(wl.graph)


def test_gather_kinds_depend_on_the_indices(tmp_path):
    # embedding lookup (dynamic indices into a constant table) is vector work with the table as weights;
    # a constant-index gather is a layout op
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
             helper.make_node("Gather", ["e", "pick"], ["y"], name="pick", axis=1)]
    inits = [weight("table", 10, 4), const("pick", np.array([0, 2], np.int64))]
    p = save(tmp_path / "g.onnx", nodes, [("ids", onnx.TensorProto.INT64, [1, 3])], [("y", FLOAT, None)], inits)
    layers = {x.name: x for x in import_onnx(p).layers()}
    assert (layers["embed"].kind, layers["embed"].weights, layers["embed"].vector_ops) == ("vector", 40, 12)
    assert layers["pick"].kind == "layout" and layers["pick"].output_shapes == ((1, 2, 4),)


def test_docs_op_table_matches_the_code():
    text = DOCS.read_text()
    begin, end = "<!-- optable:begin -->", "<!-- optable:end -->"
    embedded = text[text.index(begin) + len(begin):text.index(end)].strip()
    assert embedded == markdown_table()
