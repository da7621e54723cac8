"""MobileNetV2 (224x224, 1000 classes), a standard reference for depthwise-separable accelerators.

Source architecture: Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
CVPR 2018, Table 2 (width 1.0): 32-channel stride-2 stem, 17 inverted-residual blocks, 1x1 conv to
1280, global average pool, linear classifier. Not simplified, apart from dropout (inference).
"""

from __future__ import annotations

from torch import nn

from dse.workloads.blocks import InvertedResidual, conv_bn

# (expansion t, channels c, repeats n, first stride s), the paper's Table 2.
TABLE = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))


def mobilenet_v2(classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, 32, 3, 2, act=nn.ReLU6)]
    c = 32
    for t, c_out, n, s in TABLE:
        for i in range(n):
            layers.append(InvertedResidual(c, c_out, t, 3, s if i == 0 else 1))
            c = c_out
    layers += [conv_bn(c, 1280, 1, act=nn.ReLU6), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, classes)]
    return nn.Sequential(*layers)
