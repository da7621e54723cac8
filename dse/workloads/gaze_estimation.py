"""Gaze estimation: an FBNet-C backbone on the eye crop.

Source architecture: Wu et al., "FBNet: Hardware-Aware Efficient ConvNet Design via Differentiable
Neural Architecture Search", CVPR 2019, FBNet-C (searched inverted-residual blocks, depthwise 3x3
or 5x5, expansion 1/3/6). The block table below is the one XRBench's GE_FBNet_C listing encodes
(its 63 layers, with FBNet-C's "skip" block dropped); XRBench keeps the 1000-way classifier, and
so does this model.

Simplified: FBNet-C's grouped 1x1 convs with channel shuffle (its ``_g2`` blocks) are plain 1x1s,
as in XRBench's listing; ReLU everywhere; no dropout. Depthwise convs are real depthwise convs
(groups = channels), which XRBench's MAESTRO listing cannot express.
"""

from __future__ import annotations

from torch import nn

from dse.workloads.blocks import InvertedResidual, conv_bn

# (expansion, kernel, out channels, stride) per block, in order.
BLOCKS = (
    (1, 3, 16, 1),
    (6, 3, 24, 2), (1, 3, 24, 1), (1, 3, 24, 1),
    (6, 5, 32, 2), (3, 5, 32, 1), (6, 5, 32, 1), (6, 3, 32, 1),
    (6, 5, 64, 2), (3, 5, 64, 1), (6, 5, 64, 1), (6, 5, 64, 1),
    (6, 5, 112, 1), (6, 5, 112, 1), (6, 5, 112, 1), (3, 5, 112, 1),
    (6, 5, 184, 2), (6, 5, 184, 1), (6, 5, 184, 1), (6, 5, 184, 1),
    (6, 3, 352, 1),
)


def gaze_estimation(classes: int = 1000) -> nn.Module:
    layers: list[nn.Module] = [conv_bn(3, 16, 3, 2)]
    c = 16
    for expand, k, c_out, stride in BLOCKS:
        layers.append(InvertedResidual(c, c_out, expand, k, stride, act=nn.ReLU))
        c = c_out
    layers += [conv_bn(c, 1984, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1984, classes)]
    return nn.Sequential(*layers)
