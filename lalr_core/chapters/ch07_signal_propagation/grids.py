"""Chapter 07's trainability grids (E3), one function shared by the notebook and by a machine
that fills the run cache ahead of it (a GPU's): the heatmap of seed 0 over every depth, and
the other seeds at the depths where cells lie on both sides of ``6 xi_c``."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lalr_core.chapters.ch07_signal_propagation import findings as fd
from lalr_core.chapters.ch07_signal_propagation.settings import Settings
from lalr_core.methods.signal import mean_field as mf
from lalr_core.methods.signal import trainability as tr

# The digits' whole training split (the test split is not used: 16 keeps it small).
DIGITS = {"name": "digits", "n_train": None, "n_test": 16}
SEED_STRIDE = 10_000  # seed k > 0 draws from 10,000 k + 1000 i + j: apart from seed 0's cells


class E3Grids(NamedTuple):
    """``heatmap`` (depths x sigma_w^2, seed 0); ``by_seed`` (seeds x ``depths`` x sigma_w^2,
    seed 0's rows first); ``depths`` the depths compared (every depth when none has cells on
    both sides); ``xi_c`` of each sigma_w^2 column; ``seeds`` the seed offsets."""

    heatmap: np.ndarray
    by_seed: np.ndarray
    depths: list[int]
    xi_c: np.ndarray
    seeds: list[int]


def e3_grids(s: Settings, workers: int = 1) -> E3Grids:
    """E3's grids at settings ``s``, each depth's row a cached unit (`trainability.cached_grid`)."""
    xi_cells = np.array([mf.xi_c("tanh", s2, s.sigma_b2, cmap_nodes=s.quad_nodes)
                         for s2 in s.e3_sigma_w2])
    train = {"width": s.e3_width, "sigma_b2": s.sigma_b2, "steps": s.e3_steps, "lr": s.e3_lr,
             "workers": workers}
    heat = tr.cached_grid(DIGITS, s.e3_sigma_w2, s.e3_depths, **train)
    both = fd.e3_contrast_depths(s.e3_depths, xi_cells)
    seeds = [0] + [SEED_STRIDE * k for k in range(1, s.e3_seeds)]
    if not both:
        return E3Grids(heat, heat[None], list(s.e3_depths), xi_cells, seeds)
    rows = heat[[list(s.e3_depths).index(d) for d in both]]
    more = [tr.cached_grid(DIGITS, s.e3_sigma_w2, both, **train, seed=k) for k in seeds[1:]]
    return E3Grids(heat, np.stack([rows, *more]), both, xi_cells, seeds)
