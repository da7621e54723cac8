"""Simulated cycles vs the analytical latency of the same mapping (issue 6), on tpu_like.

Each dense conv is lowered on its own with the mapper's tiles (compiler.lower.mapped), the
program is run on the timing simulator without computing values (``functional=False``: addresses,
tokens and races are still checked), and its cycles are compared with ``costmodel.evaluate`` of
the mapping the lowering recorded. The two models are independent code: the simulator times
instructions (DMA boxes, GEMM walks, VEC passes, tokens), the cost model times loop nests.

The cost model charges the first tile's fill, the last tile's drain and the post-GEMM vector stage
(costmodel/pipeline.py). Where they must agree within 10%: every layer of ResNet-18 and the 3x3
convs of a small CIFAR CNN. The layers of other zoo models outside the band (array and vector unit
or DMA and array balanced, where per-instruction overheads show) are the documented exceptions
(docs/validation.md, "Simulator vs analytical latency").
"""

from __future__ import annotations

import numpy as np
import pytest

from compiler.isa import Finish, Program
from compiler.lower.conv import ConvSpec, lower_conv
from compiler.lower.emitter import Emitter
from compiler.lower.mapped import Planner
from compiler.sim import simulate
from compiler.target import Target
from costmodel.arch import load_architecture


@pytest.fixture(scope="module")
def hw():
    arch = load_architecture("tpu_like")
    return arch, Target.from_arch(arch)


def _ratio(hw, cin, cout, h, w, k, stride, pad, seed=0):
    """Lower one conv with the mapper's tiles; (simulated cycles / analytical cycles, the layer record)."""
    arch, target = hw
    rng = np.random.default_rng(seed)
    em = Emitter(target, act_base=8 << 20)
    em.planner = Planner(arch, target, seed)
    x = em.new_act("x", (1, cin, h, w), 0.05, 128)
    ho, wo = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    y = em.new_act("y", (1, cout, ho, wo), 0.1, 128)
    spec = ConvSpec(w=rng.integers(-127, 128, (cout, cin, k, k)).astype(np.int8),
                    bias=rng.integers(-999, 999, cout).astype(np.int32),
                    w_scale=np.full(cout, 0.01, np.float32), stride=(stride, stride), pads=(pad,) * 4,
                    dilation=(1, 1), group=1, y_scale=0.1, y_zp=128)
    em.begin_layer("conv", "QLinearConv")
    lower_conv(em, "conv", x, spec, y)
    em.emit(Finish())
    consts = bytes(em.constants)
    assert len(consts) < 8 << 20
    program = Program(instructions=em.insns, fingerprint=target.fingerprint, constants=consts, const_base=0,
                      const_segments=em.segments, io=[], dram_size=em.act_top, debug=em.debug)
    result = simulate(program, {}, arch=target, functional=False)
    assert result.warnings == [] or all("never popped" in w for w in result.warnings)
    layer = em.layers[-1]
    return result.cycles / layer["analytical_cycles"], layer


# ResNet-18's stride-1 3x3 stages (torchvision; zoo model resnet18) and a small CIFAR-style CNN's
# 3x3 layers (32x32 input; He et al. 2016, section 4.2 layout with 64/128 channels)
RESNET18_3X3 = [(64, 64, 56, 56), (128, 128, 28, 28), (256, 256, 14, 14), (512, 512, 7, 7)]
SMALL_CNN_3X3 = [(64, 64, 32, 32), (64, 128, 16, 16), (128, 128, 16, 16)]


@pytest.mark.parametrize("cin,cout,h,w", RESNET18_3X3 + SMALL_CNN_3X3)
def test_3x3_conv_within_ten_percent(hw, cin, cout, h, w):
    ratio, layer = _ratio(hw, cin, cout, h, w, 3, 1, 1)
    assert 0.9 <= ratio <= 1.1, (ratio, layer["tiling"])


def test_recorded_mapping_is_the_lowered_tiling(hw):
    """The recorded mapping's tile (rows below DRAM) is the lowering's: the tile count equals the DRAM
    factors' product, K groups x row tiles (brute-force from the recorded mapping)."""
    arch, _ = hw
    _, layer = _ratio(hw, 128, 128, 28, 28, 3, 1, 1)
    from costmodel.mapping import Mapping
    from costmodel.problem import Problem

    problem = Problem.from_dict(layer["problem"])
    mapping = Mapping.from_dict(layer["mapping"], arch)
    dram = mapping.levels[0].temporal
    assert layer["tiles"] == dram.get("K", 1) * dram.get("P", 1)
    mapping.validate(problem, arch)


def test_mapper_constraints_fix_the_array_dims(hw):
    """Whatever the mapper picks, C sits on the array rows and K on the columns, 16 x 16."""
    _, layer = _ratio(hw, 64, 64, 14, 14, 3, 1, 1)
    from costmodel.mapping import Mapping

    acc = Mapping.from_dict(layer["mapping"], hw[0]).levels[2]  # the accumulator's fan-out: the array
    assert acc.spatial_y == {"C": 16} and acc.spatial_x == {"K": 16}


def test_resnet18_from_the_zoo(tmp_path):
    """The zoo's ResNet-18 compiled whole (mapper tiles) and timed without computing values: every
    layer (20 convs, among them the strided 1x1 downsampling convs, and the FC) within 10% of the
    analytical latency of its mapping."""
    from compiler.compile import compile_full
    from compiler.sim.check import timing_table
    from costmodel.problem import Problem
    from dse import workloads

    compiled = compile_full(workloads.export("resnet18", tmp_path / "r18.onnx"), "tpu_like")
    inp = next(t for t in compiled.program.io if t.direction == "input")
    result = simulate(compiled.program, {inp.name: np.zeros(inp.shape, np.float32)}, functional=False)
    rows = {r["node"]: r for r in timing_table(compiled.layers, result.nodes)}
    assert len(rows) == 21  # 20 convs + the FC
    assert all(0.9 <= r["ratio"] <= 1.1 for r in rows.values()), {n: r["ratio"] for n, r in rows.items()}
    three = [lay["node"] for lay in compiled.layers if "problem" in lay
             and dict(Problem.from_dict(lay["problem"]).dims).get("R") == 3
             and dict(Problem.from_dict(lay["problem"]).params)["stride"] in ((1, 1), [1, 1])]
    assert len(three) == 13  # 4 in stage 1, 3 in each later stage (their first 3x3 has stride 2)
    assert all(0.9 <= rows[n]["ratio"] <= 1.1 for n in three), {n: rows[n]["ratio"] for n in three}
