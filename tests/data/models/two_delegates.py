import torch
from torch import nn


class TwoDelegates(nn.Module):
    """conv → sort (CPU) → conv: the sort splits the graph into two Ethos-U delegates."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x, _ = torch.sort(x, dim=-1)
        return torch.relu(self.conv2(x))
