"""Parameter counts against explicit formulas, shapes, and bad input."""

import pytest
import torch

from lalr_core.models import MODEL_NAMES, build_model, num_parameters


def conv(c_in, c_out, k=3, bias=False):
    return c_in * c_out * k * k + (c_out if bias else 0)


def bn(c):
    return 2 * c


def cifar_resnet_count(n, widths=(16, 32, 64), in_ch=3, classes=10):
    """He et al. (2016) option-A ResNet: the shortcuts have no parameters."""
    total = conv(in_ch, widths[0]) + bn(widths[0])
    c_prev = widths[0]
    for w in widths:
        for _ in range(n):
            total += conv(c_prev, w) + bn(w) + conv(w, w) + bn(w)
            c_prev = w
    return total + widths[-1] * classes + classes


@pytest.mark.parametrize("depth, n", [(20, 3), (44, 7), (8, 1)])
def test_cifar_resnet_counts(depth, n):
    assert num_parameters(build_model(f"resnet{depth}")) == cifar_resnet_count(n)


def test_resnet20_is_the_published_size():
    # 0.27M in He et al. (2016), table 6; option A (no 1x1 shortcut convs)
    assert num_parameters(build_model("resnet20")) == 269_722


def test_width_multiplier_and_channels():
    model = build_model("resnet8", width=0.5, in_channels=1)
    assert num_parameters(model) == cifar_resnet_count(1, (8, 16, 32), in_ch=1)


def test_basic_cnn_matches_appendix_d():
    assert num_parameters(build_model("basic_cnn")) == 24_714
    fm = build_model("basic_cnn", in_channels=1, image_size=28)
    assert num_parameters(fm) == conv(1, 32, bias=True) + 2 * conv(32, 32, bias=True) + 3 * bn(32) + 512 * 10 + 10


def test_resnet9_count():
    c = (64, 128, 256, 512)
    expect = (conv(3, c[0]) + bn(c[0]) + conv(c[0], c[1]) + bn(c[1]) + 2 * (conv(c[1], c[1]) + bn(c[1]))
              + conv(c[1], c[2]) + bn(c[2]) + conv(c[2], c[3]) + bn(c[3]) + 2 * (conv(c[3], c[3]) + bn(c[3]))
              + c[3] * 10)
    assert num_parameters(build_model("resnet9")) == expect


def test_mlp_count():
    assert num_parameters(build_model("mlp", in_channels=1, image_size=28)) == (
        784 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10)


@pytest.mark.parametrize("name", MODEL_NAMES)
@pytest.mark.parametrize("shape", [(1, 28), (3, 32)])
def test_forward_shapes(name, shape):
    if name in ("resnet110", "resnet56", "resnet9") and shape[0] == 1:
        pytest.skip("slow; covered on CIFAR shapes")
    c, s = shape
    model = build_model(name, in_channels=c, num_classes=7, image_size=s)
    assert model(torch.randn(2, c, s, s)).shape == (2, 7)


def test_bad_input():
    with pytest.raises(ValueError, match="unknown model"):
        build_model("resnet21")
    with pytest.raises(ValueError, match="width"):
        build_model("resnet20", width=0)
