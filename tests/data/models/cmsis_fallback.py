import torch
from torch import nn


class StrideFourFallback(nn.Module):
    """conv → relu on the NPU, then a stride-4 convolution the Ethos-U55 does not take (as in
    upstream's "Ethos-U55 with CMSIS-NN fallback" example): a CPU fallback that the portable
    kernels run in float between (de)quantize calls, and the Cortex-M backend as one
    CMSIS-NN int8 convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=4, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(torch.relu(self.conv1(x)))
