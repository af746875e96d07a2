"""Reduced Barlow Twins (fig 5.8) and Poisson-VAE (fig 5.9) runs of chapter 06 (seed 004 ch. 5).

Both are cached sweep units (``fn(params) -> result``, module level so worker processes can
run them). Their settings are the digest's section-6 reductions on Fashion-MNIST:

* Barlow Twins: BasicCNN trunk -> projector 512-256-256 (not orthogonalised, sec. 5.5.6);
  views = random crop (pad 2) + Gaussian noise sigma 0.1; lambda 5e-3; LARS vs Orth-LARS
  (only the trunk's conv weights orthogonalised). The paper-scale ImageNet version is
  ``lalr_core.imagenet``.
* VAE: MLP encoder 784-256-32 / decoder with a Poisson likelihood on counts round(10 x)
  (the thesis's description, digest G17); Adam lr 1e-3, batch 128; Orth-Adam orthogonalises
  the *encoder* weights only; held-out MSE of the decoder mean every ``eval_every`` steps.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pandas as pd
import torch

from .augmentation import augment
from .data import DATASETS, iterate_batches, load_data
from .models import BarlowTwins, PoissonVAE, barlow_twins_loss, basic_cnn_trunk
from .orthogonal import LARS, GradientTransform, lars_param_groups, select_params
from .train import resolve_device

COUNT_SCALE = 10.0  # pixel intensity in [0, 1] -> Poisson counts round(10 x) (digest row 5.9)


def _data(p: dict[str, Any], device):
    return load_data(p["dataset"], n_train=p["n_train"], n_val=p["n_val"], n_test=p["n_test"],
                     synthetic=p["synthetic"], device=device)


def _wrap(opt: torch.optim.Optimizer, model: torch.nn.Module, p: dict[str, Any], layers: str,
          prefix: str) -> GradientTransform:
    named = dict(model.named_parameters())
    chosen = [named[n] for n in select_params(model, layers, prefix)] if p["orth"] else []
    return GradientTransform(opt, chosen, transform="orth" if p["orth"] else "none",
                             method=p.get("orth_method", "svd"))


def _stream(X: torch.Tensor, y: torch.Tensor, batch: int, steps: int, seed: int):
    """``steps`` full batches of ``(X, y)``, reshuffled every epoch (`data.iterate_batches`)."""
    if batch > len(X):
        raise ValueError(f"batch {batch} is larger than the {len(X)} training samples")
    gen = torch.Generator().manual_seed(seed)
    epochs = (iterate_batches(X, y, batch, generator=gen, drop_last=True) for _ in itertools.count())
    return itertools.islice(itertools.chain.from_iterable(epochs), steps)


# ----------------------------------------------------------------------------- Barlow Twins
def _views(X: torch.Tensor, gen: torch.Generator, noise: float) -> torch.Tensor:
    X = augment(X, crop_pad=2, flip=False, generator=gen)
    return X + noise * torch.randn(X.shape, generator=gen, device=X.device)


def barlow_twins_unit(p: dict[str, Any]) -> dict[str, Any]:
    """Train reduced Barlow Twins with LARS (``p["orth"]`` False) or Orth-LARS.

    ``p``: dataset, synthetic, n_train, n_val, n_test, steps, batch, lr, momentum, wd, eta,
    lambd, noise, projector, orth, seed. Returns ``{"steps": DataFrame(step, loss)}``.
    """
    device = resolve_device("auto")
    data = _data(p, device)
    torch.manual_seed(p["seed"])
    trunk, dim = basic_cnn_trunk(data.in_channels, data.image_size)
    model = BarlowTwins(trunk, dim, tuple(p["projector"])).to(device)
    groups = lars_param_groups(model)
    lars = LARS(groups, lr=p["lr"], momentum=p["momentum"], wd=p["wd"], eta=p["eta"])
    opt = _wrap(lars, model, p, "conv", "trunk.")
    gen = torch.Generator(device=device).manual_seed(p["seed"] + 1)
    rows, t0 = [], time.perf_counter()
    for step, (X, _) in enumerate(_stream(data.X_train, data.y_train, p["batch"], p["steps"],
                                          p["seed"]), start=1):
        loss = barlow_twins_loss(model(_views(X, gen, p["noise"])),
                                 model(_views(X, gen, p["noise"])), p["lambd"])
        opt.zero_grad()
        loss.backward()
        opt.step()
        rows.append((step, loss.detach()))
    steps = pd.DataFrame([(s, float(v)) for s, v in rows], columns=["step", "loss"])
    return {"steps": steps, "wall_time_s": time.perf_counter() - t0,
            "optimizer_stats": dict(opt.stats)}


# ----------------------------------------------------------------------------- VAE
def _counts(X: torch.Tensor, dataset: str) -> torch.Tensor:
    """Normalised images back to [0, 1] intensities, then Poisson counts round(10 x)."""
    spec = DATASETS[dataset]
    x = X * spec.std[0] + spec.mean[0]
    return torch.round(COUNT_SCALE * x.clamp(0, 1)).flatten(1)


@torch.no_grad()
def vae_heldout_mse(model: PoissonVAE, X: torch.Tensor, counts: torch.Tensor) -> float:
    """Mean squared error between the decoder mean (at z = mu) and the held-out counts."""
    model.eval()
    mse = (model.rate(X) - counts).square().mean().item()
    model.train()
    return mse


def vae_unit(p: dict[str, Any]) -> dict[str, Any]:
    """Train the Poisson VAE with Adam (``p["orth"]`` False) or encoder-only Orth-Adam.

    ``p``: dataset, synthetic, n_train, n_val, n_test, steps, batch, lr, eval_every, orth, seed.
    Returns ``{"evals": DataFrame(step, mse), "steps": DataFrame(step, loss)}``.
    """
    from .models import poisson_vae_loss

    device = resolve_device("auto")
    data = _data(p, device)
    torch.manual_seed(p["seed"])
    model = PoissonVAE(data.in_channels * data.image_size ** 2).to(device)
    opt = _wrap(torch.optim.Adam(model.parameters(), lr=p["lr"]), model, p, "all", "encoder.")
    counts_train = _counts(data.X_train, p["dataset"])
    X_val, counts_val = data.X_val, _counts(data.X_val, p["dataset"])
    gen = torch.Generator(device=device).manual_seed(p["seed"] + 1)
    evals, losses = [(0, vae_heldout_mse(model, X_val, counts_val))], []
    for step, (X, counts) in enumerate(_stream(data.X_train, counts_train, p["batch"], p["steps"],
                                               p["seed"]), start=1):
        log_rate, mu, logvar = model(X, generator=gen)
        loss = poisson_vae_loss(counts, log_rate, mu, logvar)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if step % p["eval_every"] == 0:
            evals.append((step, vae_heldout_mse(model, X_val, counts_val)))
    return {"evals": pd.DataFrame(evals, columns=["step", "mse"]),
            "steps": pd.DataFrame({"step": range(1, len(losses) + 1),
                                   "loss": torch.stack(losses).cpu().numpy()})}
