"""ResNet-18 and ResNet-50 (224x224, 1000 classes), the field's standard reference workloads.

Source architecture: He et al., "Deep Residual Learning for Image Recognition", CVPR 2016, Table 1:
7x7/2 stem, 3x3/2 max-pool, four stages (64..512 channels; basic blocks [2,2,2,2] for ResNet-18,
bottlenecks [3,4,6,3] with 4x expansion for ResNet-50), global average pool, linear classifier.
Down-sampling stride sits on the 3x3 conv of a bottleneck ("v1.5", as most deployed ResNet-50s);
projection shortcuts (1x1 conv + BN) where the shape changes. Not simplified otherwise.
"""

from __future__ import annotations

import torch
from torch import nn

from dse.workloads.blocks import Bottleneck, conv_bn


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(conv_bn(c_in, c_out, 3, stride), conv_bn(c_out, c_out, 3, act=None))
        needs_proj = c_in != c_out or stride != 1
        self.skip = conv_bn(c_in, c_out, 1, stride, act=None) if needs_proj else nn.Identity()
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.body(x) + self.skip(x))


def _resnet(blocks: tuple[int, ...], bottleneck: bool, classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1)]
    c = 64
    for stage, n in enumerate(blocks):
        width = 64 * 2**stage
        for i in range(n):
            stride = 2 if i == 0 and stage > 0 else 1
            if bottleneck:
                layers.append(Bottleneck(c, width, 4 * width, stride))
                c = 4 * width
            else:
                layers.append(BasicBlock(c, width, stride))
                c = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, classes)]
    return nn.Sequential(*layers)


def resnet18() -> nn.Module:
    return _resnet((2, 2, 2, 2), bottleneck=False)


def resnet50() -> nn.Module:
    return _resnet((3, 4, 6, 3), bottleneck=True)
