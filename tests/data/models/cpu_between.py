import torch
from torch import nn


class CpuBetween(nn.Module):
    """conv → topk (a CPU kernel: the Arm backend takes no top-k) → conv: two Ethos-U delegates
    with a portable kernel between them, which a runner can build (sort has none)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 4, 3, stride=2, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x, _ = torch.topk(x, x.shape[-1], dim=-1)
        return self.conv2(x)
