"""A model for compile tests whose middle op has no Ethos-U lowering: conv → sort → conv.
The partitioner leaves ``sort`` on the CPU (``aten::sort.values``), around two delegates."""

import torch
from torch import nn


class SortNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(3, 4, 3, padding=1)
        self.b = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.sort(torch.relu(self.a(x)), dim=-1)[0])


def make_sort_net() -> nn.Module:
    return SortNet()
