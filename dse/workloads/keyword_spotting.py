"""Keyword spotting: res8-narrow on MFCCs (12 classes).

Source architecture: Tang & Lin, "Deep Residual Learning for Small-Footprint Keyword Spotting",
ICASSP 2018, res8-narrow: a 3x3 conv to 19 channels, a 4x3 average pool, three residual blocks of
two 3x3 convs (19 channels), global average pool, a 12-way linear layer (7 convs + 1 FC, the 8
layers XRBench's KD_res8_narrow lists). Input: 98 frames x 40 MFCCs, as XRBench lists.

Simplified: each conv is conv-BN-ReLU with the add before the block's last ReLU (the paper applies
ReLU then BN, which does not fold into the conv); no BN after the first conv.
"""

from __future__ import annotations

import torch
from torch import nn

from dse.workloads.blocks import conv_bn

CHANNELS = 19
CLASSES = 12


class ResBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(conv_bn(CHANNELS, CHANNELS), conv_bn(CHANNELS, CHANNELS, act=None))
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(x + self.body(x))


def keyword_spotting() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, CHANNELS, 3, padding=1, bias=False), nn.ReLU(), nn.AvgPool2d((4, 3)),
                         *[ResBlock() for _ in range(3)],
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(CHANNELS, CLASSES))
