"""TempBalance's own cosine schedule, ``"cosine_tb"``: the report's eq. 2.12 one epoch behind.

The TempBalance report writes the cosine schedule as ``lr_t = lr_0/2 * (1 + cos((t+1) pi / T))``
(eq. 2.12, the core's ``"cosine"``), which reaches 0 in the last epoch. The authors' code
steps its scheduler after each epoch, so epoch ``t`` trains at ``lr_0/2 * (1 + cos(t pi / T))``:
``lr_0`` in the first epoch and never 0. Chapter 02 runs eq. 2.12 by default and offers this
variant to compare with the code.
"""

from __future__ import annotations

import math

from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.schedules import SCHEDULES


@SCHEDULES.register("cosine_tb")
def cosine_tb(cfg: RunConfig, epoch: int) -> float:
    """Multiplier of the initial lr during ``epoch`` (0-indexed): ``(1 + cos(t pi / T)) / 2``."""
    return 0.5 * (1 + math.cos(epoch * math.pi / cfg.epochs))
