"""Independent MAC/parameter count of a torch model from forward hooks (the reference for the importer).

Conventions (notes/CONTRACTS.md): conv MACs = N*K*P*Q*(C/G)*R*S from the module's actual output
shape; a transposed conv does every input pixel times every tap, N*C*H*W*(K/G)*R*S; Linear =
rows*in*out; a matmul = B*M*K*N. Parameters of a MAC layer = weight elements + bias elements as
they stand after BatchNorm folding: a conv whose output feeds a BatchNorm has a bias of K
elements whether or not it had one. A constant matmul operand (graph adjacency) counts as weights.
A LayerNorm is no MAC layer but keeps its scale and shift in the ONNX graph, so its elements count
towards the total; a BatchNorm that does not directly follow a conv (and so cannot fold) is an error.
This module only looks at torch modules and tensors; it never reads ONNX.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from dse.workloads.blocks import ConstMatMul, MatMul

MAC_MODULES = (nn.Conv1d, nn.Conv2d, nn.ConvTranspose2d, nn.Linear, MatMul, ConstMatMul)


@dataclass
class Counted:
    name: str
    kind: str
    macs: int
    weights: int
    bias: int

    @property
    def params(self) -> int:
        return self.weights + self.bias


def _macs(m: nn.Module, inputs: tuple[torch.Tensor, ...], out: torch.Tensor) -> int:
    if isinstance(m, nn.ConvTranspose2d):
        n, c, h, w = inputs[0].shape
        return n * c * h * w * (m.out_channels // m.groups) * math.prod(m.kernel_size)
    if isinstance(m, nn.Conv1d | nn.Conv2d):
        return out.numel() * (m.in_channels // m.groups) * math.prod(m.kernel_size)
    if isinstance(m, nn.Linear):
        return inputs[0].numel() // m.in_features * m.in_features * m.out_features
    a = m.matrix if isinstance(m, ConstMatMul) else inputs[0]
    return out.numel() * a.shape[-1]      # B*M*N outputs, each a K-long dot product


def _weights(m: nn.Module) -> tuple[int, int]:
    if isinstance(m, ConstMatMul):
        return m.matrix.numel(), 0
    if isinstance(m, MatMul):
        return 0, 0
    return m.weight.numel(), (m.bias.numel() if m.bias is not None else 0)


def count(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[Counted]:
    """One entry per MAC-module (or LayerNorm) call, in execution order."""
    names = {m: n for n, m in model.named_modules()}
    layers: list[Counted] = []
    by_output: dict[int, tuple[nn.Module, Counted]] = {}

    def on_mac(m: nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        weights, bias = _weights(m)
        entry = Counted(names[m], type(m).__name__, _macs(m, args, out), weights, bias)
        layers.append(entry)
        by_output[id(out)] = (m, entry)

    def on_norm(m: nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        producer = by_output.get(id(args[0]))
        if producer is None or not isinstance(producer[0], nn.Conv1d | nn.Conv2d | nn.ConvTranspose2d):
            raise ValueError(f"{names[m]}: BatchNorm not fed by a conv, cannot fold")
        producer[1].bias = m.num_features     # folded BN: the conv gets (or keeps) K biases

    def on_layernorm(m: nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        layers.append(Counted(names[m], "LayerNorm", 0, m.weight.numel(), m.bias.numel()))

    handles = []
    for m in model.modules():
        if isinstance(m, MAC_MODULES):
            handles.append(m.register_forward_hook(on_mac))
        elif isinstance(m, nn.BatchNorm1d | nn.BatchNorm2d):
            handles.append(m.register_forward_hook(on_norm))
        elif isinstance(m, nn.LayerNorm):
            handles.append(m.register_forward_hook(on_layernorm))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    return layers


def totals(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> tuple[int, int]:
    """(total MACs, total parameters after BN folding)."""
    layers = count(model, inputs)
    return sum(x.macs for x in layers), sum(x.params for x in layers)
