"""Speech encoder: Emformer-style transformer layers over one 128-frame segment.

Source architecture: Shi et al., "Emformer: Efficient Memory Transformer Based Acoustic Model for
Low Latency Streaming Speech Recognition", ICASSP 2021: d_model 512, 8 heads, FFN 2048, 24 layers
in XRBench's ASR_EM_24L, whose listing per layer is Q (512->512), fused K/V (512->1024), output
projection (512->512) and the FFN (512->2048->512). Attention is written out by hand (linear
projections, batched matmuls QK^T and PV, softmax) so each matmul is a visible layer.

Simplified: 4 layers instead of 24 (MACs scale linearly with the count); no memory bank, left
context cache or right-context frames -- plain self-attention over the segment; pre-LayerNorm,
ReLU FFN; no dropout. Input is frames x features (128 x 512) without a batch axis.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from dse.workloads.blocks import MatMul

D_MODEL = 512
HEADS = 8
FFN = 2048
LAYERS = 4


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(D_MODEL, D_MODEL)
        self.kv = nn.Linear(D_MODEL, 2 * D_MODEL)
        self.out = nn.Linear(D_MODEL, D_MODEL)
        self.scores, self.context = MatMul(), MatMul()
        self.scale = 1.0 / math.sqrt(D_MODEL // HEADS)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[0]
        heads = (t, HEADS, D_MODEL // HEADS)
        q = (self.q(x) * self.scale).reshape(heads).transpose(0, 1)          # [H, T, dh]
        k, v = self.kv(x).chunk(2, dim=-1)
        k = k.reshape(heads).permute(1, 2, 0)                                # [H, dh, T]
        v = v.reshape(heads).transpose(0, 1)                                 # [H, T, dh]
        p = torch.softmax(self.scores(q, k), dim=-1)                         # [H, T, T]
        return self.out(self.context(p, v).transpose(0, 1).reshape(t, D_MODEL))


class EncoderLayer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
        self.attn = SelfAttention()
        self.ffn = nn.Sequential(nn.Linear(D_MODEL, FFN), nn.ReLU(), nn.Linear(FFN, D_MODEL))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.ffn(self.norm2(x))


def speech_encoder() -> nn.Module:
    return nn.Sequential(*[EncoderLayer() for _ in range(LAYERS)], nn.LayerNorm(D_MODEL))
