"""A small model whose Ethos-U lowering uses what the CNN and npu_mix do not: tanh and
sigmoid (table lookups), a concatenation, a fully connected layer and a softmax (Vela's
sequence of int32 sums, table lookups and transposes)."""

import torch
from torch import nn


class NpuTables(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 12, 3, padding=1)
        self.head = nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.stem(x)
        joined = torch.cat((torch.tanh(a), torch.sigmoid(a)), dim=1)
        pooled = torch.mean(joined, dim=(2, 3))
        return torch.softmax(self.head(pooled), dim=1)
