"""Parameter counts against explicit formulas, shapes, losses against hand computations."""

import math

import pytest
import torch
import torchvision

from lalr_core.core.models.cifar import CIFAR_MODEL_NAMES
from lalr_core.core.models.networks import (
    MODEL_NAMES,
    TORCHVISION_NAMES,
    BarlowTwins,
    PoissonVAE,
    barlow_twins_loss,
    basic_cnn_trunk,
    build_model,
    num_parameters,
    poisson_vae_loss,
)

# torchvision's published sizes at 1000 classes (weights meta "num_params", torchvision docs),
# with the width of the input to the head and the first conv's (out channels, kernel side)
TV_PUBLISHED = {
    "resnet18": (11_689_512, 512, (64, 7)),
    "resnet34": (21_797_672, 512, (64, 7)),
    "resnet50": (25_557_032, 2048, (64, 7)),
    "densenet121": (7_978_856, 1024, (64, 7)),
    "densenet161": (28_681_000, 2208, (96, 7)),
    "resnext50_32x4d": (25_028_904, 2048, (64, 7)),
    "wide_resnet50_2": (68_883_240, 2048, (64, 7)),
}
# the others run their forward on the meta device (shapes only): init of 21M-67M weights is slow
TV_REAL_FORWARD = ("resnet18_tv", "densenet121_tv")


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


@pytest.mark.parametrize("name", [n for n in MODEL_NAMES  # tv and CIFAR zoo: tested elsewhere
                                  if n not in TORCHVISION_NAMES and n not in CIFAR_MODEL_NAMES])
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


# ----------------------------------------------------------------------------- torchvision
@pytest.mark.parametrize("name", TORCHVISION_NAMES)
def test_torchvision_counts(name):
    arch = name.removesuffix("_tv")
    published, head_in, (stem_out, k) = TV_PUBLISHED[arch]
    expect = published - (head_in + 1) * (1000 - 10)  # a 10-way head instead of 1000-way
    with torch.device("meta"):  # counts only: skip the init
        own = getattr(torchvision.models, arch)(weights=None, num_classes=10)
        ours, gray = build_model(name), build_model(name, in_channels=1, image_size=32)
    assert num_parameters(ours) == num_parameters(own) == expect
    assert num_parameters(gray) == expect - 2 * stem_out * k * k


def test_resnet18_tv_on_ten_classes():
    with torch.device("meta"):
        assert num_parameters(build_model("resnet18_tv")) == 11_181_642


def test_torchvision_module_names():
    with torch.device("meta"):
        r50, r34 = build_model("resnet50_tv"), build_model("resnet34_tv", in_channels=1)
    # seed 004 fig 5.13: the 3x3 128->128 conv of stage 2's second Bottleneck
    assert r50.get_submodule("layer2.1.conv2").weight.numel() == 147_456
    assert r34.get_submodule("layer4.1.conv1").weight.shape == (512, 512, 3, 3)
    assert r34.get_submodule("conv1").weight.shape == (64, 1, 7, 7)


@pytest.mark.parametrize("name", TORCHVISION_NAMES)
@pytest.mark.parametrize("shape", [(1, 28), (3, 32)])
def test_torchvision_forward_shapes(name, shape):
    c, s = shape
    if name.startswith("densenet") and s == 28:
        s = 32  # 28x28 is too small for the DenseNet pools (test_bad_torchvision_input)
    with torch.device("cpu" if name in TV_REAL_FORWARD else "meta"):
        model = build_model(name, in_channels=c, num_classes=7, image_size=s)
        assert model(torch.randn(2, c, s, s)).shape == (2, 7)


def test_bad_torchvision_input():
    with pytest.raises(ValueError, match="width"):
        build_model("resnet18_tv", width=0.5)
    with pytest.raises(ValueError, match="unknown model"):
        build_model("resnet19_tv")
    with pytest.raises(ValueError, match="image_size"):
        build_model("densenet121_tv", in_channels=1, image_size=28)
    with torch.device("meta"):
        build_model("densenet121_tv", in_channels=1, image_size=29)  # the smallest that fits


# ----------------------------------------------------------------------------- BasicCNN + skips
@pytest.mark.parametrize("shape", [(1, 28), (3, 32)])
def test_basic_cnn_skip_has_basic_cnn_parameters(shape):
    c, s = shape
    plain = build_model("basic_cnn", in_channels=c, image_size=s)
    skip = build_model("basic_cnn_skip", in_channels=c, image_size=s)
    assert [(n, p.shape) for n, p in skip.named_parameters()] == [
        (n, p.shape) for n, p in plain.named_parameters()]
    if c == 3:
        assert num_parameters(skip) == 24_714


def test_basic_cnn_skip_adds_the_pooled_input():
    skip = build_model("basic_cnn_skip", in_channels=1, image_size=28)
    with torch.no_grad():  # silence the residual branches: ReLU(BN(0)) = ReLU(beta) = 0
        for conv in (skip.conv2, skip.conv3):
            conv.weight.zero_()
            conv.bias.zero_()
    h1, h2, h3 = skip.blocks(torch.randn(2, 1, 28, 28))
    assert [h.shape[-1] for h in (h1, h2, h3)] == [14, 7, 4]
    torch.testing.assert_close(h2, h1.reshape(2, 32, 7, 2, 7, 2).mean((3, 5)))  # 2x2 means
    # 7 -> 4 with ceil_mode: the last row and column average the pixels that exist
    torch.testing.assert_close(h3[..., 3, 3], h2[..., 6, 6])
    torch.testing.assert_close(h3[..., 0, 3], h2[..., 0:2, 6].mean(-1))


def test_basic_cnn_nobn_is_conv_relu_with_basic_cnn_names():
    model = build_model("basic_cnn_nobn", in_channels=1, image_size=28)
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    assert num_parameters(model) == conv(1, 32, bias=True) + 2 * conv(32, 32, bias=True) + 512 * 10 + 10
    x = torch.randn(3, 1, 28, 28)
    h = x
    for c in (model.conv1, model.conv2, model.conv3):  # the explicit chain: conv -> ReLU
        h = torch.relu(torch.nn.functional.conv2d(h, c.weight, c.bias, stride=2, padding=1))
    torch.testing.assert_close(model(x), model.fc(h.flatten(1)))


def test_a_filter_off_on_the_whole_batch_has_an_exactly_zero_gradient():
    # fig 5.13's mechanism: without BN, a filter whose ReLU is off everywhere gets no gradient;
    # with BN the channel is re-centred over the batch and the same bias changes nothing
    for name, dead in (("basic_cnn_nobn", True), ("basic_cnn", False)):
        torch.manual_seed(0)
        model = build_model(name, in_channels=1, image_size=28)
        with torch.no_grad():
            model.conv2.bias[0] = -1e4
        model(torch.randn(8, 1, 28, 28)).sum().backward()
        g = model.conv2.weight.grad
        assert bool((g[0] == 0).all()) is dead
        assert bool((g[1:] != 0).any())


# ----------------------------------------------------------------------------- Barlow Twins
@pytest.mark.parametrize("side", [28, 32])
def test_barlow_twins_shapes_and_projector(side):
    trunk, out_dim = basic_cnn_trunk(in_channels=1, image_size=side)
    assert out_dim == 512
    assert not any(n.startswith("fc.") for n, _ in trunk.named_parameters())
    model = BarlowTwins(trunk, out_dim, projector=(256, 256))
    assert model(torch.randn(4, 1, side, side)).shape == (4, 256)
    assert num_parameters(model.projector) == 512 * 256 + 2 * 256 + 256 * 256  # no biases


def barlow_twins_loop(z1, z2, lambd, eps):
    """Eq. 1 of Zbontar et al. (2021) one entry at a time."""
    B, D = len(z1), len(z1[0])

    def standardise(z, i):
        mean = sum(z[b][i] for b in range(B)) / B
        var = sum((z[b][i] - mean) ** 2 for b in range(B)) / B
        return [(z[b][i] - mean) / math.sqrt(var + eps) for b in range(B)]

    n1 = [standardise(z1, i) for i in range(D)]
    n2 = [standardise(z2, j) for j in range(D)]
    loss = 0.0
    for i in range(D):
        for j in range(D):
            c = sum(n1[i][b] * n2[j][b] for b in range(B)) / B
            loss += (1 - c) ** 2 if i == j else lambd * c ** 2
    return loss


def test_barlow_twins_loss_matches_the_double_loop():
    g = torch.Generator().manual_seed(0)
    z1 = torch.randn(5, 3, generator=g, dtype=torch.float64)
    z2 = z1 + 0.5 * torch.randn(5, 3, generator=g, dtype=torch.float64)
    expect = barlow_twins_loop(z1.tolist(), z2.tolist(), 0.3, 1e-5)
    assert barlow_twins_loss(z1, z2, lambd=0.3).item() == pytest.approx(expect, rel=1e-12)


def test_barlow_twins_loss_is_zero_at_identity_correlation():
    # columns 2-4 of the 4x4 Hadamard matrix: zero mean, unit variance, mutually orthogonal,
    # so the standardised cross-correlation of z with itself is exactly I
    z = torch.tensor([[1, 1, 1], [-1, 1, -1], [1, -1, -1], [-1, -1, 1]], dtype=torch.float64)
    assert barlow_twins_loss(z, z, eps=0.0).item() == 0.0
    shifted = 3.0 * z + torch.tensor([5.0, -2.0, 0.5], dtype=torch.float64)  # per-dim affine
    assert barlow_twins_loss(shifted, z).item() == pytest.approx(0.0, abs=1e-9)


def test_barlow_twins_loss_bad_shapes():
    with pytest.raises(ValueError, match="shape"):
        barlow_twins_loss(torch.zeros(4, 3), torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"\(1, 3\)"):
        barlow_twins_loss(torch.zeros(1, 3), torch.zeros(1, 3))


# ----------------------------------------------------------------------------- Poisson VAE
def test_poisson_vae_shapes_and_names():
    vae = PoissonVAE(in_features=784, hidden=256, latent=32)
    x = torch.rand(3, 1, 28, 28)
    log_rate, mu, logvar = vae(x, generator=torch.Generator().manual_seed(1))
    assert log_rate.shape == (3, 784) and mu.shape == logvar.shape == (3, 32)
    again, _, _ = vae(x, generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(log_rate, again)  # the generator fixes the sample
    torch.testing.assert_close(vae.rate(x), torch.exp(vae.decoder(mu)))
    assert {n.split(".")[0] for n, _ in vae.named_parameters()} == {"encoder", "decoder"}
    assert num_parameters(vae.encoder) == 784 * 256 + 256 + 256 * 64 + 64
    assert num_parameters(PoissonVAE(hidden=256, width=0.5).decoder) == 32 * 128 + 128 + 128 * 784 + 784


def test_poisson_vae_loss_matches_the_hand_computation():
    g = torch.Generator().manual_seed(0)
    B, P, L = 3, 5, 2
    log_rate = torch.randn(B, P, generator=g, dtype=torch.float64)
    counts = torch.poisson(torch.full((B, P), 2.0, dtype=torch.float64), generator=g)
    mu = torch.randn(B, L, generator=g, dtype=torch.float64)
    logvar = torch.randn(B, L, generator=g, dtype=torch.float64)
    # -log p(k) minus the parameter-free log(k!) that full=False leaves out
    nll = -torch.distributions.Poisson(log_rate.exp()).log_prob(counts) - torch.lgamma(counts + 1)
    kl = torch.distributions.kl_divergence(torch.distributions.Normal(mu, (0.5 * logvar).exp()),
                                           torch.distributions.Normal(0.0, 1.0))
    expect = (nll.sum(1) + kl.sum(1)).mean()
    torch.testing.assert_close(poisson_vae_loss(counts, log_rate, mu, logvar), expect)
    with pytest.raises(ValueError, match="shapes"):
        poisson_vae_loss(counts[:, :4], log_rate, mu, logvar)


@pytest.mark.parametrize("name", ["resnet20", "basic_cnn", "mlp", "resnet18_mini"])
def test_a_width_below_one_channel_is_refused_not_clamped(name):
    """width=1e-9 once trained a 206-parameter net in silence: every layer clamped to 1."""
    kwargs = {"in_channels": 1} if name == "mlp" else {}
    with pytest.raises(ValueError, match="rounds to none; use width >"):
        build_model(name, width=1e-9, **kwargs)
    from lalr_core.core.models.ssl import PoissonVAE
    with pytest.raises(ValueError, match="rounds to none"):
        PoissonVAE(width=1e-9)


def test_the_smallest_width_keeps_one_channel_per_layer():
    from lalr_core.core.models.widths import scaled_channels
    assert scaled_channels(16, 1 / 16) == 1 and scaled_channels(16, 0.25) == 4
    assert scaled_channels(16, 0.05) == 1          # 0.8 channels round to one
    with pytest.raises(ValueError, match="16 channels"):
        scaled_channels(16, 0.03)                  # 0.48 channels round to none
