"""One small network with every Ethos-U operator family the reference tests cover (issue 22):
a strided, padded convolution, a depthwise convolution, max and average pooling, an addition
and a multiplication that broadcast a per-channel map, tanh and sigmoid (table lookups), a
concatenation, a fully connected layer and a softmax. Everything lowers to the NPU."""

import torch
from torch import nn


class NpuFamilies(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 12, 3, stride=2, padding=1)
        self.depthwise = nn.Conv2d(12, 12, 3, padding=1, groups=12)
        self.head = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = torch.relu(self.stem(x))
        b = self.depthwise(a)
        gate = torch.mean(b, dim=(2, 3), keepdim=True)  # [1, 12, 1, 1]: broadcast below
        b = (b + gate) * torch.sigmoid(gate)
        joined = torch.cat((torch.tanh(nn.functional.max_pool2d(b, 2)),
                            torch.sigmoid(nn.functional.avg_pool2d(a, 2))), dim=1)  # fmt: skip
        pooled = torch.mean(joined, dim=(2, 3))
        return torch.softmax(self.head(pooled), dim=1)
