"""Depth estimation: MiDaS v2.1 small (EfficientNet-Lite3 encoder + RefineNet-style fusion decoder).

Source architecture: Ranftl et al., "Towards Robust Monocular Depth Estimation: Mixing Datasets
for Zero-shot Cross-dataset Transfer", TPAMI 2022, the v2.1 "small" model: an EfficientNet-Lite3
encoder (Tan & Le, ICML 2019; width 1.2, depth 1.4, ReLU6, fixed 32-channel stem, first and last
stage not deepened) tapped at strides 4/8/16/32 (32/48/136/384 channels), 3x3 convs expanding the
taps to 64/128/256/512, four fusion blocks (residual conv units, bilinear x2 up-sampling, 1x1
out-conv halving the width), and a head of 3x3 conv, x2 up-sampling, 3x3 conv, 1x1 conv to one
depth channel. Input 192x256, XRBench's DE_midas_v21_small size (its listing's head runs at 192x256).

Simplified: no squeeze-excite (EfficientNet-Lite drops it too); the encoder's final 1x1 head conv
and classifier, unused by MiDaS, are absent.
"""

from __future__ import annotations

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from dse.workloads.blocks import InvertedResidual, conv_bn

# EfficientNet-Lite3 stages: (expansion, kernel, out channels, stride, repeats).
STAGES = ((1, 3, 24, 1, 1), (6, 3, 32, 2, 3), (6, 5, 48, 2, 3), (6, 3, 96, 2, 5),
          (6, 5, 136, 1, 5), (6, 5, 232, 2, 6), (6, 3, 384, 1, 1))
TAPS = (2, 3, 5, 7)             # the encoder is tapped after these many stages
WIDTHS = (64, 128, 256, 512)    # MiDaS "expand" widths of the four taps


def _stage(c_in: int, expand: int, k: int, c_out: int, stride: int, repeats: int) -> nn.Sequential:
    blocks = [InvertedResidual(c_in if i == 0 else c_out, c_out, expand, k, stride if i == 0 else 1)
              for i in range(repeats)]
    return nn.Sequential(*blocks)


def _up(x: torch.Tensor) -> torch.Tensor:
    return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=True)


class ResidualConvUnit(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv2(self.relu(self.conv1(self.relu(x))))


class Fusion(nn.Module):
    """``out_conv(up(rcu2(x + rcu1(skip))))``; the deepest block has no skip."""

    def __init__(self, c: int, c_out: int, has_skip: bool) -> None:
        super().__init__()
        self.rcu1 = ResidualConvUnit(c) if has_skip else None
        self.rcu2 = ResidualConvUnit(c)
        self.out_conv = nn.Conv2d(c, c_out, 1)

    def forward(self, x: torch.Tensor, skip: torch.Tensor | None = None) -> torch.Tensor:
        if self.rcu1 is not None and skip is not None:
            x = x + self.rcu1(skip)
        return self.out_conv(_up(self.rcu2(x)))


class MidasSmall(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        stages: list[nn.Module] = []
        c = 32
        for expand, k, c_out, stride, repeats in STAGES:
            stages.append(_stage(c, expand, k, c_out, stride, repeats))
            c = c_out
        bounds = (0, *TAPS)
        self.stem = conv_bn(3, 32, 3, 2, act=nn.ReLU6)
        self.encoder = nn.ModuleList(nn.Sequential(*stages[a:b]) for a, b in pairwise(bounds))
        tap_channels = [STAGES[t - 1][2] for t in TAPS]
        self.expand = nn.ModuleList(nn.Conv2d(ci, co, 3, padding=1, bias=False)
                                    for ci, co in zip(tap_channels, WIDTHS, strict=True))
        outs = (64, *WIDTHS[:-1])   # each fusion halves the width, the last keeps 64
        self.fusion = nn.ModuleList(Fusion(w, o, has_skip=i < 3)
                                    for i, (w, o) in enumerate(zip(WIDTHS, outs, strict=True)))
        self.head = nn.Sequential(nn.Conv2d(64, 32, 3, padding=1), nn.Upsample(scale_factor=2.0, mode="bilinear",
                                  align_corners=True), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                                  nn.Conv2d(32, 1, 1), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        taps = []
        for stage, expand in zip(self.encoder, self.expand, strict=True):
            x = stage(x)
            taps.append(expand(x))
        y = self.fusion[3](taps[3])
        for i in (2, 1, 0):
            y = self.fusion[i](y, taps[i])
        return self.head(y)


def depth_estimation() -> nn.Module:
    return MidasSmall()
