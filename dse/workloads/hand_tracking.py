"""Hand tracking: a stacked-hourglass 2-D backbone plus a graph-CNN mesh head.

Source architecture: Ge et al., "3D Hand Shape and Pose Estimation from a Single RGB Image",
CVPR 2019 -- a two-stack hourglass network (Newell et al., ECCV 2016) predicts 21 joint heatmaps;
a residual encoder turns heatmaps and features into a latent vector; a graph CNN regresses the
hand mesh. The backbone follows XRBench's HT_hand_graph_cnn_half listing layer for layer: 7x7/64
stem, bottlenecks (mid 128, out 256), depth-4 hourglasses with two residual modules per position,
21 heatmaps at 32x32 and the 1x1 re-injection convs between stacks.

Simplified: post-activation bottlenecks (conv-BN-ReLU, so BN folds into the convs) instead of
pre-activation ones; the latent encoder is four strided bottlenecks and a global pool; the graph
CNN is three first-order graph convs (A_hat X W, Kipf & Welling 2017) on a ring-lattice coarse mesh
of 80 -> 160 -> 320 vertices with fixed up-sampling matrices, in place of Chebyshev convs on the
1280-vertex mesh. Adjacency and up-sampling are dense matmuls with constant matrices.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dse.workloads.blocks import Bottleneck, ConstMatMul, conv_bn

JOINTS = 21
FEATURES = 256
VERTICES = 80      # coarsest mesh level
VERTEX_FEATURES = 64


def _modules(c: int, n: int = 2) -> nn.Sequential:
    return nn.Sequential(*[Bottleneck(c, c // 2, c) for _ in range(n)])


class Hourglass(nn.Module):
    """Recursive hourglass: ``up1(x) + upsample(low3(low2(low1(pool(x)))))``."""

    def __init__(self, depth: int, c: int) -> None:
        super().__init__()
        self.up1, self.low1, self.low3 = _modules(c), _modules(c), _modules(c)
        self.low2 = Hourglass(depth - 1, c) if depth > 1 else _modules(c)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        low = self.low3(self.low2(self.low1(self.pool(x))))
        return self.up1(x) + F.interpolate(low, scale_factor=2.0, mode="nearest")


def ring_adjacency(v: int, hops: int = 2) -> torch.Tensor:
    """Symmetrically normalised adjacency (with self loops) of a ring where each vertex sees ``hops`` each side."""
    idx = torch.arange(v)
    dist = (idx[:, None] - idx[None, :]).abs()
    a = (torch.minimum(dist, v - dist) <= hops).float()
    d = a.sum(1).rsqrt()
    return d[:, None] * a * d[None, :]


def upsampling(v: int) -> torch.Tensor:
    """[2v, v]: vertex 2i copies parent i, vertex 2i+1 averages parents i and i+1."""
    u = torch.zeros(2 * v, v)
    i = torch.arange(v)
    u[2 * i, i] = 1.0
    u[2 * i + 1, i] = 0.5
    u[2 * i + 1, (i + 1) % v] = 0.5
    return u


class GraphConv(nn.Module):
    """``A_hat @ (X W + b)`` on a fixed graph."""

    def __init__(self, vertices: int, c_in: int, c_out: int) -> None:
        super().__init__()
        self.lin = nn.Linear(c_in, c_out)
        self.adj = ConstMatMul(ring_adjacency(vertices))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.adj(self.lin(x))


class HandTracking(nn.Module):
    def __init__(self, stacks: int = 2) -> None:
        super().__init__()
        c = FEATURES
        self.stem = nn.Sequential(conv_bn(3, 64, 7, 2), Bottleneck(64, 64, 128), nn.MaxPool2d(2),
                                  Bottleneck(128, 64, 128), Bottleneck(128, 128, c))
        self.hourglasses = nn.ModuleList(Hourglass(4, c) for _ in range(stacks))
        self.post = nn.ModuleList(_modules(c) for _ in range(stacks))
        self.fc = nn.ModuleList(conv_bn(c, c, 1) for _ in range(stacks))
        self.score = nn.ModuleList(nn.Conv2d(c, JOINTS, 1) for _ in range(stacks))
        self.fc_back = nn.ModuleList(nn.Conv2d(c, c, 1) for _ in range(stacks - 1))
        self.score_back = nn.ModuleList(nn.Conv2d(JOINTS, c, 1) for _ in range(stacks - 1))
        self.encoder = nn.Sequential(Bottleneck(c + JOINTS, c // 2, c, 2),
                                     *[Bottleneck(c, c // 2, c, 2) for _ in range(3)],
                                     nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.latent = nn.Linear(c, VERTICES * VERTEX_FEATURES)
        self.gc1 = GraphConv(VERTICES, VERTEX_FEATURES, VERTEX_FEATURES)
        self.up1 = ConstMatMul(upsampling(VERTICES))
        self.gc2 = GraphConv(2 * VERTICES, VERTEX_FEATURES, VERTEX_FEATURES // 2)
        self.up2 = ConstMatMul(upsampling(2 * VERTICES))
        self.gc3 = GraphConv(4 * VERTICES, VERTEX_FEATURES // 2, 3)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.stem(x)
        for i, hourglass in enumerate(self.hourglasses):
            y = self.fc[i](self.post[i](hourglass(x)))
            heatmaps = self.score[i](y)
            if i < len(self.fc_back):
                x = x + self.fc_back[i](y) + self.score_back[i](heatmaps)
        z = self.latent(self.encoder(torch.cat((y, heatmaps), dim=1)))
        v = self.relu(self.gc1(z.reshape(VERTICES, VERTEX_FEATURES)))
        v = self.relu(self.gc2(self.up1(v)))
        mesh = self.gc3(self.up2(v))
        return heatmaps, mesh


def hand_tracking() -> nn.Module:
    return HandTracking()
