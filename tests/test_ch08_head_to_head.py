"""Chapter 08: Muon's split and step against explicit oracles, the contenders' configs, the
settings' refusals, the tuning choice, time to target, and every claim's PASS / FAIL /
INCONCLUSIVE on synthetic evaluation frames."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from lalr_core.chapters import chapter, chapter_settings
from lalr_core.chapters.ch08_head_to_head import CONTENDERS, config, eval_runs, tuning_runs
from lalr_core.chapters.ch08_head_to_head import findings as fd
from lalr_core.chapters.ch08_head_to_head import summaries as sm
from lalr_core.chapters.ch08_head_to_head.claims import COMPARED, TEMPLATES, claim
from lalr_core.core.loop.config import RunConfig
from lalr_core.core.loop.optim import make_optimizer
from lalr_core.core.models.networks import build_model
from lalr_core.methods.orthogonal.muon import ADAMW_RATIO, MuonSplit, hidden_matrices


# ----------------------------------------------------------------------------- Muon
def test_muon_split_of_a_resnet_leaves_stem_and_head_to_adamw():
    model = build_model("resnet8", in_channels=1, num_classes=10, width=0.5, image_size=28)
    hidden = hidden_matrices(model)
    convs = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    assert "conv1.weight" not in hidden and "fc.weight" not in hidden
    assert hidden == [f"{n}.weight" for n in convs[1:]]


class _Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(7, 4)
        self.a = nn.Linear(4, 4)
        self.norm = nn.LayerNorm(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.norm(self.a(self.emb(x)).relu())).mean(1)


def test_muon_split_with_an_embedding_keeps_the_first_linear_hidden():
    assert hidden_matrices(_Tiny()) == ["a.weight"]


def test_muon_first_step_is_the_orthogonalised_nesterov_momentum():
    """Oracle: the authors' rule by hand. Step 1 of Nesterov momentum on gradient g is a
    multiple of g; Newton-Schulz is scale-free, so the step is close to the polar factor
    U V^T of g (times sqrt(max(1, out/in)) = 1 for a square matrix); the AdamW group's first
    step is ``lr * ratio * sign(g)`` (bias-corrected Adam)."""
    torch.manual_seed(0)
    model = _Tiny()
    cfg = RunConfig(optimizer="muon", lr=0.02, wd=0.0, methods=(MuonSplit(),))
    opt = make_optimizer(cfg, model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    loss = model(torch.randint(0, 7, (3, 5))).square().sum()
    loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
    opt.step()
    after = dict(model.named_parameters())
    step = (before["a.weight"] - after["a.weight"].detach()) / cfg.lr
    u, _, vh = torch.linalg.svd(grads["a.weight"])
    polar = u @ vh
    # Newton-Schulz's quintic lands singular values in roughly [0.7, 1.2], not exactly 1
    assert torch.nn.functional.cosine_similarity(step.flatten(), polar.flatten(), 0) > 0.95
    s = torch.linalg.svdvals(step)
    assert s.min() > 0.5 and s.max() < 1.3
    head = (before["head.weight"] - after["head.weight"].detach()) / (cfg.lr * ADAMW_RATIO)
    assert torch.allclose(head, grads["head.weight"].sign(), atol=1e-3)


def test_muon_needs_its_split():
    with pytest.raises(ValueError, match="MuonSplit"):
        make_optimizer(RunConfig(optimizer="muon", lr=0.02), _Tiny())


# ----------------------------------------------------------------------------- settings
def test_profiles_build_and_every_contender_has_the_same_trials():
    for profile in ("smoke", "quick", "paper"):
        s = chapter_settings("08", profile)
        for task in s.tasks:
            runs = tuning_runs(s, task)
            counts = pd.Series([r.contender for r in runs]).value_counts()
            assert set(counts.index) == set(CONTENDERS)
            assert counts.nunique() == 1
            assert len({r.seed for r in runs} & {r.seed for r in eval_runs(s, task)}) == 0
    quick = chapter_settings("08", "quick")
    assert quick.eval_seeds >= 5


@pytest.mark.parametrize("overrides, match", [
    ({"contenders": ["adamw"]}, "sgdm"),
    ({"contenders": ["sgdm", "adagrad"]}, "unknown contender"),
    ({"tuning_seeds": [0]}, "disjoint"),
    ({"lr_factors": [0.0]}, "positive"),
    ({"tuned_lr": {"nope": {"sgdm": 0.1}}}, "unknown task"),
    ({"tuned_lr": {"fmnist_resnet8": {"sgdm": -1}}}, "lrs > 0"),
    ({"tasks": {"x": {"kind": "audio"}}}, "x"),
    ({"tasks": {"x": dict(kind="image", dataset="mnist_nope", n_train=10, n_val=1,
                          n_test=1, batch_size=2, epochs=1, wd=0.0, model="resnet8")}},
     "dataset"),
    ({"tb_scheme": "nope"}, "tb_scheme"),
    ({"target_fraction": 1.5}, "target_fraction"),
])
def test_bad_settings_stop_before_compute(overrides, match):
    with pytest.raises(ValueError, match=match):
        chapter_settings("08", "smoke", overrides)


def test_contenders_build_their_methods():
    s = chapter_settings("08", "smoke")
    task = "fmnist_resnet8"
    cfgs = {c: config(s, task, c, 0.01, 0) for c in CONTENDERS}
    assert cfgs["tempbalance"].optimizer == "sgdm" and cfgs["tempbalance"].method("tempbalance")
    assert cfgs["lalr"].optimizer == "adamw" and cfgs["lalr"].method("lalr")
    assert cfgs["orth_svd"].method("grad_transform").method == "svd"
    assert cfgs["orth_ns"].method("grad_transform").method == "newton_schulz"
    assert cfgs["muon"].optimizer == "muon" and cfgs["lars"].optimizer == "lars_po"
    # every contender builds its optimiser on the task's model
    for c, cfg in cfgs.items():
        model = build_model(cfg.model, in_channels=1, num_classes=10, width=cfg.width,
                            image_size=28)
        make_optimizer(cfg, model)


def test_eval_runs_take_the_tuned_lr():
    s = chapter_settings("08", "smoke", {"tuned_lr": {"fmnist_resnet8": {"muon": 0.123}}})
    lrs = {r.lr for r in eval_runs(s, "fmnist_resnet8") if r.contender == "muon"}
    assert lrs == {0.123}
    sections = chapter("08").runs(s, "eval:fmnist_resnet8")[0]
    assert any(c.lr == 0.123 and c.optimizer == "muon" for c in sections)


# ----------------------------------------------------------------------------- summaries
def test_choose_lr_takes_the_best_mean_validation_and_counts_divergence_worst():
    rows = [("t", "sgdm", 0.1, 0, 0.5), ("t", "sgdm", 0.1, 1, 0.7),
            ("t", "sgdm", 0.3, 0, 0.65), ("t", "sgdm", 0.3, 1, 0.6),
            ("t", "muon", 0.01, 0, math.nan), ("t", "muon", 0.02, 0, 0.1)]
    frame = pd.DataFrame(rows, columns=["task", "contender", "lr", "seed", "val_acc"])
    frame["diverged"] = frame.val_acc.isna()
    chosen = sm.choose_lr(frame)
    assert chosen == {"t": {"sgdm": 0.3, "muon": 0.02}}
    table = sm.tuning_table(frame, chosen)
    assert table.chosen.sum() == 2
    assert table.edge[table.chosen].all()      # both choices are the largest of their trials


def test_time_to_target_reads_the_first_epoch_that_reaches_it():
    h = pd.DataFrame({"epoch": [1, 2, 3], "step": [10, 20, 30], "time_s": [1.0, 2.5, 4.0],
                      "val_acc": [0.3, 0.6, 0.8]})
    assert sm.time_to_target(h, 0.55) == (20.0, 2.5)
    assert all(math.isnan(v) for v in sm.time_to_target(h, 0.9))


# ----------------------------------------------------------------------------- claims
def _frame(effect: float, noise: float, n: int = 6, seed: int = 0) -> pd.DataFrame:
    """An evaluation frame in which every method beats its control by ``effect`` (accuracy)
    with seed noise ``noise``."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n):
        base = 0.8 + 0.02 * rng.standard_normal()
        for c in CONTENDERS:
            is_method = any(c == m for m, _, _ in COMPARED.values())
            acc = base + (effect + noise * rng.standard_normal() if is_method else 0.0)
            rows.append(dict(stage="eval", task="t", contender=c, seed=s, test_acc=acc,
                             early_val_acc=acc - 0.1, val_acc=acc, s_per_step=1.0 + 0.1 * s))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("template", sorted(TEMPLATES))
@pytest.mark.parametrize("effect, noise, verdict", [
    (0.02, 0.002, "PASS"), (-0.02, 0.002, "FAIL"), (0.0005, 0.02, "INCONCLUSIVE")])
def test_claims_pass_fail_and_inconclusive(template, effect, noise, verdict):
    c, finding = fd.judge(_frame(effect, noise), template, "t")
    assert c.id == f"{template}:t"
    assert finding.evidence.claim_verdict == verdict


def test_lalrs_fine_tuning_claim_is_na_on_a_task_trained_from_scratch():
    _, finding = fd.judge(_frame(0.05, 0.001), "lalr-final", "t", kind="image")
    assert finding.verdict == "N/A" and "from scratch" in finding.detail


def test_a_claim_on_too_few_seeds_is_inconclusive():
    _, finding = fd.judge(_frame(0.05, 0.001, n=2), "tb-final", "t")
    assert finding.evidence.claim_verdict == "INCONCLUSIVE"


def test_claim_templates_are_unknown_names_refused():
    with pytest.raises(ValueError, match="unknown claim"):
        claim("nope", "t")


def test_step_time_ratio_is_the_paired_geometric_mean():
    f = _frame(0.0, 0.0)
    f.loc[f.contender == "muon", "s_per_step"] *= 2.0
    ev = fd.step_time_ratio(f, "t", "muon")
    assert ev.estimate == pytest.approx(2.0)


def test_versus_best_is_zero_width_free_and_signed():
    f = _frame(0.02, 0.002)
    best = sm.best_contender(f, "t")
    assert best in {m for m, _, _ in COMPARED.values()}
    assert fd.versus(f, "t", "sgdm", best).estimate < 0


def test_settings_round_trip_keeps_a_frozen_copy():
    s = chapter_settings("08", "smoke")
    t = s.with_overrides({"tuned_lr": {"tinytf_sent": {"sgdm": 0.01}}})
    assert s.tuned_lr == {} and t.tuned_lr["tinytf_sent"]["sgdm"] == 0.01
    assert dataclasses.replace(t).tuned_lr == t.tuned_lr
