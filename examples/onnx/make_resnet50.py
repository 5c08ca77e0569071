"""Write a ResNet-50 as ONNX for the compile-time benchmark (docs/benchmarks.md): the
layers of torchvision's `resnet50()` (bottleneck blocks 3, 4, 6, 3; BatchNorm unfused;
102 MB of f32 weights), written out here so that torchvision is not needed, with seeded
random weights and BatchNorm statistics, exported by the TorchScript exporter at opset 17
with a static 1x3x224x224 input `x`. Not committed (too large); needs torch:

    python examples/onnx/make_resnet50.py /tmp/resnet50.onnx
"""

from __future__ import annotations

import sys

import torch
from torch import nn

BLOCKS = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # (width, blocks, first stride) per stage


class Bottleneck(nn.Module):
    """1x1 -> 3x3 (the stride) -> 1x1 to 4x the width, plus the input (projected when its shape changes)."""

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                           if stride != 1 or cin != cout else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet50(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for width, blocks, stride in BLOCKS:
            for index in range(blocks):
                layers.append(Bottleneck(cin, width, stride if index == 0 else 1))
                cin = 4 * width
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def main(path: str) -> None:
    torch.manual_seed(0)
    model = ResNet50().eval()
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):  # statistics other than 0 and 1, as a trained network's
            module.running_mean.uniform_(-0.1, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    torch.onnx.export(model, (torch.randn(1, 3, 224, 224),), path, opset_version=17, dynamo=False, input_names=["x"])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "resnet50.onnx")
