"""A small model whose Ethos-U lowering uses the NPU operations the CNN does not: a strided
and a dilated depthwise convolution, a residual add, a sigmoid (a LUT activation), a
multiplication by a constant, a max and an average pool."""

import torch
from torch import nn


class NpuMix(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.depthwise = nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=16)
        self.dilated = nn.Conv2d(16, 16, 3, padding=2, dilation=2, groups=16)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = self.depthwise(x)
        x = x + torch.sigmoid(self.dilated(x)) * 0.5
        x = nn.functional.max_pool2d(x, 2)
        x = nn.functional.adaptive_avg_pool2d(x, 1)
        return self.head(torch.flatten(x, 1))
