"""Chapter 08's claim tests as data: the sources' own statements about their methods, judged
on common ground (every contender's lr tuned with the same number of trials, then fresh
evaluation seeds), once per task.

Each template below is the claim; `claim` makes its copy for one task (id
``"<template>:<task>"``). The control is the optimiser the method changes, at its own tuned
lr: SGDM for Orthogonal-SGDM and TempBalance, AdamW for LALR. One replicate is an evaluation
seed: the method's and the control's networks trained from that seed (same initialisation and
data order), paired; on the text task both fine-tune the one shared pretrained TinyTF, so the
claim is about fine-tuning given that pretraining. A difference inside the seeds' noise is
INCONCLUSIVE. Accuracies are percentage points; every threshold is 0 (the sources claim a
direction, not a size). Synthetic PASS / FAIL / INCONCLUSIVE cases:
``tests/test_ch08_head_to_head.py``.
"""

from __future__ import annotations

import dataclasses

from lalr_core.core.results.claims import Claim

PTS = "points"
SEED_PAIR = ("an evaluation seed (fresh: never a tuning seed): the method's and its control's "
             "networks trained from that seed at their own tuned lrs, same initialisation and "
             "data order, paired; a text task's fine-tunings share the one pretrained TinyTF")
VS_SGDM = "SGDM at its own tuned lr, trained from the same seed"
VS_ADAMW = "AdamW at its own tuned lr, trained from the same seed (LALR's uniform-lr control)"

# The sources' sentences, verbatim.
ORTH_FASTER = ("More importantly though, we can see that the model learns much faster at the "
               "beginning of training, as shown by figure 5.3, this means that we do not need "
               "as many epochs to get to a well-performing network.")
ORTH_BETTER = ("Orthogonal-SGDM is more efficient and achieves better test accuracy than SGDM "
               "for every model we trained in this experiment.")
TB_BETTER = ("On ResNet34, test time improvements (blue) are more prominent (especially at "
             "initial learning rate of 0.2) while suffering minimal training accuracy loss "
             "compared to ResNet18, especially at 25%-width.")
LALR_BETTER = ("Capacity optimization: Focuses training on underutilized layers, extracting "
               "more performance from the existing model structure without increasing model "
               "size.")

# template id -> (the contender, its control, the compared quantity, the claim)
COMPARED = {
    "orth-early": ("orth_svd", "sgdm", "early_val_acc"),
    "orth-final": ("orth_svd", "sgdm", "test_acc"),
    "tb-final": ("tempbalance", "sgdm", "test_acc"),
    "lalr-final": ("lalr", "adamw", "test_acc"),
}
# template -> the task kind its source's claim is about (others: N/A). LALR is a fine-tuning
# method: its source claims nothing about training from scratch.
SCOPE = {"lalr-final": "text"}
TEMPLATES: dict[str, Claim] = {c.id: c for c in (
    Claim("orth-early", "Orthogonal-SGDM (SVD) learns faster at the start of training than "
          "SGDM: higher validation accuracy after the first early_epochs epochs",
          "[Tuddenham2026] fig 5.3", quote=ORTH_FASTER, item="fig8.1",
          threshold=0.0, side="greater", unit=PTS, replicate=SEED_PAIR, null=VS_SGDM),
    Claim("orth-final", "Orthogonal-SGDM (SVD) ends at a higher test accuracy than SGDM",
          "[Tuddenham2026] §5.4.1.1, table 5.3", quote=ORTH_BETTER, item="table8.2",
          threshold=0.0, side="greater", unit=PTS, replicate=SEED_PAIR, null=VS_SGDM),
    Claim("tb-final", "TempBalance's per-layer lrs (on SGDM) improve test accuracy over SGDM's "
          "one global lr", "[Ye2023] ch. 2, fig 2.1", quote=TB_BETTER, item="table8.2",
          threshold=0.0, side="greater", unit=PTS, replicate=SEED_PAIR, null=VS_SGDM),
    Claim("lalr-final", "LALR (on AdamW) reaches a higher test accuracy than uniform-lr AdamW "
          "(chapter 01's L-C2)", "[LALR] Abstract", quote=LALR_BETTER, item="table8.2",
          threshold=0.0, side="greater", unit=PTS, replicate=SEED_PAIR, null=VS_ADAMW),
)}


def claim(template: str, task: str) -> Claim:
    """The claim ``template`` on ``task`` (its id ``"<template>:<task>"``)."""
    if template not in TEMPLATES:
        raise ValueError(f"unknown claim {template!r}; known: {sorted(TEMPLATES)}")
    t = TEMPLATES[template]
    return dataclasses.replace(t, id=f"{template}:{task}", text=f"{t.text} (task {task})")


def profile_tasks() -> dict[str, str]:
    """Task name -> kind, over every profile's tasks."""
    from lalr_core.chapters.ch08_head_to_head.settings import PROFILES
    return {task: spec["kind"] for s in PROFILES.values() for task, spec in s.tasks.items()}


def in_scope(template: str, kind: str) -> bool:
    """Whether the source's claim ``template`` is about a task of ``kind``."""
    return SCOPE.get(template, kind) == kind


#: every claim test of every profile: each template on each task of the profiles
CLAIMS: dict[str, Claim] = {c.id: c for c in (claim(t, task) for t in TEMPLATES
                                              for task in sorted(profile_tasks()))}
