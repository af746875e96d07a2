"""Networks used across the chapters. Models only compute: no loops, optimisers or I/O.

Every constructor takes ``in_channels`` and ``num_classes`` (and ``image_size`` where the
flattened width depends on it) so the same architecture runs on CIFAR (3x32x32) and on
Fashion-MNIST (1x28x28). ``width`` multiplies every hidden width (rounded, at least 1).

Served chapters: 04 (ResNet-20, BasicCNN, MLP), 06 (ResNet-20/44, BasicCNN), and later ones.
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F
from torch import nn

CIFAR_RESNET_DEPTHS = (8, 14, 20, 32, 44, 56, 110)  # depth = 6n + 2


def _scaled(channels: int, width: float) -> int:
    return max(1, int(round(channels * width)))


# ----------------------------------------------------------------------------- CIFAR ResNet
class _PadShortcut(nn.Module):
    """He et al. (2016) option A: stride-2 subsample and zero-pad channels (no parameters)."""

    def __init__(self, in_planes: int, out_planes: int, stride: int):
        super().__init__()
        self.stride = stride
        extra = out_planes - in_planes
        self.pad = (extra // 2, extra - extra // 2)

    def forward(self, x):
        x = x[:, :, :: self.stride, :: self.stride]
        return F.pad(x, (0, 0, 0, 0, *self.pad))


class BasicBlock(nn.Module):
    """Post-activation block: conv-BN-ReLU-conv-BN, add shortcut, ReLU (digest gap G12)."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        needs_shortcut = stride != 1 or in_planes != planes
        self.shortcut = _PadShortcut(in_planes, planes, stride) if needs_shortcut else nn.Identity()

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class CifarResNet(nn.Module):
    """CIFAR ResNet of He et al. (2016, sec. 4.2): 3 stages of n blocks, widths 16/32/64.

    Depth 6n+2: ResNet-20 (n=3, 272,474 parameters on CIFAR-10), ResNet-44 (n=7). Kaiming-normal
    init of conv and linear weights, as the thesis's code base (seed 004, digest section 4).
    Module names follow ``layer1..layer3[block].conv1/conv2`` (used by figs 5.10-5.13).
    """

    def __init__(self, depth: int = 20, in_channels: int = 3, num_classes: int = 10,
                 width: float = 1.0):
        super().__init__()
        if (depth - 2) % 6 != 0 or depth < 8:
            raise ValueError(f"CIFAR ResNet depth must be 6n+2 with n >= 1, got {depth}")
        n = (depth - 2) // 6
        widths = [_scaled(c, width) for c in (16, 32, 64)]
        self.conv1 = nn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        stages, in_planes = [], widths[0]
        for i, planes in enumerate(widths):
            blocks = []
            for b in range(n):
                blocks.append(BasicBlock(in_planes, planes, stride=2 if (i > 0 and b == 0) else 1))
                in_planes = planes
            stages.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3 = stages
        self.fc = nn.Linear(widths[2], num_classes)
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)  # (B, C)
        return self.fc(x)


# ----------------------------------------------------------------------------- ResNet-9
def _conv_bn(c_in: int, c_out: int, pool: bool = False) -> nn.Sequential:
    layers = [nn.Conv2d(c_in, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class _Residual(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.body = nn.Sequential(_conv_bn(channels, channels), _conv_bn(channels, channels))

    def forward(self, x):
        return x + self.body(x)


class ResNet9(nn.Module):
    """The DAWNBench ResNet-9 (Page, 2018): prep 64, then 128(+res), 256, 512(+res), pool, fc."""

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: float = 1.0):
        super().__init__()
        c = [_scaled(k, width) for k in (64, 128, 256, 512)]
        self.features = nn.Sequential(
            _conv_bn(in_channels, c[0]),
            _conv_bn(c[0], c[1], pool=True), _Residual(c[1]),
            _conv_bn(c[1], c[2], pool=True),
            _conv_bn(c[2], c[3], pool=True), _Residual(c[3]),
            nn.AdaptiveMaxPool2d(1), nn.Flatten(),
        )
        self.fc = nn.Linear(c[3], num_classes, bias=False)

    def forward(self, x):
        return self.fc(self.features(x))


# ----------------------------------------------------------------------------- BasicCNN, MLP
class BasicCNN(nn.Module):
    """Seed 004 appendix D: three stride-2 conv-BN-ReLU blocks (32 channels), then a linear head.

    24,714 parameters on CIFAR-10. On 28x28 inputs the maps are 4x4 as on 32x32, so the head
    is the same 512 -> classes ("BasicCNN-FM" of the digest's section 6).
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: float = 1.0,
                 image_size: int = 32):
        super().__init__()
        c = _scaled(32, width)
        self.conv1 = nn.Conv2d(in_channels, c, 3, 2, 1)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, 2, 1)
        self.bn2 = nn.BatchNorm2d(c)
        self.conv3 = nn.Conv2d(c, c, 3, 2, 1)
        self.bn3 = nn.BatchNorm2d(c)
        side = image_size
        for _ in range(3):
            side = (side + 2 - 3) // 2 + 1  # conv output size, k=3, s=2, p=1
        self.fc = nn.Linear(c * side * side, num_classes)

    def blocks(self, x) -> list[torch.Tensor]:
        """Post-ReLU outputs of the three blocks (the R_l of seed 004 fig 5.12)."""
        h1 = F.relu(self.bn1(self.conv1(x)))
        h2 = F.relu(self.bn2(self.conv2(h1)))
        h3 = F.relu(self.bn3(self.conv3(h2)))
        return [h1, h2, h3]

    def forward(self, x):
        return self.fc(self.blocks(x)[-1].flatten(1))


class MLP(nn.Module):
    """Fully connected ReLU network on flattened inputs."""

    def __init__(self, in_features: int, num_classes: int = 10, hidden: tuple[int, ...] = (64, 64),
                 width: float = 1.0):
        super().__init__()
        sizes = [in_features, *[_scaled(h, width) for h in hidden]]
        layers: list[nn.Module] = [nn.Flatten()]
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


# ----------------------------------------------------------------------------- registry
MODEL_NAMES = ("basic_cnn", "mlp", "resnet9") + tuple(f"resnet{d}" for d in CIFAR_RESNET_DEPTHS)


def check_model_name(name: str) -> str:
    """Return ``name`` if it is a known model, else raise ``ValueError`` listing the names."""
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    return name


def build_model(name: str, *, in_channels: int = 3, num_classes: int = 10, width: float = 1.0,
                image_size: int = 32, hidden: tuple[int, ...] = (64, 64)) -> nn.Module:
    """Build a model by name.

    Args:
        name: one of ``MODEL_NAMES`` (``resnet20``, ``resnet44``, ``resnet9``, ``basic_cnn``, ``mlp``...).
        in_channels: input channels (3 for CIFAR, 1 for (Fashion-)MNIST).
        num_classes: output logits.
        width: multiplier of every hidden width.
        image_size: input side in pixels (sets the MLP input and the BasicCNN head).
        hidden: MLP hidden sizes before ``width``.

    Raises:
        ValueError: unknown name or non-positive sizes.
    """
    check_model_name(name)
    if width <= 0 or in_channels < 1 or num_classes < 1 or image_size < 1:
        raise ValueError(f"invalid sizes: width={width}, in_channels={in_channels}, "
                         f"num_classes={num_classes}, image_size={image_size}")
    if m := re.fullmatch(r"resnet(\d+)", name):
        if int(m.group(1)) in CIFAR_RESNET_DEPTHS:
            return CifarResNet(int(m.group(1)), in_channels, num_classes, width)
        return ResNet9(in_channels, num_classes, width)
    if name == "basic_cnn":
        return BasicCNN(in_channels, num_classes, width, image_size)
    return MLP(in_channels * image_size * image_size, num_classes, hidden, width)


def num_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
