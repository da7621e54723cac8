"""Building blocks shared by the zoo models (imports torch: load only from a model module).

Every MAC-doing operation is an ``nn.Module`` (convs, ``nn.Linear``, :class:`MatMul`,
:class:`ConstMatMul`), so forward hooks can count each model's MACs independently of the ONNX
importer. Convolutions that feed a BatchNorm have no bias of their own: after BN folding the conv
carries a bias of K elements either way.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

Act = Callable[[], nn.Module] | None


def conv_bn(c_in: int, c_out: int, k: int = 3, stride: int = 1, groups: int = 1, act: Act = nn.ReLU,
            dim: int = 2) -> nn.Sequential:
    """Conv (same padding, no bias) -> BatchNorm -> optional activation; ``dim`` 1 or 2."""
    conv = (nn.Conv2d if dim == 2 else nn.Conv1d)(c_in, c_out, k, stride, k // 2, groups=groups, bias=False)
    norm = nn.BatchNorm2d(c_out) if dim == 2 else nn.BatchNorm1d(c_out)
    return nn.Sequential(conv, norm, *([act()] if act else []))


class Bottleneck(nn.Module):
    """Post-activation bottleneck: 1x1 reduce, 3x3 (strided), 1x1 expand, projection skip if needed.

    ResNet-50's block (He et al. 2016, stride on the 3x3 as in "ResNet v1.5") and the hourglass
    residual module (with ``mid = c_out / 2``).
    """

    def __init__(self, c_in: int, mid: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.body = nn.Sequential(conv_bn(c_in, mid, 1), conv_bn(mid, mid, 3, stride),
                                  conv_bn(mid, c_out, 1, act=None))
        needs_proj = c_in != c_out or stride != 1
        self.skip = conv_bn(c_in, c_out, 1, stride, act=None) if needs_proj else nn.Identity()
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.skip(x))


class InvertedResidual(nn.Module):
    """MobileNetV2-style block: 1x1 expand (skipped when ``expand == 1``), depthwise kxk, 1x1 project.

    Used by MobileNetV2, FBNet-C and EfficientNet-Lite; the residual add is there when the block
    keeps its shape.
    """

    def __init__(self, c_in: int, c_out: int, expand: int, k: int = 3, stride: int = 1,
                 act: Act = nn.ReLU6) -> None:
        super().__init__()
        hidden = c_in * expand
        layers = [conv_bn(c_in, hidden, 1, act=act)] if expand != 1 else []
        layers += [conv_bn(hidden, hidden, k, stride, groups=hidden, act=act), conv_bn(hidden, c_out, 1, act=None)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


class MatMul(nn.Module):
    """``a @ b`` between two activations (attention's QK^T and PV), a module so hooks see it."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


class ConstMatMul(nn.Module):
    """``M @ x`` with a fixed matrix M (a graph adjacency or mesh up-sampling), stored as a buffer.

    In ONNX this is a MatMul whose first operand is an initializer: the matrix is weight data the
    accelerator must hold, so the hook counter counts its elements as parameters.
    """

    def __init__(self, matrix: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("matrix", matrix)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.matmul(self.matrix, x)


def randomize_norms(model: nn.Module, gen: torch.Generator) -> None:
    """Give every BatchNorm non-trivial statistics and affine terms, so BN folding is visible."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(n, generator=gen))
                m.weight.copy_(0.5 + torch.rand(n, generator=gen))
                m.bias.copy_(0.1 * torch.randn(n, generator=gen))
