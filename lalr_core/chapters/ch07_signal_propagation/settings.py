"""Chapter 07's settings: one typed, checked field per setting, and their values per profile.

Our experiments E1-E8 on the lecture notes ``[ATDL-notes]`` (see REFERENCES.md) at their planned
sizes at ``quick`` and ``paper`` (most run in seconds), smaller at ``smoke``. The notes give no
sizes: a comment "planned: N" below is the value fixed when the experiments were designed.
tanh at sigma_b^2 = 0.05 is the running example (critical sigma_w^2 = 1.76).
"""

from __future__ import annotations

from dataclasses import dataclass

from lalr_core.core.runs.chapter import ChapterSettings, positive


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 07 at one profile (see ``PROFILES``)."""

    sigma_b2: float                     # the running example's bias variance (0.05: Schoenholz et al.'s)
    phases: tuple[float, ...]           # ordered / critical / chaotic sigma_w^2 at sigma_b2
    quad_nodes: int                     # Gauss-Hermite nodes per dimension of the 2-D c-map
                                        # rule (planned: 101); the 1-D integrals (q*, chi_1)
                                        # choose theirs from q (nngp.nodes_for)
    # E1: chi_1 over (sigma_w^2, sigma_b^2) in [0.5, 5] x [0, 2]
    e1_grid: tuple[int, ...]            # (n sigma_w^2, n sigma_b^2) (planned: 120 x 80)
    e1_width: int                       # the empirical cross-check's width (planned: 1000)
    e1_seeds: int                       # its random nets (planned: 2; issue 33: >= 3, each
                                        # net one replicate)
    # E2 (and E3's fitted slopes): q^l, c^l of random nets
    e2_width: int                       # planned: 1000
    e2_depth: int                       # planned: 30
    e2_seeds: int                       # planned: 5
    # E3: trainability heatmap over (sigma_w^2, depth) on the digits, 6 xi_c overlay
    e3_sigma_w2: tuple[float, ...]
    e3_depths: tuple[int, ...]
    e3_width: int                       # planned: 64
    e3_steps: int                       # planned: 100 SGD steps
    e3_lr: float
    e3_seeds: int                       # seeds of the cells compared at equal depth (seed 0:
                                        # the heatmap; seeds 1.. rerun only those depths)
    # E4: per-layer gradient norms at init
    e4_width: int                       # planned: 256
    e4_depth: int                       # planned: 50
    e4_seeds: int
    # E5: great-circle curve length through random tanh nets
    e5_width: int                       # planned: 500
    e5_depth: int                       # planned: 15
    e5_points: int                      # planned: 1000 angles
    e5_seeds: int                       # random nets per phase (planned: 2; issue 33: >= 3)
    # E6: input-output Jacobian spectra, Gaussian vs orthogonal
    e6_width: int                       # planned: 256-512
    e6_depth: int                       # planned: 32
    e6_draws: int                       # random nets per case (planned: 2; issue 33: >= 3,
                                        # each net one replicate)
    # E7: rank collapse of self-attention stacks
    e7_tokens: int
    e7_dim: int
    e7_heads: int
    e7_depth: int
    e7_seeds: int
    # E8 (appendix): Linformer
    e8_tokens: int                      # planned: 512
    e8_ks: tuple[int, ...]              # planned: 16-256
    e8_seeds: int                       # draws of Q, K, V
    e8_timing_runs: int                 # timing runs (each the median of 5 calls per n)

    @property
    def datasets(self) -> tuple[str, ...]:
        """The real data the driver prepares: E3's trainability task (the sklearn digits)."""
        return ("digits",)

    def check(self) -> None:
        """Reject values the notebook's cells cannot use (``ValueError``)."""
        positive(self, "phases", "quad_nodes", "e1_grid", "e1_width", "e1_seeds", "e2_width", "e2_depth",
                 "e2_seeds", "e3_sigma_w2", "e3_depths", "e3_width", "e3_steps", "e3_lr", "e3_seeds",
                 "e4_width", "e4_depth", "e4_seeds", "e5_width", "e5_depth", "e5_points", "e5_seeds",
                 "e6_width", "e6_depth", "e6_draws", "e7_tokens", "e7_dim", "e7_heads",
                 "e7_depth", "e7_seeds", "e8_tokens", "e8_ks", "e8_seeds", "e8_timing_runs")
        if self.sigma_b2 < 0:
            raise ValueError(f"setting 'sigma_b2' must be >= 0, got {self.sigma_b2!r}")
        if len(self.phases) != 3 or not self.phases[0] < self.phases[1] < self.phases[2]:
            raise ValueError(f"setting 'phases' must be increasing (ordered, critical, chaotic) "
                             f"sigma_w^2, got {self.phases!r}")
        if len(self.e1_grid) != 2 or min(self.e1_grid) < 4:
            raise ValueError(f"setting 'e1_grid' must be (n_w, n_b), each >= 4, got "
                             f"{self.e1_grid!r}")
        if self.e7_dim % self.e7_heads:
            raise ValueError(f"setting 'e7_dim' ({self.e7_dim}) must be a multiple of "
                             f"'e7_heads' ({self.e7_heads})")
        if max(self.e8_ks) > self.e8_tokens:
            raise ValueError(f"setting 'e8_ks' must be <= e8_tokens ({self.e8_tokens}), got "
                             f"{self.e8_ks!r}")


_COMMON = {"sigma_b2": 0.05, "phases": (1.0, 1.76, 4.0), "quad_nodes": 101,
           "e3_sigma_w2": (1.0, 1.3, 1.76, 2.5, 4.0), "e3_lr": 5e-3, "e3_width": 64}

PROFILES: dict[str, Settings] = {
    "smoke": Settings(e1_grid=(12, 8), e1_width=200, e1_seeds=2, e2_width=200, e2_depth=10,
                      e2_seeds=2,
                      e3_depths=(3, 30), e3_steps=20, e3_seeds=2, e4_width=64, e4_depth=10, e4_seeds=2,
                      e5_width=100, e5_depth=5, e5_points=100, e5_seeds=2, e6_width=64,
                      e6_depth=8,
                      e6_draws=1, e7_tokens=16, e7_dim=32, e7_heads=2, e7_depth=8, e7_seeds=2,
                      e8_tokens=128, e8_ks=(16, 64), e8_seeds=1, e8_timing_runs=2, **_COMMON),
    # The planned sizes (E3's heatmap: 5 x 5 cells of 100 steps, the planned 8 x 6 reduced;
    # seeds 1-2 rerun the depths 30, 60, 100 where cells lie on both sides of 6 xi_c: ~35 s).
    # Issue 33: 5 random nets for E1, E5 and E6 (planned: 2) and 5 timing runs for E8, so that
    # each claim test has >= 3 replicates: untrained forward passes, ~12 s more on one core.
    "quick": Settings(e1_grid=(120, 80), e1_width=1000, e1_seeds=5, e2_width=1000, e2_depth=30, e2_seeds=5,
                      e3_depths=(5, 15, 30, 60, 100), e3_steps=100, e3_seeds=3, e4_width=256, e4_depth=50,
                      e4_seeds=5, e5_width=500, e5_depth=15, e5_points=1000, e5_seeds=5,
                      e6_width=256, e6_depth=32, e6_draws=5, e7_tokens=32, e7_dim=64, e7_heads=4,
                      e7_depth=24, e7_seeds=5, e8_tokens=512, e8_ks=(16, 32, 64, 128, 256),
                      e8_seeds=4, e8_timing_runs=5, **_COMMON),
    "paper": Settings(e1_grid=(120, 80), e1_width=1000, e1_seeds=20, e2_width=1000, e2_depth=30, e2_seeds=20,
                      e3_depths=(5, 10, 20, 40, 60, 80, 100, 150), e3_steps=1000, e3_seeds=5,
                      e4_width=256, e4_depth=50, e4_seeds=20, e5_width=500, e5_depth=15,
                      e5_points=1000, e5_seeds=10, e6_width=512, e6_depth=32, e6_draws=5,
                      e7_tokens=32,
                      e7_dim=64, e7_heads=4, e7_depth=128, e7_seeds=20, e8_tokens=512,
                      e8_ks=(16, 32, 64, 128, 256), e8_seeds=10, e8_timing_runs=10,
                      **{**_COMMON, "e3_sigma_w2": (1.0, 1.2, 1.4, 1.6, 1.76, 2.0, 2.5, 3.0, 4.0)}),
}
