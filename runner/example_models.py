"""Small PyTorch models the project defines itself (no torchvision, no downloaded weights).

Imported only by the compile path: this module imports torch at import time.
"""

from __future__ import annotations

import torch
from torch import nn


class Add(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x


class AddTwo(nn.Module):
    """Two inputs, one output: exercises multi-input delegates and I/O planning."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Softmax(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


class SmallCNN(nn.Module):
    """A CIFAR-sized CNN: conv/relu/pool blocks and a linear classifier."""

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.features(x), 1))


class TransformerBlock(nn.Module):
    def __init__(self, d: int, hidden: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.up = nn.Linear(d, hidden)
        self.down = nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        attn = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        x = x + self.proj(attn @ v)
        return x + self.down(torch.relu(self.up(self.norm2(x))))


class Transformer(nn.Module):
    """A stack of pre-norm blocks: large constant data, many values (benchmarks)."""

    def __init__(self, blocks: int = 48, d: int = 256, hidden: int = 1024) -> None:
        super().__init__()
        self.blocks = nn.Sequential(*(TransformerBlock(d, hidden) for _ in range(blocks)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


# name → (factory, example input shapes)
EXAMPLES: dict[str, tuple[type[nn.Module], list[tuple[int, ...]]]] = {
    "add": (Add, [(1, 8)]),
    "add2": (AddTwo, [(1, 4, 8, 8), (1, 4, 8, 8)]),
    "softmax": (Softmax, [(1, 16)]),
    "cnn": (SmallCNN, [(1, 3, 32, 32)]),
}
