"""Property: on random conv chains with BatchNorm, bias Add and activations, folding and fusion never
change the MAC total (checked against onnxruntime's output shapes), leave no BatchNormalization or
fusible activation behind a single-consumer conv, and account for every ONNX node exactly once."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper

from compiler.frontend import import_onnx
from tests.frontend.onnx_builders import FLOAT, const, save, weight

AFTER = ["BatchNormalization", "Bias", "Relu", "Sigmoid", "Tanh", "Relu6", "MaxPool", "none"]


@settings(max_examples=15, deadline=None)
@given(stages=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3), st.lists(st.sampled_from(AFTER), max_size=3)),
                       min_size=1, max_size=4))
def test_folding_preserves_macs_and_accounts_for_every_node(tmp_path_factory, stages):
    nodes, inits, convs = [], [], []
    t, c = "x", 2
    for i, (k, kernel, after) in enumerate(stages):
        nodes.append(helper.make_node("Conv", [t, f"w{i}"], [f"c{i}"], name=f"conv{i}",
                                      pads=[kernel // 2] * 4))
        inits.append(weight(f"w{i}", k, c, kernel, kernel, seed=i))
        convs.append((f"c{i}", c * kernel * kernel))
        t, c = f"c{i}", k
        for j, op in enumerate(after):
            out, name = f"{t}_{j}", f"s{i}_{j}"
            if op == "BatchNormalization":
                names = [f"{name}_{p}" for p in "sbmv"]
                inits += [weight(n, k, seed=j) for n in names[:3]] + [const(names[3], np.ones(k, np.float32))]
                nodes.append(helper.make_node(op, [t, *names], [out], name=name))
            elif op == "Bias":
                inits.append(weight(f"{name}_b", 1, k, 1, 1))
                nodes.append(helper.make_node("Add", [t, f"{name}_b"], [out], name=name))
            elif op == "Relu6":
                inits += [const(f"{name}_lo", np.float32(0)), const(f"{name}_hi", np.float32(6))]
                nodes.append(helper.make_node("Clip", [t, f"{name}_lo", f"{name}_hi"], [out], name=name))
            elif op == "MaxPool":
                nodes.append(helper.make_node(op, [t], [out], name=name, kernel_shape=[1, 1]))
            elif op == "none":
                continue
            else:
                nodes.append(helper.make_node(op, [t], [out], name=name))
            t = out
    path = save(tmp_path_factory.mktemp("chain") / "m.onnx", nodes, [("x", FLOAT, [1, 2, 6, 6])],
                [(t, FLOAT, None)], inits)
    wl = import_onnx(path)

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    model_outputs = [name for name, _ in convs]
    m = onnx.load(str(path))
    m.graph.output.extend(helper.make_empty_tensor_value_info(n) for n in model_outputs if n != t)
    sess = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
    values = dict(zip([o.name for o in sess.get_outputs()],
                      sess.run(None, {"x": np.zeros((1, 2, 6, 6), np.float32)})))
    # independent: each conv output element is a dot product over C x kernel taps
    assert wl.total_macs == sum(values[name].size * taps for name, taps in convs)

    covered = [n for x in wl.layers() for n in x.onnx_nodes]
    assert len(covered) == len(set(covered))  # no node in two layers
    assert set(covered) | set(wl.folded) == {n.name for n in nodes}
    assert [(x.kind, x.post_ops) for x in wl.layers()] == _expected_layers(stages)


def _expected_layers(stages) -> list[tuple[str, list[str]]]:
    """The fusion rules replayed by hand: BN / bias fold into a conv that has no post-op yet; an
    activation joins whatever layer precedes it (a conv or a vector layer); anything else is a layer."""
    layers: list[tuple[str, list[str]]] = []
    for _, _, after in stages:
        layers.append(("mac", []))
        for op in after:
            kind, posts = layers[-1]
            if op == "none":
                continue
            if op in ("BatchNormalization", "Bias") and kind == "mac" and not posts:
                continue
            if op in ("Relu", "Sigmoid", "Tanh", "Relu6"):
                posts.append(op)
                continue
            layers.append(("vector", []))
    return layers
