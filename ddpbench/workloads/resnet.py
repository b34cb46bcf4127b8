"""ResNet-50 as torchvision builds it (``torchvision.models.resnet50()``), without torchvision,
and its bottleneck relatives (ResNet-101, ResNeXt-50 32x4d, ResNeXt-101 32x8d) through :func:`resnet`.

ResNet v1.5: a bottleneck block strides in its 3x3 convolution, not its first 1x1. With 1000
classes ResNet-50 has 25,557,032 parameters in 161 tensors and takes 4.1 GMAC (8.2 GFLOP) per
224x224 image forward. Module names, construction order and initialisation follow torchvision's,
so a state dict loads into either and the same seed draws the same weights.
"""

from __future__ import annotations

import torch
from torch import nn

#: bottleneck blocks per stage
STAGES = (3, 4, 6, 3)
#: torchvision's bottleneck networks: blocks per stage, groups of the 3x3 convolution, width per group
VARIANTS = {
    "resnet50": ((3, 4, 6, 3), 1, 64),
    "resnet101": ((3, 4, 23, 3), 1, 64),
    "resnext50_32x4d": ((3, 4, 6, 3), 32, 4),
    "resnext101_32x8d": ((3, 4, 23, 3), 32, 8),
}


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (carrying the stride), 1x1 expand by 4; the shortcut projects when shapes change."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64):
        super().__init__()
        out = planes * self.expansion
        width = int(planes * base_width / 64) * groups
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


def make_stage(inplanes: int, planes: int, blocks: int, stride: int, groups: int = 1,
               base_width: int = 64) -> nn.Sequential:
    """``blocks`` bottlenecks; the first strides and projects its shortcut (built first, as torchvision does)."""
    out = planes * Bottleneck.expansion
    downsample = None
    if stride != 1 or inplanes != out:
        downsample = nn.Sequential(nn.Conv2d(inplanes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))
    layers = [Bottleneck(inplanes, planes, stride, downsample, groups, base_width)]
    layers += [Bottleneck(out, planes, groups=groups, base_width=base_width) for _ in range(blocks - 1)]
    return nn.Sequential(*layers)


class ResNet50(nn.Module):
    """ResNet-50 by default; other ``stages``, ``groups`` and ``base_width`` give the rest of :data:`VARIANTS`."""

    def __init__(self, num_classes: int = 1000, stages: tuple[int, ...] = STAGES, groups: int = 1,
                 base_width: int = 64):
        super().__init__()
        shape = {"groups": groups, "base_width": base_width}
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = make_stage(64, 64, stages[0], stride=1, **shape)
        self.layer2 = make_stage(256, 128, stages[1], stride=2, **shape)
        self.layer3 = make_stage(512, 256, stages[2], stride=2, **shape)
        self.layer4 = make_stage(1024, 512, stages[3], stride=2, **shape)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)  # PyTorch's default Linear init
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet(name: str, num_classes: int = 1000) -> ResNet50:
    """One of :data:`VARIANTS` by its torchvision name."""
    stages, groups, width = VARIANTS[name]
    return ResNet50(num_classes, stages, groups, width)
