"""VGG-16 as torchvision builds it (``torchvision.models.vgg16()``, configuration D, no batch norm),
without torchvision: 138,357,544 parameters in 32 tensors, 89 % of them in the first classifier
layer. The classic communication-bound network: its largest gradients are the first the backward
pass produces, and cost almost none of its compute."""

from __future__ import annotations

import torch
from torch import nn

#: output channels of each 3x3 convolution; "M" a 2x2 max pool
LAYERS = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M")


class VGG16(nn.Module):
    def __init__(self, num_classes: int = 1000):
        super().__init__()
        layers: list[nn.Module] = []
        channels = 3
        for v in LAYERS:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(channels, int(v), 3, padding=1), nn.ReLU(inplace=True)]
                channels = int(v)
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(7)
        self.classifier = nn.Sequential(nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(),
                                        nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(),
                                        nn.Linear(4096, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))
