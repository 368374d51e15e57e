"""The PopTorch MNIST tutorial's network, layer for layer, its softmax before ``CrossEntropyLoss``
included: that double softmax is why a large learning rate stalls at chance instead of exploding
(``record.py``), and labkit keeps it because the exercise is to reproduce the course's numbers.
"""

from __future__ import annotations

from typing import Optional

import torch
import torch.nn as nn

__all__ = ["Block", "Network", "TrainingModelWithLoss", "build_model"]


class Block(nn.Module):
    def __init__(self, in_channels: int, num_filters: int, kernel_size: int, pool_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.pool(self.conv(x)))


class Network(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer1 = Block(1, 32, 3, 2)
        self.layer2 = Block(32, 64, 3, 2)
        self.layer3 = nn.Linear(1600, 128)
        self.layer3_act = nn.ReLU()
        self.layer3_dropout = nn.Dropout(0.5)
        self.layer4 = nn.Linear(128, 10)
        self.softmax = nn.Softmax(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.layer2(self.layer1(x))
        x = x.reshape(-1, 1600)  # the tutorial's view(), also valid for channels-last input
        x = self.layer3_act(self.layer3(x))
        x = self.layer4(self.layer3_dropout(x))
        return self.softmax(x)


class TrainingModelWithLoss(nn.Module):
    """The tutorial's wrapper: PopTorch needs the loss computed inside the model."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()

    def forward(self, args: torch.Tensor, loss_inputs: Optional[torch.Tensor] = None):
        output = self.model(args)
        if loss_inputs is None:
            return output
        return output, self.loss(output, loss_inputs)


def build_model(seed: int, device: torch.device) -> TrainingModelWithLoss:
    """The tutorial's network with its loss, initialised from ``seed`` (the same seed gives the same weights);
    channels-last on a CPU, where oneDNN's convolutions run faster that way."""
    torch.manual_seed(seed)
    model = TrainingModelWithLoss(Network())
    model = model.to(device)
    if device.type == "cpu":
        model = model.to(memory_format=torch.channels_last)
    return model
