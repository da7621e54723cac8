"""Whole models: a small CNN bit-exact end to end; token protocol checked on compiled programs."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compiler.compile import compile_full
from compiler.isa import Load
from compiler.sim import simulate
from compiler.sim.check import check_outputs
from compiler.sim.state import SimError
from compiler.target import Target
from tests.compiler.models import tiny_cnn


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny CNN (3-channel stride-2 stem, max pool, depthwise, residual add, valid conv, flatten, FC)."""
    folder = tmp_path_factory.mktemp("tiny")
    src = tiny_cnn(folder / "tiny.onnx")
    compiled = compile_full(src, Target(), qdq_out=folder / "tiny.q.onnx")
    return compiled


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tiny_cnn_bit_exact_end_to_end(tiny, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, 3, 24, 20)).astype(np.float32) * 2
    name = next(t.name for t in tiny.program.io if t.direction == "input")
    result = simulate(tiny.program, {name: x})  # a float input is quantized as QuantizeLinear does
    checks = check_outputs(tiny.program, result.outputs, {name: x}, tiny.qdq_model)
    assert [c.max_lsb_ort for c in checks] == [0]
    assert result.warnings == []  # no token left over in a FIFO


def test_tiny_cnn_layers_and_debug_map(tiny):
    ops = [lay["op"] for lay in tiny.layers]
    assert ops == ["QLinearConv", "MaxPool", "QLinearConv", "QLinearConv", "QLinearAdd", "QLinearConv", "QGemm"]
    program = tiny.program
    assert set(program.debug) == set(range(len(program.instructions)))
    nodes = {e.node for e in program.debug.values()}
    assert {lay["node"] for lay in tiny.layers} <= nodes


def _first(program, kind, pred=lambda i: True):
    return next(k for k, i in enumerate(program.instructions) if isinstance(i, kind) and pred(i))


def test_removing_a_token_is_reported_as_a_race(tiny):
    """Drop the "loaded" token of the first layer's last input LOAD and the EX pop that takes it: EX then
    reads SPAD rows with nothing ordering them after LD's write -- the race detector must say so."""
    program = dataclasses.replace(tiny.program, instructions=list(tiny.program.instructions))
    ld = _first(program, Load, lambda i: i.push_next)
    ex = next(k for k in range(ld + 1, len(program.instructions))
              if getattr(program.instructions[k], "pop_prev", False))
    program.instructions[ld] = dataclasses.replace(program.instructions[ld], push_next=False)
    program.instructions[ex] = dataclasses.replace(program.instructions[ex], pop_prev=False)
    name = next(t.name for t in program.io if t.direction == "input")
    x = np.zeros((1, 3, 24, 20), np.uint8)
    with pytest.raises(SimError, match="race"):
        simulate(program, {name: x}, timing=False)


def test_removing_only_a_push_deadlocks(tiny):
    program = dataclasses.replace(tiny.program, instructions=list(tiny.program.instructions))
    ld = _first(program, Load, lambda i: i.push_next)
    program.instructions[ld] = dataclasses.replace(program.instructions[ld], push_next=False)
    name = next(t.name for t in program.io if t.direction == "input")
    with pytest.raises(SimError, match="deadlock"):
        simulate(program, {name: np.zeros((1, 3, 24, 20), np.uint8)}, timing=False)


def test_keyword_spotting_from_the_zoo_runs_race_free(tmp_path):
    """The zoo's res8-narrow: compiled from its name, written, read back and simulated from the file.
    Not asserted bit-exact: its two average pools are within 1 LSB of onnxruntime (docs/compiler.md)."""
    from compiler.compile import compile_to_file

    compiled = compile_to_file("keyword_spotting", "tpu_like", tmp_path / "kws.axb")
    assert (tmp_path / "kws.q.onnx").exists()
    ops = [lay["op"] for lay in compiled.layers]
    assert ops.count("QLinearConv") == 7 and ops.count("QLinearAdd") == 3 and ops[-1] == "QGemm"
    x = np.random.default_rng(0).standard_normal((1, 1, 98, 40)).astype(np.float32)
    from_file = simulate(tmp_path / "kws.axb", {"x": x})
    in_memory = simulate(compiled.program, {"x": x})
    assert from_file.warnings == []
    np.testing.assert_array_equal(from_file.outputs["linear"], in_memory.outputs["linear"])
