"""A stand-in of torchvision.models.resnet18 (the ResNet-18 layout: conv1, bn1, relu, maxpool, layer1-4 of two
basic blocks, avgpool, fc), built from the run's own framework's ``nn``, untrained (``weights=None`` only)."""

from __future__ import annotations

from typing import Any

from _framework import framework


def _block(nn: Any, cin: int, cout: int, stride: int) -> Any:
    class BasicBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            return self.relu(self.bn2(self.conv2(out)) + identity)

    return BasicBlock()


def resnet18(weights: Any = None, num_classes: int = 1000, **_: Any) -> Any:
    """An untrained ResNet-18 of the current framework."""
    if weights is not None:
        raise ValueError("corpus torchvision stand-in: no pretrained weights (no download); use weights=None")
    fw = framework()
    nn = fw.nn

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU(inplace=True)
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
            for k, (cin, cout, stride) in enumerate(widths, 1):
                setattr(self, f"layer{k}", nn.Sequential(_block(nn, cin, cout, stride), _block(nn, cout, cout, 1)))
            self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x: Any) -> Any:
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(fw.flatten(self.avgpool(x), 1))

    return ResNet()
