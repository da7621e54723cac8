"""Action segmentation: ED-TCN, a temporal encoder-decoder of 1-D convolutions (11 classes).

Source architecture: Lea et al., "Temporal Convolutional Networks for Action Segmentation and
Detection", CVPR 2017, ED-TCN: two encoder layers (conv1d k=25 with 64 and 96 filters, each
followed by max-pool 2), two decoder layers (up-sample x2, conv1d k=25 with 96 and 64 filters),
then a per-frame classifier. Input: 668 frames x 128 features, as XRBench's AS_ED_TCN lists.
Classes: 11 (GTEA, one of the paper's datasets).

Simplified: ReLU in place of the paper's normalised ReLU (ReLU divided by the per-frame max);
the per-frame fully connected layer is the equivalent 1x1 conv; no dropout.
"""

from __future__ import annotations

from torch import nn

K = 25
CLASSES = 11


def _conv(c_in: int, c_out: int) -> nn.Module:
    return nn.Sequential(nn.Conv1d(c_in, c_out, K, padding=K // 2), nn.ReLU())


def action_segmentation() -> nn.Module:
    return nn.Sequential(_conv(128, 64), nn.MaxPool1d(2), _conv(64, 96), nn.MaxPool1d(2),
                         nn.Upsample(scale_factor=2.0, mode="nearest"), _conv(96, 96),
                         nn.Upsample(scale_factor=2.0, mode="nearest"), _conv(96, 64),
                         nn.Conv1d(64, CLASSES, 1))
