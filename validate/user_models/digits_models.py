"""Two models a practitioner might write for scikit-learn's 8x8 digits, in plain PyTorch with
PyTorch's default inits; factories take ``depth`` and ``width`` as ``amutheory sweep --model`` and
``amutheory transfer --from`` call them.  Used by the plan ``validate/plans/USER_MODEL_TRANSFER.md``."""

from torch import nn


class BasicBlock(nn.Module):
    """conv-BN-ReLU-conv-BN, identity skip, ReLU after the addition (He et al.'s BasicBlock)."""

    def __init__(self, width: int):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x):
        y = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
        return (x + y).relu()


class ResNet(nn.Module):
    def __init__(self, depth: int, width: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(*[BasicBlock(width) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def resnet(depth: int = 2, width: int = 16) -> nn.Module:
    """``depth`` BasicBlocks of ``width`` channels on 1x8x8 images."""
    return ResNet(depth, width)


def mlp(depth: int = 2, width: int = 64) -> nn.Module:
    """``depth`` hidden Linear+ReLU layers of ``width`` units on the flattened 64 pixels."""
    layers, fan_in = [nn.Flatten()], 64
    for _ in range(depth):
        layers += [nn.Linear(fan_in, width), nn.ReLU()]
        fan_in = width
    return nn.Sequential(*layers, nn.Linear(fan_in, 10))
