"""Generative and self-supervised models of seed 004 chapter 5 (figs 5.8 and 5.9).

Models only compute; each loss is a pure function next to its model. Both are reduced-scale
stand-ins (our reductions): the thesis gives neither architecture.
Re-exported by ``lalr_core.core.models.networks``.
"""

from __future__ import annotations

import itertools

import torch
import torch.nn.functional as F
from torch import nn

from lalr_core.core.models.widths import scaled_channels


def _check_batch_matrix(name: str, z: torch.Tensor) -> None:
    if z.ndim != 2 or z.shape[0] < 2:
        raise ValueError(f"{name} must be [B, D] with B >= 2, got shape {tuple(z.shape)}")


# ----------------------------------------------------------------------------- Poisson VAE
class PoissonVAE(nn.Module):
    """MLP VAE with a Gaussian latent and a Poisson decoder likelihood (seed 004 fig 5.9).

    The thesis describes its P-VAE as "replacing the Gaussian likelihood in the decoder with a
    Poisson distribution". The paper it cites (Vafaii, Galor & Yates, NeurIPS 2024) instead has
    Poisson-distributed *latents*. We implement the thesis's description: ``encoder`` gives the
    mean and log-variance of ``q(z|x) = N(mu, diag(exp(logvar)))``, and ``decoder`` gives the
    log-rate of independent Poisson counts per pixel (counts = round(10 x), our choice).

    Attribute names are fixed: the fig 5.9 optimiser orthogonalises only the parameters whose
    name starts with ``"encoder."``.

    Args:
        in_features: pixels per image (784 for 28x28); images are flattened.
        hidden: hidden width of both MLPs before ``width``.
        latent: latent dimension (not scaled by ``width``).
        width: multiplier of ``hidden`` (rounded, at least 1).
    """

    def __init__(self, in_features: int = 784, hidden: int = 256, latent: int = 32,
                 width: float = 1.0):
        super().__init__()
        if min(in_features, hidden, latent) < 1 or width <= 0:
            raise ValueError(f"invalid sizes: in_features={in_features}, hidden={hidden}, "
                             f"latent={latent}, width={width}")
        h = scaled_channels(hidden, width)
        self.latent = latent
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(in_features, h), nn.ReLU(),
                                     nn.Linear(h, 2 * latent))
        self.decoder = nn.Sequential(nn.Linear(latent, h), nn.ReLU(), nn.Linear(h, in_features))

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log-variance of q(z|x), each `[B, latent]`, from images `[B, ...]`."""
        mu, logvar = self.encoder(x).split(self.latent, dim=1)
        return mu, logvar

    def forward(self, x: torch.Tensor, generator: torch.Generator | None = None
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """One reparameterised sample z = mu + exp(logvar / 2) * eps (Kingma & Welling 2014).

        Args:
            x: images `[B, ...]` with ``in_features`` entries each.
            generator: source of eps ~ N(0, I); the global RNG when ``None``.

        Returns:
            ``(log_rate, mu, logvar)``: Poisson log-rates `[B, in_features]` (log counts per
            pixel) at the sampled z, and the posterior parameters `[B, latent]`.
        """
        mu, logvar = self.encode(x)
        eps = torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype)
        z = mu + torch.exp(0.5 * logvar) * eps  # (B, latent)
        return self.decoder(z), mu, logvar

    def rate(self, x: torch.Tensor) -> torch.Tensor:
        """Decoder mean exp(log_rate) at z = mu, `[B, in_features]` in counts per pixel.

        Deterministic; the fig 5.9 held-out MSE compares it with the counts. Wrap the call in
        ``torch.no_grad()`` for evaluation.
        """
        mu, _ = self.encode(x)
        return torch.exp(self.decoder(mu))


def poisson_vae_loss(counts: torch.Tensor, log_rate: torch.Tensor, mu: torch.Tensor,
                     logvar: torch.Tensor) -> torch.Tensor:
    """Negative ELBO per image, averaged over the batch.

    .. math::
        \\frac{1}{B}\\sum_b \\Big[\\sum_p (e^{\\eta_{bp}} - k_{bp} \\eta_{bp})
        + \\tfrac12 \\sum_j (\\mu_{bj}^2 + e^{s_{bj}} - 1 - s_{bj})\\Big]

    with log-rate eta, counts k and s = logvar. The Poisson term is
    ``F.poisson_nll_loss(log_input=True, full=False)``: it omits log(k!), which does not
    depend on the parameters, so the value is the negative ELBO minus sum_p log(k_bp!). The KL
    term is the closed form KL(N(mu, diag(exp(s))) || N(0, I)) (Kingma & Welling 2014, app. B).

    Args:
        counts: non-negative counts, `[B, in_features]` or images `[B, ...]` that flatten to it.
        log_rate: decoder log-rates `[B, in_features]`.
        mu: posterior means `[B, latent]`.
        logvar: posterior log-variances `[B, latent]`.

    Returns:
        Scalar loss in nats per image.

    Raises:
        ValueError: mismatched shapes.
    """
    counts = counts.flatten(1)
    if counts.shape != log_rate.shape or mu.shape != logvar.shape or mu.shape[0] != counts.shape[0]:
        raise ValueError(f"shapes do not match: counts {tuple(counts.shape)}, log_rate "
                         f"{tuple(log_rate.shape)}, mu {tuple(mu.shape)}, logvar {tuple(logvar.shape)}")
    nll = F.poisson_nll_loss(log_rate, counts, log_input=True, full=False, reduction="none")
    kl = 0.5 * (mu.square() + logvar.exp() - 1.0 - logvar)  # (B, latent)
    return (nll.sum(1) + kl.sum(1)).mean()


# ----------------------------------------------------------------------------- Barlow Twins
class BarlowTwins(nn.Module):
    """Trunk plus projector of Barlow Twins (Zbontar et al., ICML 2021, sec. 2 and fig. 1).

    The projector follows the paper's: each layer but the last is Linear (no bias: BN follows)
    - BatchNorm1d - ReLU, and the last is a bare Linear. The paper's code drops that bias
    too; it would have zero gradient anyway, since ``barlow_twins_loss`` standardises every
    output dimension over the batch. Seed 004 fig 5.8 does not orthogonalise the projector.

    Args:
        trunk: maps a batch of views to `[B, trunk_dim]` (e.g. ``basic_cnn_trunk``).
        trunk_dim: width of the trunk's output.
        projector: output widths of the projector's layers (the paper: 8192-8192-8192; our
            reduced fig 5.8: 256-256).
    """

    def __init__(self, trunk: nn.Module, trunk_dim: int, projector: tuple[int, ...] = (256, 256)):
        super().__init__()
        if trunk_dim < 1 or len(projector) < 1 or min(projector) < 1:
            raise ValueError(f"invalid sizes: trunk_dim={trunk_dim}, projector={projector}")
        self.trunk = trunk
        sizes = [trunk_dim, *projector]
        layers: list[nn.Module] = []
        for a, b in itertools.pairwise(sizes[:-1]):
            layers += [nn.Linear(a, b, bias=False), nn.BatchNorm1d(b), nn.ReLU()]
        layers.append(nn.Linear(sizes[-2], sizes[-1], bias=False))
        self.projector = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Embeddings `[B, projector[-1]]` of views `[B, ...]`."""
        return self.projector(self.trunk(x))


def barlow_twins_loss(z1: torch.Tensor, z2: torch.Tensor, lambd: float = 5e-3,
                      eps: float = 1e-5) -> torch.Tensor:
    """Barlow Twins objective (Zbontar et al. 2021, eq. 1).

    Each embedding dimension is standardised over the batch (biased variance plus ``eps``, as
    the paper's non-affine BatchNorm1d in training mode), then

    .. math::
        C = z_1^{n\\top} z_2^n / B, \\qquad
        L = \\sum_i (1 - C_{ii})^2 + \\lambda \\sum_{i \\ne j} C_{ij}^2 .

    Args:
        z1: embeddings of the first views, `[B, D]`, B >= 2.
        z2: embeddings of the second views of the same images, `[B, D]`.
        lambd: weight of the redundancy-reduction (off-diagonal) term; the paper uses 5.1e-3
            at D = 8192, our reduced fig 5.8 5e-3.
        eps: added to the variance before the square root.

    Returns:
        Scalar loss (dimensionless).

    Raises:
        ValueError: shapes that are not equal `[B, D]` with B >= 2.
    """
    _check_batch_matrix("z1", z1)
    _check_batch_matrix("z2", z2)
    if z1.shape != z2.shape:
        raise ValueError(f"z1 and z2 must have one shape, got {tuple(z1.shape)} and "
                         f"{tuple(z2.shape)}")
    B = z1.shape[0]
    z1n = (z1 - z1.mean(0)) / torch.sqrt(z1.var(0, unbiased=False) + eps)
    z2n = (z2 - z2.mean(0)) / torch.sqrt(z2.var(0, unbiased=False) + eps)
    C = z1n.T @ z2n / B  # (D, D), eq. 2
    on_diag = (1.0 - torch.diagonal(C)).square().sum()
    off_diag = C.square().sum() - torch.diagonal(C).square().sum()
    return on_diag + lambd * off_diag
