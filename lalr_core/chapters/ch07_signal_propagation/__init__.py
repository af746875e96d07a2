"""Chapter 07 (signal propagation and trainability at initialisation, seed 003 secs. 1.2-1.4
and 4): its settings per profile. The chapter trains no network through the shared loop; its
computations are `lalr_core.methods.signal.nngp`, `mean_field`, `random_nets`, `trainability` and
`rank_collapse`, called from the notebook; E3's trainability grids go through `grids` (each
depth's row a cached unit, so a GPU machine can fill them ahead). Its checks are data in
`claims` (``CLAIMS``: claim tests and sanity checks) and its verdicts are computed by
`findings` (one function per experiment).
"""

from __future__ import annotations

from lalr_core.chapters.ch07_signal_propagation.settings import PROFILES, Settings
from lalr_core.core.runs.chapter import Chapter

# The length settings (epochs, steps, example counts, windows, samples) a rehearsal takes
# from smoke (`lalr_core.core.rehearsal`); every other setting keeps its profile's value.
REHEARSAL = (
    'e1_grid', 'e3_steps', 'e5_points', 'e6_draws',
)
CHAPTER = Chapter(id="07", title="Signal propagation and trainability at initialisation",
                  profiles=PROFILES,
                  rehearsal=REHEARSAL)

__all__ = ["CHAPTER", "PROFILES", "Settings"]
