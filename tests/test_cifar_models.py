"""CIFAR models of seed 001: parameter counts against closed forms and published sizes.

Counts are taken on the ``meta`` device (no weight init), forwards at reduced width.
"""

import pytest
import torch

from lalr_core.core.models.cifar import (
    CIFAR_MODEL_NAMES,
    MINI_MODELS,
    CifarDenseNet,
    CifarResNet4Stage,
    CifarWideResNet,
    build_cifar_model,
)
from lalr_core.core.models.networks import MODEL_NAMES, CifarResNet, build_model, num_parameters

FULL_SIZE = [n for n in CIFAR_MODEL_NAMES if n not in MINI_MODELS]

# Published sizes (10 classes unless noted) and where each comes from:
PUBLISHED = {
    # kuangliu/pytorch-cifar ResNet18/34/50 (the layout TempBalance trains), widely quoted
    "resnet18_cifar": 11_173_962,
    "resnet34_cifar": 21_282_122,
    # Zagoruyko & Komodakis (2016) Table 1: 36.5M; exact count of the authors' layout
    "wrn28_10_cifar": 36_479_194,
}
APPROX = {  # (low, high): paper tables, which give only rounded sizes
    "densenet40_cifar": (0.95e6, 1.05e6),  # Huang et al. (2017) Table 2: DenseNet L=40 k=12 1.0M
    "mobilenetv2_cifar": (2.2e6, 2.3e6),  # Sandler et al. (2018): 3.4M on ImageNet; 1000-way
    # head 1.28M -> 10-way 12.8k gives 2.2M (kuangliu's extra projection shortcuts: 2.3M)
    "vgg19_cifar": (19.9e6, 20.1e6),  # VGG-19-BN convs 20.0M + 512x10 head
}


pytestmark = pytest.mark.usefixtures("one_thread")


def meta_count(name, **kw):
    with torch.device("meta"):
        return num_parameters(build_model(name, **kw))


# ----------------------------------------------------------------------------- closed forms
def conv(c_in, c_out, k=3, groups=1):
    return c_in // groups * c_out * k * k  # no bias: BN follows every conv


def bn(c):
    return 2 * c


def head(c, classes):
    return c * classes + classes


def resnet_count(blocks, bottleneck, w=1.0, in_ch=3, classes=10):
    """He et al. (2016) Table 1 stages, option-B (1x1 conv + BN) shortcuts, 3x3 stem."""
    s = lambda c: max(1, round(c * w))
    c = s(64)
    total = conv(in_ch, c) + bn(c)
    for i, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks)):
        p = s(planes)
        out = 4 * p if bottleneck else p
        for b in range(n):
            if bottleneck:
                total += conv(c, p, 1) + conv(p, p) + conv(p, out, 1) + bn(p) + bn(p) + bn(out)
            else:
                total += conv(c, p) + conv(p, p) + 2 * bn(p)
            if (i > 0 and b == 0) or c != out:
                total += conv(c, out, 1) + bn(out)
            c = out
    return total + head(c, classes)


def vgg19_count(classes=10):
    cfg = [64, 64, 128, 128, *[256] * 4, *[512] * 8]
    return sum(conv(a, b) + bn(b) for a, b in zip([3, *cfg], cfg)) + head(512, classes)


def densenet_count(n=12, k=12, stem=16, classes=10):
    total, c = conv(3, stem), stem
    for i in range(3):
        for _ in range(n):
            total += bn(c) + conv(c, k)
            c += k
        if i < 2:
            total += bn(c) + conv(c, c, 1)
    return total + bn(c) + head(c, classes)


def wrn_count(n=4, k=10, classes=10):
    total, c = conv(3, 16), 16
    for planes in (16 * k, 32 * k, 64 * k):
        for _ in range(n):
            total += bn(c) + conv(c, planes) + bn(planes) + conv(planes, planes)
            total += conv(c, planes, 1) if c != planes else 0
            c = planes
    return total + bn(c) + head(c, classes)


def mobilenetv2_count(classes=10):
    rows = ((1, 16, 1), (6, 24, 2), (6, 32, 3), (6, 64, 4), (6, 96, 3), (6, 160, 3), (6, 320, 1))
    total, c = conv(3, 32) + bn(32), 32
    for t, c_out, n in rows:
        for _ in range(n):
            h = c * t
            total += (conv(c, h, 1) + bn(h) if t != 1 else 0) + conv(h, h, 3, h) + bn(h)
            total += conv(h, c_out, 1) + bn(c_out)
            c = c_out
    return total + conv(c, 1280, 1) + bn(1280) + head(1280, classes)


CLOSED_FORM = {
    "resnet18_cifar": lambda: resnet_count((2, 2, 2, 2), False),
    "resnet34_cifar": lambda: resnet_count((3, 4, 6, 3), False),
    "resnet101_cifar": lambda: resnet_count((3, 4, 23, 3), True),
    "resnet152_cifar": lambda: resnet_count((3, 8, 36, 3), True),
    "vgg19_cifar": vgg19_count,
    "densenet40_cifar": densenet_count,
    "wrn28_10_cifar": wrn_count,
    "mobilenetv2_cifar": mobilenetv2_count,
}


@pytest.mark.parametrize("name", FULL_SIZE)
def test_counts_match_closed_forms(name):
    assert meta_count(name) == CLOSED_FORM[name]()


@pytest.mark.parametrize("name", FULL_SIZE)
def test_counts_match_published_sizes(name):
    n = meta_count(name)
    if name in PUBLISHED:
        assert n == PUBLISHED[name]
    elif name in APPROX:
        lo, hi = APPROX[name]
        assert lo <= n <= hi


def test_vgg19_cifar100_is_the_spec_count():
    # spec seed000_001_002 part I: "CIFAR VGG19-BN with one 512->100 FC has 20,081,188"
    assert meta_count("vgg19_cifar", num_classes=100) == vgg19_count(100) == 20_081_188


def test_resnet50_is_kuangliu_size():
    with torch.device("meta"):
        assert num_parameters(CifarResNet4Stage(50)) == 23_520_842


# ----------------------------------------------------------------------------- seed 001 fig 2.2
@pytest.mark.parametrize("name, modules", [("resnet18_cifar", 61), ("resnet34_cifar", 109)])
def test_tempbalance_module_counts(name, modules):
    """Seed 001 sec. 2.4: "ResNet18 has 61 modules and ResNet34 has 109 modules".

    Root excluded: stem conv, BN, linear (3) + 4 stage wrappers + 6 per block (block, conv1,
    bn1, conv2, bn2, shortcut) + 2 per projection shortcut (conv, BN; 3 of them).
    """
    with torch.device("meta"):
        model = build_model(name, width=0.5)  # fig 2.2 uses 50 % width; the count is the same
    blocks = {"resnet18_cifar": 8, "resnet34_cifar": 16}[name]
    assert len(list(model.named_modules())) - 1 == modules == 3 + 4 + 6 * blocks + 2 * 3


# ----------------------------------------------------------------------------- width, shapes
@pytest.mark.parametrize("name", ["resnet18_cifar", "resnet101_cifar", "vgg19_cifar",
                                  "wrn28_10_cifar", "mobilenetv2_cifar", "densenet40_cifar"])
@pytest.mark.parametrize("w", [0.25, 2.5])
def test_width_scales_count_quadratically(name, w):
    ratio = meta_count(name, width=w) / meta_count(name) / w**2
    if name == "mobilenetv2_cifar" and w < 1:
        # the 1280-wide last conv is only widened (Sandler et al. sec. 6.1): 1.78 at w = 0.25
        assert 1.5 < ratio < 2.0
    else:
        # BN, biases and the 10-way head scale ~w; DenseNet's growth 12 x 0.25 = 3 is exact but
        # its 16-channel stem and BN weigh more (1.068 at w = 0.25); the rest are within 3 %
        assert abs(ratio - 1) < (0.08 if name == "densenet40_cifar" else 0.04)


def test_resnet_width_counts_match_closed_form():
    for w in (0.25, 0.5, 1.5, 2, 2.5):
        assert meta_count("resnet34_cifar", width=w) == resnet_count((3, 4, 6, 3), False, w)


@pytest.mark.parametrize("name", FULL_SIZE)
@pytest.mark.parametrize("c, s", [(3, 32), (1, 28)])
def test_forward_shapes(name, c, s):
    width = 0.05 if name == "wrn28_10_cifar" else 0.25  # WRN-28-0.5 and quarter widths
    torch.manual_seed(0)
    model = build_model(name, in_channels=c, num_classes=7, width=width)
    logits = model(torch.randn(2, c, s, s))
    assert logits.shape == (2, 7) and torch.isfinite(logits).all()


def test_resnet18_full_width_forward():
    model = build_model("resnet18_cifar", num_classes=100).eval()
    with torch.no_grad():
        assert model(torch.randn(2, 3, 32, 32)).shape == (2, 100)


# ----------------------------------------------------------------------------- registry, errors
def test_registry_keeps_the_he_resnets():
    assert set(CIFAR_MODEL_NAMES) <= set(MODEL_NAMES)
    assert type(build_model("resnet20")) is CifarResNet  # the resnet(\d+) names are unchanged
    with torch.device("meta"):
        assert type(build_model("resnet18_cifar")) is CifarResNet4Stage


def test_wrn_dropout_default_off_and_layout():
    with torch.device("meta"):
        model = build_model("wrn28_10_cifar")
        assert all(m.p == 0 for m in model.modules() if isinstance(m, torch.nn.Dropout))
        assert [len(getattr(model, f"block{i}")) for i in (1, 2, 3)] == [4, 4, 4]
        assert model.linear.in_features == 640


def test_densenet40_layout():
    with torch.device("meta"):
        model = build_model("densenet40_cifar")
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 1 + 36 + 2  # stem, 3 x 12 dense layers, 2 transitions
    assert model.linear.in_features == 16 + 36 * 12


def test_bad_input():
    with pytest.raises(ValueError, match="width"):
        build_cifar_model("vgg19_cifar", width=0)
    with pytest.raises(ValueError, match="unknown"):
        build_cifar_model("resnet20_cifar")
    with pytest.raises(ValueError, match="depth"):
        CifarResNet4Stage(20)
    with pytest.raises(ValueError, match="depth"):
        CifarDenseNet(depth=41)
    with pytest.raises(ValueError, match="dropout"):
        CifarWideResNet(dropout=1.0)


# ----------------------------------------------------------------------------- reduced zoo
@pytest.mark.parametrize("name,blocks", [("resnet18_mini", (1, 1, 1)),
                                         ("resnet34_mini", (2, 2, 2))])
def test_mini_resnet_module_count_follows_the_61_109_rule(name, blocks):
    # seed 001's "ResNet18 has 61 modules" rule, our reading: stem conv, stem BN, linear + one wrapper per stage + 6 per block
    # + 2 per projection shortcut (stages 2 and 3 change shape): 28 for R18m, 46 for R34m.
    model = build_model(name, in_channels=1, num_classes=10, image_size=8)
    assert len(list(model.named_modules())) - 1 == 3 + len(blocks) + 6 * sum(blocks) + 2 * 2


def test_mini_models_have_the_planned_widths_and_depths():
    vgg = build_model("vgg_mini", in_channels=1, image_size=8)
    convs = [m for m in vgg.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [c.out_channels for c in convs] == [16, 16, 32, 32, 64, 64, 64, 64]
    dn = build_model("densenet10_mini", in_channels=1, image_size=8)
    # stem 12, 3 blocks of 2 layers with growth 6, no compression: 12 + 6 * 6 = 48 features
    assert dn.linear.in_features == 48 and dn.conv1.out_channels == 12
    wrn = build_model("wrn10_1", in_channels=1, image_size=8)
    assert [len(wrn.block1), len(wrn.block2), len(wrn.block3)] == [1, 1, 1]
    assert wrn.linear.in_features == 64
    mb = build_model("mobilenetv2_mini", in_channels=1, image_size=8)
    assert mb.linear.in_features == 64


@pytest.mark.parametrize("name", sorted(MINI_MODELS))
def test_mini_models_run_on_8x8_digits(name):
    model = build_model(name, in_channels=1, num_classes=10, image_size=8)
    assert model(torch.randn(3, 1, 8, 8)).shape == (3, 10)
