"""On-device data augmentation of whole batches: random crop + flip, and AugMix.

Traditional augmentation (the sources' "random cropping and flipping") is one gather per batch
on the batch's device; AugMix (seed 001 ch. 3) maps the batch back to uint8 pixels and uses
torchvision's implementation per sample. Both draw from an explicit generator.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from lalr_core.core.data import DATASETS, generator_for, normalise


def crop_pad_for(image_size: int) -> int:
    """Padding of the random crop: 4 px on 32 px (the sources' CIFAR), 1 px on 8 px digits."""
    return max(1, image_size // 8)


def augment(X: torch.Tensor, *, crop_pad: int = 4, flip: bool = True,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """Random crop with zero padding and random horizontal flip, for a whole batch at once.

    Each sample is zero-padded by ``crop_pad`` pixels per side and an ``H x W`` window is cut
    at a uniform random offset in ``[0, 2 * crop_pad]^2``; with ``flip`` it is mirrored
    left-right with probability 1/2. One gather does both, with no per-sample Python.

    Args:
        X: images ``[N, C, H, W]``.
        crop_pad: padding in pixels per side; 0 disables cropping.
        flip: whether to flip at random.
        generator: source of randomness (its device is used for the draws); None = a fresh
            non-reproducible one.

    Returns:
        Augmented images ``[N, C, H, W]``, same dtype and device as ``X``.

    Raises:
        ValueError: ``X`` not 4-D or ``crop_pad`` negative.
    """
    if X.ndim != 4:
        raise ValueError(f"X must be [N, C, H, W], got shape {tuple(X.shape)}")
    if isinstance(crop_pad, bool) or not isinstance(crop_pad, int) or crop_pad < 0:
        raise ValueError(f"crop_pad must be a non-negative int, got {crop_pad!r}")
    if crop_pad == 0 and not flip:
        return X
    N, C, H, W = X.shape
    p, dev = crop_pad, X.device
    gen = generator_for(generator, dev)
    dy = torch.randint(0, 2 * p + 1, (N,), generator=gen, device=gen.device).to(dev)
    dx = torch.randint(0, 2 * p + 1, (N,), generator=gen, device=gen.device).to(dev)
    cols = torch.arange(W, device=dev).expand(N, W)
    if flip:
        flipped = torch.rand(N, generator=gen, device=gen.device).to(dev) < 0.5
        cols = torch.where(flipped[:, None], W - 1 - cols, cols)
    rows = dy[:, None] + torch.arange(H, device=dev)          # (N, H) rows of the padded image
    cols = dx[:, None] + cols                                  # (N, W) cols of the padded image
    Xp = F.pad(X, (p, p, p, p)) if p else X                    # (N, C, H + 2p, W + 2p)
    n_idx = torch.arange(N, device=dev)[:, None, None, None]
    c_idx = torch.arange(C, device=dev)[None, :, None, None]
    return Xp[n_idx, c_idx, rows[:, None, :, None], cols[:, None, None, :]]  # (N, C, H, W)


AUGMIX_DEFAULTS = dict(severity=3, mixture_width=3, chain_depth=-1, alpha=1.0)  # torchvision's (our choice)


def augmix(X: torch.Tensor, name: str, *, generator: torch.Generator | None = None
           ) -> torch.Tensor:
    """AugMix (Hendrycks et al. 2020) with torchvision's defaults, one chain draw per sample.

    Seed 001 ch. 3 trains with "AugMix" and names no settings; torchvision's defaults are
    severity 3, width 3, random depth 1-3, alpha 1 (our choice), without the JSD loss. The
    normalised batch is mapped back to uint8 pixels, each image gets its own AugMix draw
    (torchvision's batched call would share the ops across the batch), and the result is
    normalised again. Runs on the CPU; torchvision's global RNG is seeded from ``generator``
    inside a fork, so a run stays reproducible and the caller's RNG untouched.

    Args:
        X: normalised images ``[N, C, H, W]`` of dataset ``name``.
        name: a key of ``DATASETS`` (its mean/std undo the normalisation).
        generator: source of the seed; None = a fresh non-reproducible one.

    Returns:
        Normalised augmented images, same shape, dtype and device as ``X``.
    """
    from torchvision.transforms import v2
    if X.ndim != 4:
        raise ValueError(f"X must be [N, C, H, W], got shape {tuple(X.shape)}")
    spec = DATASETS[name]
    mean = torch.tensor(spec.mean, device=X.device).view(1, -1, 1, 1)
    std = torch.tensor(spec.std, device=X.device).view(1, -1, 1, 1)
    pixels = ((X * std + mean) * 255).round().clamp(0, 255).to(torch.uint8).cpu()
    gen = generator_for(generator, X.device)
    seed = int(torch.randint(0, 2**62, (1,), generator=gen, device=gen.device))
    op = v2.AugMix(**AUGMIX_DEFAULTS)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        out = torch.stack([op(x) for x in pixels])
    return normalise(out.to(X.device), name).to(X.dtype)
