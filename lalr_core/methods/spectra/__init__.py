"""Spectral analysis of layer weights: ESDs, power-law alpha, HT-SR metrics (seed 001).

Chapters 02 and 02b. Seed 001 (``[Ye2023]``, see REFERENCES.md) Ch. 1.4 (eqs. 1.5-1.9) and Ch. 3.1-3.2 (eqs. 3.2-3.4):
`layer_matrices`, `esd` / `esds` (eigenvalues of ``X = W^T W / N`` on the smaller Gram side),
`fit_alpha` / `alphas` (eq. 1.9 with x_min rules "median", "ks", "ww" or a float),
`htsr_metrics` (the chapter-3 shape / scale / hybrid metrics), `marchenko_pastur_pdf` /
`mp_edges` (eq. 1.6).

Written from the equations, checked against (not copied from) YefanZhou/TempBalance:
tempbalance.py (``net_esd_estimator``, ``pl_fitting``), CalculatedContent/WeightWatcher:
weightwatcher/WW_powerlaw.py (KS x_min scan) and jeffalstott/powerlaw:powerlaw/fitting.py
(``Fit.find_xmin``; empirical tail CDF ``k / n``, k = 0..n-1, as in powerlaw 2.0).

Conventions: conv kernels become TempBalance's / WeightWatcher's ``kh*kw`` slices by default
(``conv="slices"``; ``"flatten"`` on request, see `layer_matrices`). The median x_min rule
counts only eigenvalues above ``eig_floor`` (default 0: `esd`'s exact zeros of a
rank-deficient layer are left out); ``eig_floor=None`` is TempBalance's count of the whole
spectrum (``filter_zeros=False``), see `fit_alpha`. On full-rank layers the two agree exactly.

WeightWatcher's convention: ``alphas(model, **WW_CONVENTION)`` gives the alphas of
WeightWatcher 0.7.7's ``WeightWatcher(model=model).analyze()`` (defaults: ``pool=True``,
``conv2d_norm=True``, ``fix_fingers=False``, ``xmin_max=None``, ``pl_package="ww"``) on a
CPU-only machine, to ~1e-13 relative on torchvision ResNet-18 (tests/test_spectral_ww.py,
benchmarks/bench_weightwatcher.py). As read in weightwatcher.py (0.7.7): Conv2d and Linear
layers (``PyTorchLayer.layer_type``), each kernel position's ``W[:, :, i, j]``
(``WWLayer.conv2D_Wmats``) times ``sqrt(1 / 2)`` (``apply_normalize_Wmats``), float64 squared
singular values pooled (``combined_eigenvalues``), those ``<= 1e-5`` dropped (``fit_powerlaw``,
``EVALS_THRESH``), then WW_powerlaw.py ``WWFit``: x_min = the first minimum of the KS distance
over every sorted eigenvalue but the last, alpha by eq. 1.9; below 20 eigenvalues its small-N
variant (`fit_alpha`, rule ``"ww"``). With CUDA visible, WW 0.7.7 first casts the weights to
float16 (RMT_Util.py ``torch_T_to_np``): another spectrum.

The package: ``matrices`` (``layer_matrices``, ``esd``, ``esds``), ``power_law`` (``fit_alpha``,
``alphas``), ``metrics`` (``matrix_entropy``, ``rand_distance``, ``htsr_metrics``) and
``marchenko_pastur`` (``mp_edges``, ``marchenko_pastur_pdf``); this module re-exports them.
"""

from __future__ import annotations

from lalr_core.methods.spectra.marchenko_pastur import marchenko_pastur_pdf, mp_edges
from lalr_core.methods.spectra.matrices import (
    CONV_MODES,
    ESD_METHODS,
    as_mats,
    check_weight,
    esd,
    esds,
    gram_eigvals,
    layer_matrices,
)
from lalr_core.methods.spectra.metrics import htsr_metrics, matrix_entropy, rand_distance
from lalr_core.methods.spectra.power_law import (
    KS_CHUNK,
    WW_CONVENTION,
    XMIN_RULES,
    alphas,
    fit_alpha,
)

__all__ = [
    "CONV_MODES", "ESD_METHODS", "KS_CHUNK", "WW_CONVENTION", "XMIN_RULES", "alphas", "as_mats",
    "check_weight", "esd", "esds", "fit_alpha", "gram_eigvals", "htsr_metrics", "layer_matrices",
    "marchenko_pastur_pdf", "matrix_entropy", "mp_edges", "rand_distance",
]
