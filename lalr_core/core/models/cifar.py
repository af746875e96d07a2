"""CIFAR variants of the ImageNet-era networks trained by the TempBalance source (seed 001).

Chapter 2 of seed 001 trains ResNet-18/34/101/152 at width fractions {0.25, 0.5, 1, 1.5, 2,
2.5} (eq. 2.10) and VGG-19; chapter 3 prunes DenseNet-40, WideResNet-28-10 and MobileNetV2.
All of them are the CIFAR variants: a 3x3 stem with stride 1 and no max-pool, so a 32x32
input reaches the last stage at 4x4 (8x8 for DenseNet/WRN). They also run on 1x28x28
(Fashion-MNIST): every global pooling is adaptive and VGG's pools use ``ceil_mode``.

Written from the papers; the layouts follow the CIFAR code bases the source builds on
(kuangliu/pytorch-cifar for ResNet, VGG and MobileNetV2; YefanZhou/TempBalance), but no code is
copied. Init is PyTorch's default everywhere (as in those code bases). Models only compute.

``width`` multiplies every hidden width (rounded, at least 1), as in ``lalr_core.core.models.networks``.

Kept as one module (~410 lines) on purpose: its five families (35-95 lines each) share three
small private layer helpers, the configs and one builder, so a split would only make them public.

One module (over 400 lines) on purpose: the CIFAR zoo shares its stem and pooling rule, and each
network is a short class beside the others.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.models.widths import scaled_channels

__all__ = [
    "CIFAR_MODEL_NAMES", "CifarDenseNet", "CifarMobileNetV2", "CifarResNet4Stage",
    "CifarVGG", "CifarWideResNet", "build_cifar_model",
]

# blocks per stage; He et al. (2016) Table 1, kept by kuangliu/pytorch-cifar for 32x32 inputs
RESNET_BLOCKS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3),
                 152: (3, 8, 36, 3)}
VGG19_CFG = (64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
             512, 512, 512, 512, "M", 512, 512, 512, 512, "M")  # Simonyan & Zisserman config E
# MobileNetV2 (Sandler et al. 2018, Table 2) rows (t, c, n, s); the CIFAR change: row 2 s=2 -> 1
MOBILENETV2_CFG = ((1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2),
                   (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
# Our reduced zoo for seed 001's chapters (02, 02b): the same architectures, small
# enough for 8x8 digits on 2 CPU cores. R18m/R34m keep the 61/109 module layout rule.
VGG_MINI_CFG = (16, 16, "M", 32, 32, "M", 64, 64, 64, 64)
MOBILENETV2_MINI_CFG = ((2, 16, 1, 1), (2, 24, 1, 2), (2, 24, 1, 1), (2, 32, 1, 2))
MINI_MODELS = {
    "resnet18_mini": dict(cls="resnet", depth=18, planes=(16, 32, 64), blocks=(1, 1, 1)),
    "resnet34_mini": dict(cls="resnet", depth=34, planes=(16, 32, 64), blocks=(2, 2, 2)),
    "vgg_mini": dict(cls="vgg19", cfg=VGG_MINI_CFG),
    "densenet10_mini": dict(cls="densenet40", depth=10, growth=6, stem=12),
    "wrn10_1": dict(cls="wrn28_10", depth=10, widen=1),
    "mobilenetv2_mini": dict(cls="mobilenetv2", cfg=MOBILENETV2_MINI_CFG, stem=16, last=64),
}
CIFAR_MODEL_NAMES = ("resnet18_cifar", "resnet34_cifar", "resnet101_cifar", "resnet152_cifar",
                     "vgg19_cifar", "densenet40_cifar", "wrn28_10_cifar", "mobilenetv2_cifar",
                     *MINI_MODELS)


_scaled = scaled_channels  # one rule for every model


def _check_width(width: float) -> None:
    if not width > 0:
        raise ValueError(f"width must be positive, got {width}")


def _conv_bn(c_in: int, c_out: int, k: int = 3, stride: int = 1, groups: int = 1) -> list:
    return [nn.Conv2d(c_in, c_out, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(c_out)]


# ----------------------------------------------------------------------------- ResNet-18 ... 152
def _projection(c_in: int, c_out: int, stride: int) -> nn.Sequential:
    """1x1-conv + BN shortcut on a shape change (He et al. 2016 option B), else an empty one.

    The empty ``nn.Sequential()`` is one module: seed 001's 61/109 module count includes it.
    """
    if stride == 1 and c_in == c_out:
        return nn.Sequential()
    return nn.Sequential(*_conv_bn(c_in, c_out, 1, stride))


class _Basic(nn.Module):
    """conv3x3-BN-ReLU-conv3x3-BN, add shortcut, ReLU (post-activation)."""

    expansion = 1

    def __init__(self, c_in: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1, self.bn1 = _conv_bn(c_in, planes, 3, stride)
        self.conv2, self.bn2 = _conv_bn(planes, planes)
        self.shortcut = _projection(c_in, planes, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class _Bottleneck(nn.Module):
    """1x1 reduce, 3x3 (stride here), 1x1 expand to 4x planes, each with BN; add, ReLU."""

    expansion = 4

    def __init__(self, c_in: int, planes: int, stride: int = 1):
        super().__init__()
        self.conv1, self.bn1 = _conv_bn(c_in, planes, 1)
        self.conv2, self.bn2 = _conv_bn(planes, planes, 3, stride)
        self.conv3, self.bn3 = _conv_bn(planes, 4 * planes, 1)
        self.shortcut = _projection(c_in, 4 * planes, stride)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        return F.relu(self.bn3(self.conv3(out)) + self.shortcut(x))


class CifarResNet4Stage(nn.Module):
    """CIFAR ResNet-18/34 (BasicBlock) and 50/101/152 (Bottleneck) of seed 001 chapter 2.

    He et al. (2016) Table 1 stages (64, 128, 256, 512 planes times ``width``, strides 1, 2, 2,
    2) behind a 3x3 stride-1 stem without max-pool, as kuangliu/pytorch-cifar. The blocks are
    post-activation.
    Module names: ``conv1, bn1, layer1..layer4[i].conv1/bn1/.../shortcut, linear``; there are
    no activation or pooling modules, so ``len(list(named_modules())) - 1`` is seed 001's
    count: 61 for ResNet-18 and 109 for ResNet-34 (sec. 2.4, fig 2.2).
    11,173,962 parameters for ResNet-18 on CIFAR-10.

    Args:
        depth: 18, 34, 50, 101 or 152.
        in_channels: input channels.
        num_classes: output logits.
        width: multiplier of every stage width (seed 001 eq. 2.10: 0.25 ... 2.5).

    Raises:
        ValueError: unknown depth or non-positive width.
    """

    def __init__(self, depth: int = 18, in_channels: int = 3, num_classes: int = 10,
                 width: float = 1.0, planes: tuple[int, ...] = (64, 128, 256, 512),
                 blocks: tuple[int, ...] | None = None):
        super().__init__()
        if depth not in RESNET_BLOCKS:
            raise ValueError(f"depth must be one of {tuple(RESNET_BLOCKS)}, got {depth}")
        _check_width(width)
        blocks = RESNET_BLOCKS[depth] if blocks is None else blocks
        if len(blocks) != len(planes) or min(blocks) < 1:
            raise ValueError(f"need one block count >= 1 per stage, got {blocks} for {planes}")
        block = _Basic if depth < 50 else _Bottleneck
        c = _scaled(planes[0], width)
        self.conv1, self.bn1 = _conv_bn(in_channels, c)
        self.n_stages = len(planes)
        for i, (base, n) in enumerate(zip(planes, blocks)):
            p, stage = _scaled(base, width), []
            for b in range(n):
                stage.append(block(c, p, 2 if (i > 0 and b == 0) else 1))
                c = p * block.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*stage))
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        for i in range(self.n_stages):
            x = getattr(self, f"layer{i + 1}")(x)  # (B, C, 4, 4) after 4 stages on 32x32
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))


# ----------------------------------------------------------------------------- VGG-19
class CifarVGG(nn.Module):
    """VGG-19 with BN (Simonyan & Zisserman config E), CIFAR head: one Linear 512 -> classes.

    Sixteen conv3x3(no bias)-BN-ReLU layers and five 2x2 max-pools, then a global average pool
    and a single Linear. On 32x32 the last map is already 1x1, so the pool equals the 512-d
    flatten of kuangliu/pytorch-cifar. The pools use ``ceil_mode`` so 28x28 ends at 1x1 too
    (28-14-7-4-2-1); on even sides it changes nothing. Convs have no bias (BN follows), so
    CIFAR-100 gives 20,081,188 parameters (our count; kuangliu's biased convs add 5,504).

    Args:
        in_channels: input channels.
        num_classes: output logits.
        width: multiplier of every conv width.
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: float = 1.0,
                 cfg: tuple = VGG19_CFG):
        super().__init__()
        _check_width(width)
        layers, c = [], in_channels
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
            else:
                layers += [*_conv_bn(c, _scaled(v, width)), nn.ReLU(inplace=True)]
                c = _scaled(v, width)
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(c, num_classes)

    def forward(self, x):
        return self.classifier(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


# ----------------------------------------------------------------------------- DenseNet-40
class _DenseLayer(nn.Module):
    """BN-ReLU-conv3x3 to ``growth`` channels, concatenated to the input (Huang et al. 2017)."""

    def __init__(self, c_in: int, growth: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(c_in)
        self.conv = nn.Conv2d(c_in, growth, 3, 1, 1, bias=False)

    def forward(self, x):
        return torch.cat((x, self.conv(F.relu(self.bn(x)))), 1)  # (B, c_in + growth, H, W)


class _Transition(nn.Module):
    """BN-ReLU-conv1x1 (no compression, as DenseNet-40) then 2x2 average pool."""

    def __init__(self, c: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)
        self.conv = nn.Conv2d(c, c, 1, bias=False)

    def forward(self, x):
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class CifarDenseNet(nn.Module):
    """DenseNet-40 of Huang et al. (2017, CIFAR; seed 001 chapter 3): k = 12, no bottleneck.

    Stem conv3x3 to 16 channels, three dense blocks of (depth - 4) / 3 = 12 layers (16 + 36k =
    448 channels at the end), two transitions, final BN-ReLU-global pool-Linear. Huang et al.
    Table 2 gives 1.0M parameters; exactly 1,019,722 on CIFAR-10 (no dropout; the paper's 0.2
    dropout without augmentation is left out).

    Args:
        depth: 3n + 4 with n >= 1 layers per block (40).
        growth: growth rate k before ``width``.
        in_channels: input channels.
        num_classes: output logits.
        width: multiplier of the growth rate and of the 16 stem channels.

    Raises:
        ValueError: depth not 3n + 4, or non-positive width.
    """

    def __init__(self, depth: int = 40, growth: int = 12, in_channels: int = 3,
                 num_classes: int = 10, width: float = 1.0, stem: int = 16):
        super().__init__()
        if (depth - 4) % 3 != 0 or depth < 7:
            raise ValueError(f"DenseNet depth must be 3n+4 with n >= 1, got {depth}")
        _check_width(width)
        n, k, c = (depth - 4) // 3, _scaled(growth, width), _scaled(stem, width)
        self.conv1 = nn.Conv2d(in_channels, c, 3, 1, 1, bias=False)
        stages: list[nn.Module] = []
        for i in range(3):
            for _ in range(n):
                stages.append(_DenseLayer(c, k))
                c += k
            if i < 2:
                stages.append(_Transition(c))
        self.features = nn.Sequential(*stages)
        self.bn = nn.BatchNorm2d(c)
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        x = F.relu(self.bn(self.features(self.conv1(x))))  # (B, 448, 8, 8) on 32x32
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))


# ----------------------------------------------------------------------------- WRN-28-10
class _WideBlock(nn.Module):
    """Pre-activation BN-ReLU-conv3x3-BN-ReLU-dropout-conv3x3 (Zagoruyko & Komodakis 2016)."""

    def __init__(self, c_in: int, c_out: int, stride: int, dropout: float):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c_in)
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.equal = stride == 1 and c_in == c_out
        # 1x1 conv (no BN) on a shape change, fed the pre-activated input as the authors' code
        self.shortcut = nn.Identity() if self.equal else nn.Conv2d(c_in, c_out, 1, stride,
                                                                   bias=False)

    def forward(self, x):
        a = F.relu(self.bn1(x))
        out = self.conv2(self.dropout(F.relu(self.bn2(self.conv1(a)))))
        return out + self.shortcut(x if self.equal else a)


class CifarWideResNet(nn.Module):
    """WRN-d-k of Zagoruyko & Komodakis (2016): groups of (d - 4) / 6 blocks, 16k/32k/64k wide.

    WRN-28-10 (seed 001 chapter 3): 4 blocks per group, widths 160/320/640, 36,479,194
    parameters on CIFAR-10 (the paper's Table 1 says 36.5M).

    Args:
        depth: 6n + 4 with n >= 1 (28).
        widen: widening factor k (10).
        in_channels: input channels.
        num_classes: output logits.
        width: multiplier of every width, the 16-channel stem included.
        dropout: dropout probability between the two convs of a block (0: none).

    Raises:
        ValueError: depth not 6n + 4, non-positive width or dropout outside [0, 1).
    """

    def __init__(self, depth: int = 28, widen: int = 10, in_channels: int = 3,
                 num_classes: int = 10, width: float = 1.0, dropout: float = 0.0):
        super().__init__()
        if (depth - 4) % 6 != 0 or depth < 10:
            raise ValueError(f"WideResNet depth must be 6n+4 with n >= 1, got {depth}")
        if not 0 <= dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}")
        _check_width(width)
        n, c = (depth - 4) // 6, _scaled(16, width)
        self.conv1 = nn.Conv2d(in_channels, c, 3, 1, 1, bias=False)
        for i, planes in enumerate((16 * widen, 32 * widen, 64 * widen)):
            planes, blocks = _scaled(planes, width), []
            for b in range(n):
                blocks.append(_WideBlock(c, planes, 2 if (i > 0 and b == 0) else 1, dropout))
                c = planes
            setattr(self, f"block{i + 1}", nn.Sequential(*blocks))
        self.bn = nn.BatchNorm2d(c)
        self.linear = nn.Linear(c, num_classes)

    def forward(self, x):
        x = self.block3(self.block2(self.block1(self.conv1(x))))
        x = F.relu(self.bn(x))  # (B, 640, 8, 8) on 32x32
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))


# ----------------------------------------------------------------------------- MobileNetV2
class _InvertedResidual(nn.Module):
    """Expand 1x1 + ReLU6, depthwise 3x3 + ReLU6, linear 1x1 project; add if shapes match.

    Sandler et al. (2018) sec. 3.3 / Table 1. With t = 1 there is no expansion conv (as
    torchvision); the residual exists only for stride 1 and equal channels (no projection).
    """

    def __init__(self, c_in: int, c_out: int, stride: int, t: int):
        super().__init__()
        hidden = c_in * t
        layers = [*_conv_bn(c_in, hidden, 1), nn.ReLU6(inplace=True)] if t != 1 else []
        layers += [*_conv_bn(hidden, hidden, 3, stride, groups=hidden), nn.ReLU6(inplace=True),
                   *_conv_bn(hidden, c_out, 1)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and c_in == c_out

    def forward(self, x):
        return x + self.body(x) if self.residual else self.body(x)


class CifarMobileNetV2(nn.Module):
    """MobileNetV2 (Sandler et al. 2018) with the usual CIFAR strides (seed 001 chapter 3).

    Changes from Table 2: the first conv has stride 1 and the second bottleneck row (24
    channels) stride 1, as kuangliu/pytorch-cifar, so 32x32 ends at 4x4. Unlike that code base,
    blocks have no 1x1 projection shortcut (the paper's). 2,236,682 parameters on CIFAR-10.

    Args:
        in_channels: input channels.
        num_classes: output logits.
        width: the paper's width multiplier on every layer; the last 1280-channel conv is
            only widened (``max(1, width)``, paper sec. 6.1). Rounded, not to multiples of 8.
    """

    def __init__(self, in_channels: int = 3, num_classes: int = 10, width: float = 1.0,
                 cfg: tuple = MOBILENETV2_CFG, stem: int = 32, last: int = 1280):
        super().__init__()
        _check_width(width)
        c = _scaled(stem, width)
        layers = [*_conv_bn(in_channels, c, 3, 1), nn.ReLU6(inplace=True)]
        for t, c_out, n, s in cfg:
            for b in range(n):
                layers.append(_InvertedResidual(c, _scaled(c_out, width), s if b == 0 else 1, t))
                c = _scaled(c_out, width)
        last = _scaled(last, max(1.0, width))
        layers += [*_conv_bn(c, last, 1), nn.ReLU6(inplace=True)]
        self.features = nn.Sequential(*layers)
        self.linear = nn.Linear(last, num_classes)

    def forward(self, x):
        x = self.features(x)  # (B, 1280, 4, 4) on 32x32
        return self.linear(F.adaptive_avg_pool2d(x, 1).flatten(1))


# ----------------------------------------------------------------------------- registry
def build_cifar_model(name: str, in_channels: int = 3, num_classes: int = 10,
                      width: float = 1.0) -> nn.Module:
    """Build one of ``CIFAR_MODEL_NAMES``.

    Args:
        name: e.g. ``resnet18_cifar``, ``vgg19_cifar``, ``wrn28_10_cifar``.
        in_channels: input channels (3 for CIFAR, 1 for Fashion-MNIST).
        num_classes: output logits.
        width: multiplier of every hidden width.

    Returns:
        The untrained model, `[B, in_channels, S, S] -> [B, num_classes]` for S = 28 or 32.

    Raises:
        ValueError: unknown name or non-positive width.
    """
    if name not in CIFAR_MODEL_NAMES:
        raise ValueError(f"unknown CIFAR model {name!r}; choose one of {CIFAR_MODEL_NAMES}")
    kw = dict(MINI_MODELS.get(name, {}))
    arch = kw.pop("cls", name.removesuffix("_cifar"))
    if arch.startswith("resnet"):
        return CifarResNet4Stage(kw.pop("depth", None) or int(arch[6:]), in_channels,
                                 num_classes, width, **kw)
    cls = {"vgg19": CifarVGG, "densenet40": CifarDenseNet, "wrn28_10": CifarWideResNet,
           "mobilenetv2": CifarMobileNetV2}[arch]
    return cls(in_channels=in_channels, num_classes=num_classes, width=width, **kw)
