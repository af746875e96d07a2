"""Epoch lr schedules by name: ``SCHEDULES[name](cfg, epoch)`` is the multiplier of the initial
lr during ``epoch`` (0-indexed) of the run ``cfg`` (a `RunConfig`, which imports this module).
The core's are here; a method registers its own variant (TempBalance's ``"cosine_tb"``) like
any plug-in.
"""

from __future__ import annotations

import math

from lalr_core.core.loop.registry import Registry

SCHEDULES = Registry("schedule")


@SCHEDULES.register("constant")
def constant_schedule(cfg, epoch: int) -> float:
    return 1.0


@SCHEDULES.register("multistep")
def multistep_schedule(cfg, epoch: int) -> float:
    """``lr_decay`` per milestone passed (torch's MultiStepLR)."""
    return cfg.lr_decay ** sum(epoch >= m for m in cfg.milestones)


@SCHEDULES.register("cosine")
def cosine_schedule(cfg, epoch: int) -> float:
    """``lr_t = lr_0/2 * (1 + cos((t+1) pi / T))``, which reaches 0 in the last epoch (the
    TempBalance report's eq. 2.12)."""
    return 0.5 * (1 + math.cos((epoch + 1) * math.pi / cfg.epochs))
