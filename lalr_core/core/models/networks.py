"""Networks used across the chapters. Models only compute: no loops, optimisers or I/O.

Every constructor takes ``in_channels`` and ``num_classes`` (and ``image_size`` where the
flattened width depends on it) so the same architecture runs on CIFAR (3x32x32) and on
Fashion-MNIST (1x28x28). ``width`` multiplies every hidden width (rounded, at least 1).

Served chapters: 04 (ResNet-20, BasicCNN, MLP), 06 (ResNet-20/44, BasicCNN), and later ones;
seed 004 chapter 5 adds the torchvision ImageNet models (``*_tv``, Table 5.3 footnote 3), the
BasicCNN with skips of appendix I, and the Barlow Twins trunk (fig 5.8). The fig 5.8/5.9
self-supervised and generative models live in ``lalr_core.core.models.ssl`` and are re-exported here.
Seed 001 (TempBalance) adds the ``*_cifar`` models of ``lalr_core.core.models.cifar``: ResNet-18/34/
101/152, VGG-19, DenseNet-40, WRN-28-10 and MobileNetV2 with 3x3 stride-1 stems.
"""

from __future__ import annotations

import itertools
import re

import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.models.cifar import CIFAR_MODEL_NAMES, build_cifar_model
from lalr_core.core.models.ssl import BarlowTwins, PoissonVAE, barlow_twins_loss, poisson_vae_loss
from lalr_core.core.models.widths import scaled_channels

__all__ = [
    "CIFAR_MODEL_NAMES", "MLP", "MODEL_NAMES", "TORCHVISION_NAMES", "BarlowTwins", "BasicCNN",
    "BasicCNNSkip", "CifarResNet", "PoissonVAE", "ResNet9", "barlow_twins_loss",
    "basic_cnn_trunk", "build_model", "check_model_name", "num_parameters", "poisson_vae_loss",
]

CIFAR_RESNET_DEPTHS = (8, 14, 20, 32, 44, 56, 110)  # depth = 6n + 2
# torchvision constructors of seed 004 Table 5.3 footnote 3; build_model names them "<arch>_tv"
TORCHVISION_ARCHS = ("resnet18", "resnet34", "resnet50", "densenet121", "densenet161",
                     "resnext50_32x4d", "wide_resnet50_2")
TORCHVISION_NAMES = tuple(f"{arch}_tv" for arch in TORCHVISION_ARCHS)


_scaled = scaled_channels  # one rule for every model


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
    """Post-activation block: conv-BN-ReLU-conv-BN, add shortcut, ReLU (the thesis's footnote and code;
    its text says pre-activation)."""

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

    Depth 6n+2: ResNet-20 (n=3, 269,722 parameters on CIFAR-10), ResNet-44 (n=7). Kaiming-normal
    init of conv and linear weights, as the thesis's code base (seed 004, ``[Tuddenham2026]``).
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
    is the same 512 -> classes (our "BasicCNN-FM").

    ``batch_norm=False`` (model ``basic_cnn_nobn``, not a source model) makes every ``bn*`` an
    identity: conv (with bias) then ReLU. Without batch norm a filter whose ReLU is off on the
    whole batch gets an exactly zero gradient, the mechanism behind seed 004's fig 5.13.
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: float = 1.0,
                 image_size: int = 32, batch_norm: bool = True):
        super().__init__()
        c = _scaled(32, width)
        norm = nn.BatchNorm2d if batch_norm else (lambda _: nn.Identity())
        self.conv1 = nn.Conv2d(in_channels, c, 3, 2, 1)
        self.bn1 = norm(c)
        self.conv2 = nn.Conv2d(c, c, 3, 2, 1)
        self.bn2 = norm(c)
        self.conv3 = nn.Conv2d(c, c, 3, 2, 1)
        self.bn3 = norm(c)
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


class BasicCNNSkip(BasicCNN):
    """BasicCNN with skip connections, for seed 004 appendix I (figs I.1/I.2).

    The thesis does not define it; our construction: block 1 is
    BasicCNN's, blocks 2 and 3 become ``y = AvgPool2d(2)(x) + ReLU(BN(Conv_s2(x)))``. BN and
    ReLU sit between the weight and the addition, so the skip breaks the filter-permutation
    symmetry as appendix I.2 requires (a skip added right after a single linear map does not,
    eqs. I.4-I.7). The pool uses ``ceil_mode`` so a 7x7 map (28x28 inputs) pools to 4x4, the
    conv's output size; on even sides it is the plain 2x2 average.

    Parameters, their names and the head are BasicCNN's (24,714 on CIFAR-10): the skip adds none.
    """

    def blocks(self, x) -> list[torch.Tensor]:
        """Outputs of the three blocks, blocks 2 and 3 after the skip addition."""
        h1 = F.relu(self.bn1(self.conv1(x)))
        h2 = F.avg_pool2d(h1, 2, ceil_mode=True) + F.relu(self.bn2(self.conv2(h1)))
        h3 = F.avg_pool2d(h2, 2, ceil_mode=True) + F.relu(self.bn3(self.conv3(h2)))
        return [h1, h2, h3]


def basic_cnn_trunk(in_channels: int = 1, image_size: int = 28,
                    width: float = 1.0) -> tuple[nn.Module, int]:
    """BasicCNN without its linear head: the Barlow Twins trunk of seed 004 fig 5.8 (our reduction).

    Args:
        in_channels: input channels (1 for Fashion-MNIST).
        image_size: input side in pixels.
        width: multiplier of the 32 channels.

    Returns:
        ``(trunk, out_dim)``: ``trunk`` maps `[B, in_channels, S, S]` to the flattened last
        block, `[B, out_dim]` (512 for 28x28 or 32x32 at width 1). Parameter names stay
        ``conv1``/``bn1``/...; ``fc`` is an ``nn.Identity``.
    """
    trunk = BasicCNN(in_channels, 1, width, image_size)
    out_dim = trunk.fc.in_features
    trunk.fc = nn.Identity()
    return trunk, out_dim


class MLP(nn.Module):
    """Fully connected ReLU network on flattened inputs."""

    def __init__(self, in_features: int, num_classes: int = 10, hidden: tuple[int, ...] = (64, 64),
                 width: float = 1.0):
        super().__init__()
        sizes = [in_features, *[_scaled(h, width) for h in hidden]]
        layers: list[nn.Module] = [nn.Flatten()]
        for a, b in itertools.pairwise(sizes):
            layers += [nn.Linear(a, b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-1], num_classes))
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


# ----------------------------------------------------------------------------- torchvision
def _densenet_min_side_ok(image_size: int) -> bool:
    """Whether a torchvision DenseNet's last 2x2 transition pool still sees a >= 1 pixel map."""
    side = (image_size + 2 * 3 - 7) // 2 + 1  # conv0: k=7, s=2, p=3
    side = (side + 2 * 1 - 3) // 2 + 1  # pool0: k=3, s=2, p=1
    return side // 2 // 2 // 2 >= 1  # three transitions, AvgPool2d(2, 2)


def _replace_stem(model: nn.Module, in_channels: int) -> None:
    """Swap the first conv (``conv1`` or ``features.conv0``) for one with ``in_channels`` inputs."""
    parent, attr = (model, "conv1") if hasattr(model, "conv1") else (model.features, "conv0")
    old = getattr(parent, attr)
    new = nn.Conv2d(in_channels, old.out_channels, old.kernel_size, old.stride, old.padding,
                    bias=old.bias is not None, device=old.weight.device, dtype=old.weight.dtype)
    # the family's own init (torchvision 0.29 models/resnet.py and models/densenet.py __init__)
    if attr == "conv1":
        nn.init.kaiming_normal_(new.weight, mode="fan_out", nonlinearity="relu")
    else:
        nn.init.kaiming_normal_(new.weight)
    setattr(parent, attr, new)


def _torchvision_model(name: str, in_channels: int, num_classes: int, width: float,
                       image_size: int) -> nn.Module:
    """torchvision's default constructor, untrained, ImageNet stem kept (seed 004 Table 5.3 fn 3).

    Deviation: the source's code kept the default 1000-way head and trained it with
    cross-entropy on the 10 CIFAR labels; we build ``num_classes`` outputs. The 990 logits
    that never receive a target are only pushed down, so training is nearly the same; the
    initial loss differs (ln 1000 = 6.9 against ln 10 = 2.3 nats), and so does the head's
    parameter count, which the thesis does not report.
    """
    if width != 1.0:
        raise ValueError(f"torchvision models have fixed widths; width must be 1.0, got {width}")
    if name.startswith("densenet") and not _densenet_min_side_ok(image_size):
        raise ValueError(f"{name} needs image_size >= 29 (ImageNet stem, 3 transition pools), "
                         f"got {image_size}")
    import torchvision  # imported here: it adds 1-3 s, and only the *_tv models need it

    model = getattr(torchvision.models, name.removesuffix("_tv"))(weights=None,
                                                                 num_classes=num_classes)
    if in_channels != 3:
        _replace_stem(model, in_channels)
    return model


# ----------------------------------------------------------------------------- registry
MODEL_NAMES = (("basic_cnn", "basic_cnn_skip", "basic_cnn_nobn", "mlp", "resnet9")
               + tuple(f"resnet{d}" for d in CIFAR_RESNET_DEPTHS) + TORCHVISION_NAMES
               + CIFAR_MODEL_NAMES)


def check_model_name(name: str) -> str:
    """Return ``name`` if it is a known model, else raise ``ValueError`` listing the names."""
    if name not in MODEL_NAMES:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    return name


def build_model(name: str, *, in_channels: int = 3, num_classes: int = 10, width: float = 1.0,
                image_size: int = 32, hidden: tuple[int, ...] = (64, 64)) -> nn.Module:
    """Build a model by name.

    Args:
        name: one of ``MODEL_NAMES``: ``resnet20``, ``resnet44``, ``resnet9``, ``basic_cnn``,
            ``basic_cnn_skip``, ``basic_cnn_nobn``, ``mlp``, ... and the torchvision models ``resnet18_tv``,
            ``resnet50_tv``, ``densenet121_tv``, ... (``TORCHVISION_NAMES``; module names are
            torchvision's, e.g. ``layer2.1.conv2``; for ``in_channels != 3`` the first conv is
            replaced by one with ``in_channels`` inputs), and the seed 001 CIFAR models
            ``resnet18_cifar`` ... ``resnet152_cifar``, ``vgg19_cifar``, ``densenet40_cifar``,
            ``wrn28_10_cifar``, ``mobilenetv2_cifar`` (``CIFAR_MODEL_NAMES``; 28x28 or 32x32).
        in_channels: input channels (3 for CIFAR, 1 for (Fashion-)MNIST).
        num_classes: output logits.
        width: multiplier of every hidden width; must be 1.0 for the torchvision models.
        image_size: input side in pixels (sets the MLP input and the BasicCNN head; the
            torchvision DenseNets need at least 29).
        hidden: MLP hidden sizes before ``width``.

    Returns:
        The untrained model, mapping `[B, in_channels, image_size, image_size]` to
        `[B, num_classes]` logits.

    Raises:
        ValueError: unknown name, non-positive sizes, ``width != 1`` for a torchvision model,
            or an image too small for a DenseNet.
    """
    check_model_name(name)
    if width <= 0 or in_channels < 1 or num_classes < 1 or image_size < 1:
        raise ValueError(f"invalid sizes: width={width}, in_channels={in_channels}, "
                         f"num_classes={num_classes}, image_size={image_size}")
    if name in TORCHVISION_NAMES:
        return _torchvision_model(name, in_channels, num_classes, width, image_size)
    if name in CIFAR_MODEL_NAMES:  # before the resnet(\d+) match below
        return build_cifar_model(name, in_channels, num_classes, width)
    if m := re.fullmatch(r"resnet(\d+)", name):
        if int(m.group(1)) in CIFAR_RESNET_DEPTHS:
            return CifarResNet(int(m.group(1)), in_channels, num_classes, width)
        return ResNet9(in_channels, num_classes, width)
    if name in ("basic_cnn", "basic_cnn_skip", "basic_cnn_nobn"):
        cls = BasicCNNSkip if name == "basic_cnn_skip" else BasicCNN
        return cls(in_channels, num_classes, width, image_size,
                   batch_norm=name != "basic_cnn_nobn")
    return MLP(in_channels * image_size * image_size, num_classes, hidden, width)


def num_parameters(model: nn.Module, trainable_only: bool = True) -> int:
    """Number of (trainable) parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)
