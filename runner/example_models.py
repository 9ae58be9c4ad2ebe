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


class MlpMath(nn.Module):
    """An MLP with a tanh hidden layer and a head of exp, erf and rsqrt: on the CPU, every one
    of these is a kernel upstream defines through a macro (op_tanh.cpp and friends)."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Linear(16, 32)
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.head(torch.tanh(self.hidden(x)))
        return torch.erf(y) + torch.exp(-torch.abs(y)) * torch.rsqrt(y * y + 1.0)


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


class InvertedResidual(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: list[nn.Module] = []
        if expand != 1:
            layers += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        layers += [
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        ]
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetV2Like(nn.Module):
    """MobileNetV2's layer shapes (inverted residuals, ReLU6, depthwise convs), random
    weights: torchvision is not installed and no weights can be downloaded here."""

    SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip

    def __init__(self, num_classes: int = 1000, width: float = 1.0) -> None:
        super().__init__()
        channels = int(32 * width)
        layers: list[nn.Module] = [
            nn.Conv2d(3, channels, 3, 2, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU6(),
        ]  # fmt: skip
        for expand, cout, repeats, stride in self.SETTINGS:
            cout = int(cout * width)
            for i in range(repeats):
                layers.append(InvertedResidual(channels, cout, stride if i == 0 else 1, expand))
                channels = cout
        last = int(1280 * max(width, 1.0))
        layers += [nn.Conv2d(channels, last, 1, bias=False), nn.BatchNorm2d(last), nn.ReLU6()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(last, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


# name → (factory, example input shapes)
EXAMPLES: dict[str, tuple[type[nn.Module], list[tuple[int, ...]]]] = {
    "add": (Add, [(1, 8)]),
    "add2": (AddTwo, [(1, 4, 8, 8), (1, 4, 8, 8)]),
    "softmax": (Softmax, [(1, 16)]),
    "mlp_math": (MlpMath, [(1, 16)]),
    "cnn": (SmallCNN, [(1, 3, 32, 32)]),
    "mv2": (MobileNetV2Like, [(1, 3, 224, 224)]),
}
