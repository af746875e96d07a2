"""Chapter 05's exact-Hessian sections: the trained small CNN and its examples (fig 4.11 and
E.1 share them), the spectrum's numbers (fig 4.11) and the alignment of the per-batch class
gradients with the top-C Hessian eigenvectors (fig E.1, `[Tuddenham2026]` app. E.3)."""

from __future__ import annotations

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import nn

from lalr_core.core.data import load_data
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.train import run_model
from lalr_core.core.runs.threads import at_run_threads
from lalr_core.methods.class_subspace import assumptions, gradients
from lalr_core.methods.class_subspace import probe as subspace_probe
from lalr_core.methods.curvature import operators as curvature

SPECTRUM_TOP = 30          # fig 4.11 plots the top 30 eigenvalues
NEAR_ZERO = 0.01           # "near zero": |lambda| below this share of lambda_max
LANCZOS_PAIRS = 5          # eigenpairs compared between the dense and the Lanczos result
DENSE_LIMIT = 12_000       # parameters up to which the exact Hessian is formed (1.2 GB float64)
E1_TAUS = (0.05, 0.2)      # rank tolerances shown beside the chosen one (`e1_rtol`)
E1_EARLY, E1_LATE = 0.1, 0.8   # the first 10 % and the last 20 % of the steps


def hessian_problem(cfg: RunConfig, weights: dict, examples: int | None
                    ) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    """The network of run ``cfg`` with its final ``weights`` (float64, eval mode) and the
    first ``examples`` training examples (all if None), in float64: the loss whose exact Hessian
    figs 4.11 and E.1 take."""
    model = run_model(cfg)
    model.load_state_dict(weights)
    model = model.double().eval()
    data = load_data(cfg.dataset, n_train=cfg.n_train, n_val=0, n_test=cfg.n_test,
                     synthetic=cfg.synthetic, device="cpu")
    n = len(data.y_train) if examples is None else min(examples, len(data.y_train))
    return model, data.X_train[:n].double(), data.y_train[:n]


@at_run_threads  # kernel-side analysis: at the runs' thread count
def hessian_spectrum(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                     dense_limit: int | None = None,
                     tol: float = 0.0) -> tuple[np.ndarray, np.ndarray, int]:
    """The Hessian of the mean cross-entropy on ``(X, y)``: ``(eigenvalues, lanczos, P)``.

    With at most ``dense_limit`` parameters (default `DENSE_LIMIT`): every eigenvalue
    (ascending) of the exact Hessian (`curvature.dense_hessian`, symmetrised), and the top
    `LANCZOS_PAIRS` by Lanczos on the same loss's Hessian operator (descending), to cross-check
    the two. Above it the dense matrix does not fit (the paper's 85,898-parameter CNN: 59 GB,
    and as much again for ``torch.func.hessian``'s basis), so the eigenvalues are the top
    `SPECTRUM_TOP` by Lanczos alone, ascending, as the source's digest suggests for 60k
    parameters; ``lanczos`` is then their top `LANCZOS_PAIRS`, descending. ``P`` is the
    parameter count. ``tol``: Lanczos's relative accuracy (ARPACK's; 0: machine precision).
    """
    loss = nn.CrossEntropyLoss()
    n_params = sum(p.numel() for p in model.parameters())
    operator = curvature.curvature_operator(model, loss, [(X, y)])
    if n_params > (DENSE_LIMIT if dense_limit is None else dense_limit):
        top = curvature.top_eigenpairs(operator, k=min(SPECTRUM_TOP, n_params - 1), tol=tol)
        values = np.sort(top.values.cpu().numpy())
        return values, values[::-1][:LANCZOS_PAIRS].copy(), n_params
    H = curvature.dense_hessian(model, loss, X, y)
    eig = torch.linalg.eigvalsh(0.5 * (H + H.T)).numpy()
    lanczos = curvature.top_eigenpairs(operator, k=LANCZOS_PAIRS, tol=tol)
    return eig, lanczos.values.cpu().numpy(), n_params


def spectrum_numbers(eig: np.ndarray, n_params: int, top: int = SPECTRUM_TOP,
                     near_zero: float = NEAR_ZERO) -> dict:
    """Fig 4.11's numbers: the ``top`` largest eigenvalues (ascending), ``lam_max``, their
    median ``median_top`` and ``small``, the share of all eigenvalues with
    ``|lambda| < near_zero * lam_max`` (None when ``eig`` is not the whole spectrum of the
    ``n_params``-parameter Hessian: Lanczos gave only its top)."""
    top_values = np.sort(eig)[-top:]
    lam_max = float(eig.max())
    small = float(np.mean(np.abs(eig) < near_zero * lam_max)) if len(eig) == n_params else None
    return {"top": top_values, "lam_max": lam_max, "median_top": np.median(top_values),
            "small": small}


def e1_taus(rtol: float) -> list[float]:
    """The rank tolerances of fig E.1a: `E1_TAUS` and the chosen ``rtol``, ascending."""
    return sorted({*E1_TAUS, rtol})


def e1_windows(steps: np.ndarray, n_steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Masks over the stored ``steps`` of a run of ``n_steps`` steps: the first 10 % (at least
    the first stored step) and the last 20 %."""
    steps = np.asarray(steps)
    return steps <= max(E1_EARLY * n_steps, steps.min()), steps > E1_LATE * n_steps


@at_run_threads  # kernel-side analysis: at the runs' thread count
def class_subspace_alignment(directions: np.ndarray, counts: np.ndarray, steps: np.ndarray,
                             E: torch.Tensor, n_steps: int, rtol: float) -> dict:
    """Fig E.1's numbers from the stored unit class-gradient directions (``(T, C, P)``, with
    each class's example ``counts`` ``(T, C)`` at the stored ``steps``) and the top-C Hessian
    eigenvectors ``E`` (``(C, P)``) of a run of ``n_steps`` steps.

    Returns ``taus`` (`e1_taus`), ``ranks`` (per tau, the numerical rank of the stack per stored
    step; `class_subspace.probe.rank_series`), ``hungarian`` (the assignment's mean |cos| per
    step), ``energy`` (the mean share of each direction inside span(E)), ``early`` / ``late``
    (`e1_windows`), ``median_early`` / ``median_late`` (per tau, the median rank in each window),
    and for the last stored batch: ``cos_last`` (the assignment's mean |cos|), ``cosines`` (its
    |cos| matrix, classes present by eigenvectors), ``assigned`` (row and column indices of the
    maximising assignment) and ``classes_last`` (the classes present).
    """
    taus = e1_taus(rtol)
    ranks = {tau: subspace_probe.rank_series(directions, counts, E, tau) for tau in taus}
    early, late = e1_windows(steps, n_steps)
    present = counts[-1] > 0
    V_last = torch.as_tensor(directions[-1]).double()[torch.as_tensor(present)]
    cos_last, M_last = assumptions.assignment_cosine(V_last, E)
    return {"taus": taus, "ranks": ranks,
            "hungarian": subspace_probe.assignment_series(directions, counts, E),
            "energy": subspace_probe.span_energy_series(directions, counts, E),
            "early": early, "late": late,
            "median_early": {tau: float(np.nanmedian(r[early])) for tau, r in ranks.items()},
            "median_late": {tau: float(np.nanmedian(r[late])) for tau, r in ranks.items()},
            "cos_last": cos_last, "cosines": M_last,
            "assigned": linear_sum_assignment(M_last, maximize=True),
            "classes_last": np.flatnonzero(present)}


@at_run_threads  # kernel-side analysis: at the runs' thread count
def random_assignment_null(E: torch.Tensor, draws: int = 200, seed: int = 0) -> np.ndarray:
    """The assignment's mean |cos| (`assumptions.assignment_cosine`) of ``len(E)`` random
    Gaussian directions against the eigenvectors ``E`` (``(C, P)``), for each of ``draws``
    draws: fig E.1b's null (app. E.3 quotes ~1e-3 for random 60k-dimensional vectors; the
    maximising assignment lifts it to a few times ``1/sqrt(P)``)."""
    gen = torch.Generator().manual_seed(seed)
    E = torch.as_tensor(E).double()
    return np.array([assumptions.assignment_cosine(
        torch.randn(E.shape, generator=gen, dtype=torch.float64), E)[0] for _ in range(draws)])


@at_run_threads  # kernel-side analysis: at the runs' thread count
def class_gradient_cosine(model: nn.Module, X: torch.Tensor, y: torch.Tensor,
                          E: torch.Tensor) -> float:
    """The assignment's mean |cos| between the class gradients on ``(X, y)`` (the Hessian's
    own examples) and the eigenvectors ``E``."""
    G, counts = gradients.class_gradients(model, X, y)
    return assumptions.assignment_cosine(G[counts > 0], E)[0]
