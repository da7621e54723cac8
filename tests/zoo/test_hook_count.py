"""The hook counter itself, on hand-worked layers (so the zoo test's reference is trustworthy)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from costmodel.problem import conv2d
from dse.workloads.blocks import ConstMatMul, MatMul
from tests.zoo.hook_count import count, totals


def test_strided_conv_with_batchnorm() -> None:
    # Conv 3->8, 3x3, stride 2, pad 1 on 8x8: output 4x4. MACs = N*K*P*Q*C*R*S = 1*8*4*4*3*3*3 = 3456.
    # Params: weights 8*3*3*3 = 216, no bias of its own, BN folds in 8 biases -> 224.
    model = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU()).eval()
    assert totals(model, (torch.randn(1, 3, 8, 8),)) == (3456, 224)


def test_depthwise_conv1d_and_linear_rows() -> None:
    # Depthwise conv1d, 6 channels, k=5, pad 2 on length 10: MACs = 1*6*10*(6/6)*5 = 300, params 30 + 6.
    # Linear 10->4 on a [2, 6, 10] input: rows = 12, MACs = 12*10*4 = 480, params 40 + 4.
    model = nn.Sequential(nn.Conv1d(6, 6, 5, padding=2, groups=6), nn.Linear(10, 4)).eval()
    layers = count(model, (torch.randn(2, 6, 10),))
    assert [(x.macs, x.params) for x in layers] == [(2 * 300, 36), (480, 44)]   # batch 2 doubles the conv


def test_transposed_conv_counts_input_pixels() -> None:
    # ConvTranspose 4->2, 2x2, stride 2 on 3x3: every input pixel times every tap:
    # N*C*H*W*(K/G)*R*S = 1*4*3*3*2*2*2 = 288; params 4*2*2*2 + 2 = 34.
    assert totals(nn.ConvTranspose2d(4, 2, 2, 2).eval(), (torch.randn(1, 4, 3, 3),)) == (288, 34)


def test_matmuls_and_layernorm() -> None:
    # Batched matmul [3,5,7] @ [3,7,2]: B*M*K*N = 3*5*7*2 = 210, no params.
    # Constant [4,5] @ x[5,6]: 4*5*6 = 120 MACs, the 20 matrix elements are weights.
    assert totals(MatMul(), (torch.randn(3, 5, 7), torch.randn(3, 7, 2))) == (210, 0)
    assert totals(ConstMatMul(torch.randn(4, 5)), (torch.randn(5, 6),)) == (120, 20)
    # LayerNorm(6): no MACs, 6 scales + 6 shifts.
    assert totals(nn.LayerNorm(6), (torch.randn(2, 6),)) == (0, 12)


def test_unfoldable_batchnorm_is_refused() -> None:
    model = nn.Sequential(nn.Conv2d(1, 2, 1), nn.ReLU(), nn.BatchNorm2d(2)).eval()
    with pytest.raises(ValueError, match="cannot fold"):
        count(model, (torch.randn(1, 1, 2, 2),))


@settings(max_examples=25, deadline=None)
@given(c=st.integers(1, 4), k=st.integers(1, 4), groups=st.sampled_from([1, 2]), h=st.integers(3, 9),
       w=st.integers(3, 9), r=st.integers(1, 3), stride=st.integers(1, 2), pad=st.integers(0, 1))
def test_conv_macs_agree_with_the_problem_type(c: int, k: int, groups: int, h: int, w: int, r: int,
                                               stride: int, pad: int) -> None:
    """Random conv layers: the hook count equals costmodel.problem.conv2d's loop-nest size."""
    c, k = c * groups, k * groups
    layer = nn.Conv2d(c, k, r, stride, pad, groups=groups).eval()
    macs, params = totals(layer, (torch.randn(1, c, h, w),))
    assert macs == conv2d(c, k, h, w, r, stride, pad, groups=groups).macs
    assert params == k * (c // groups) * r * r + k
