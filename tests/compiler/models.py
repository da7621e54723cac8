"""Small float models for the compiler tests, built with torch and exported once per test session."""

from __future__ import annotations

from pathlib import Path


def tiny_cnn(path: Path, seed: int = 0) -> Path:
    """First layer with 3 channels, stride 2, max pool, a residual add, depthwise 3x3, 1x1 conv, FC.

    Spatial: 3x24x20 -> conv3x3 s2 p1 -> 20x12x10 -> maxpool2 -> 20x6x5 -> (dw3x3 -> 1x1) + skip ->
    conv 6x5 valid -> 24x1x1 -> flatten -> linear 10. Every op has an integer kernel in onnxruntime."""
    import torch
    from torch import nn

    from compiler.frontend import export_onnx

    torch.manual_seed(seed)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 20, 3, stride=2, padding=1), nn.ReLU(), nn.MaxPool2d(2))
            self.body = nn.Sequential(nn.Conv2d(20, 20, 3, padding=1, groups=20), nn.ReLU6(), nn.Conv2d(20, 20, 1))
            self.head = nn.Sequential(nn.Conv2d(20, 24, (6, 5)), nn.ReLU(), nn.Flatten(), nn.Linear(24, 10))

        def forward(self, x):
            y = self.stem(x)
            return self.head(torch.relu(y + self.body(y)))

    return export_onnx(Net().eval(), (torch.randn(1, 3, 24, 20),), path)
