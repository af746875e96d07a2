"""Chapter 05b's settings: one typed, checked field per setting, and their values per profile.

Every experiment of the chapter is a toy (a 2-D function, a 337-parameter MLP, a 3-feature
logistic regression) that runs in seconds, so the toys keep their size at every profile; only
the number of seeds of the batch-size comparison (E15) changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from lalr_core.core.runs.chapter import ChapterSettings, positive


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 05b at one profile (see ``PROFILES``)."""

    # E15: sharpness vs batch size. One pair of runs (batch 16 against batch 1024, at equal
    # epochs and at equal steps) per seed; the comparison is paired by seed, so at least 2.
    e15_seeds: int

    @property
    def datasets(self) -> tuple[str, ...]:
        """The real data the driver prepares: none (every toy draws its own synthetic data)."""
        return ()

    def check(self) -> None:
        """Reject values the notebook's cells cannot use (``ValueError``)."""
        positive(self, "e15_seeds")
        if self.e15_seeds < 2:
            raise ValueError(f"setting 'e15_seeds' must be >= 2 (a paired interval), got "
                             f"{self.e15_seeds!r}")


# E15 takes about 2 s a seed on one core. 3 seeds at smoke and paper; 10 at quick (4 before):
# with 4 seeds the paired t interval (3 degrees of freedom) was about +-7 in lambda_max, wider
# than the differences it judges, and 6 more seeds cost about 12 s.
PROFILES = {
    "smoke": Settings(e15_seeds=3),
    "quick": Settings(e15_seeds=10),
    "paper": Settings(e15_seeds=3),
}
