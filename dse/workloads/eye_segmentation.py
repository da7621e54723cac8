"""Eye segmentation: a RITnet-style dense U-Net (4 classes: background, sclera, iris, pupil).

Source architecture: Chaudhary et al., "RITnet: Real-time Semantic Segmentation of the Eye for
Gaze Tracking", ICCVW 2019: five DenseNet-style down blocks and four up blocks of 32 channels,
average-pool down-sampling, nearest up-sampling, skip concatenation, LeakyReLU; 42 convs, as in
XRBench's ES_RITNet listing. Input: XRBench's listed 160x100 (Y x X), one channel -- a quarter of
RITnet's native 640x400 -- so pooling uses ceil mode (100 -> 50 -> 25 -> 13 -> 7, the sizes
XRBench lists) and each up block resizes to its skip's size.

Simplified: one BatchNorm per down block placed before the block's last LeakyReLU (RITnet puts it
after, where it cannot fold into the conv); dropout removed (inference).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dse.workloads.blocks import conv_bn

C = 32
CLASSES = 4


def _conv(c_in: int, c_out: int, k: int) -> nn.Conv2d:
    return nn.Conv2d(c_in, c_out, k, padding=k // 2)


class DownBlock(nn.Module):
    """Dense block: each 3x3 sees the concatenation of the block input and all earlier outputs."""

    def __init__(self, c_in: int, pool: bool) -> None:
        super().__init__()
        self.pool = nn.AvgPool2d(2, ceil_mode=True) if pool else nn.Identity()
        self.conv1 = _conv(c_in, C, 3)
        self.conv21, self.conv22 = _conv(c_in + C, C, 1), _conv(C, C, 3)
        self.conv31 = _conv(c_in + 2 * C, C, 1)
        self.conv32 = conv_bn(C, C, 3, act=nn.LeakyReLU)
        self.act = nn.LeakyReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(x)
        x21 = torch.cat((x, self.act(self.conv1(x))), dim=1)
        x31 = torch.cat((x21, self.act(self.conv22(self.conv21(x21)))), dim=1)
        return self.conv32(self.conv31(x31))


class UpBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv11, self.conv12 = _conv(2 * C, C, 1), _conv(C, C, 3)
        self.conv21, self.conv22 = _conv(3 * C, C, 1), _conv(C, C, 3)
        self.act = nn.LeakyReLU()

    def forward(self, skip: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(x, size=skip.shape[-2:], mode="nearest")
        x = torch.cat((x, skip), dim=1)
        x21 = torch.cat((x, self.act(self.conv12(self.conv11(x)))), dim=1)
        return self.act(self.conv22(self.conv21(x21)))


class RITnet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.down = nn.ModuleList([DownBlock(1, pool=False)] + [DownBlock(C, pool=True) for _ in range(4)])
        self.up = nn.ModuleList(UpBlock() for _ in range(4))
        self.out = nn.Conv2d(C, CLASSES, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for block in self.down:
            x = block(x)
            skips.append(x)
        for block, skip in zip(self.up, reversed(skips[:-1]), strict=True):
            x = block(skip, x)
        return self.out(x)


def eye_segmentation() -> nn.Module:
    return RITnet()
