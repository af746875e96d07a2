"""Chapter 06's settings: one typed, checked field per setting, and their values per profile.

``paper`` is the source's setting (``[Tuddenham2026]`` §5.4.1: "5.4.1-untuned" = CIFAR-10
40k/10k, batch 1024, lr 1e-2, momentum 0.9, wd 5e-4, 100 epochs, no schedule named, 5 runs; the
table 5.1 sets with MultiStep x0.1 at 100/150 of 200 epochs). ``quick`` is our reduction on
Fashion-MNIST (10k/2k/2k); ``smoke`` the same code on synthetic data in seconds.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from lalr_core.core.runs.chapter import ChapterSettings, check_names, positive
from lalr_core.core.data import check_dataset_name
from lalr_core.core.models.networks import TORCHVISION_ARCHS, build_model, check_model_name
from lalr_core.core.runs import EXECUTORS


@dataclass(frozen=True)
class Settings(ChapterSettings):
    """The settings of notebook 06 at one profile (see ``PROFILES``). Learning rates are per
    step, weight decays are L2 added to the gradient, epochs and steps count optimiser passes
    and steps, ``*_seeds`` are numbers of seeds (0, 1, ...)."""

    # Data of every classification run, and the "5.4.1-untuned" SGDM base of the suite (table
    # 5.3, figs 5.1, 5.3-5.6, G.1) that tables 5.4-5.6 and figs 5.10-5.14 change one thing of.
    dataset: str              # a `lalr_core.core.data.DATASETS` name
    synthetic: bool           # in-memory data in the dataset's shapes (smoke)
    n_train: int | None       # training examples; None = the train split minus n_val
    n_val: int                # held out from the train split (the validation curves)
    n_test: int | None        # test examples; None = the whole test split
    augment: bool             # random crop + horizontal flip
    batch_size: int           # examples per step
    epochs: int
    lr: float                 # sec. 5.4.1.1: 1e-2, constant
    momentum: float           # sec. 5.4.1.1: 0.9
    wd: float                 # sec. 5.4.1.1: 5e-4
    widths: dict              # model -> width multiplier (others 1.0)
    # Table 5.3 and the learning curves: the suite of models, SVD and Newton-Schulz Orth-SGDM.
    suite_models: tuple[str, ...]
    seeds: int                # SGDM / Orth-SGDM runs per model
    ns_seeds: int             # Newton-Schulz runs per model, paired with suite seeds 0, 1, ...
    f51_model: str            # fig 5.1's model when it is in the suite (else the suite's first)
    f53_mark: float           # figs 5.1/5.3: validation accuracy (%) whose epochs are compared
    source_analogue: dict     # reduced model -> the source model whose cells it stands beside
    # Tables 5.1 and 5.2: tuned optimisers (their other hyper-parameters: ``runs._T51``).
    t51_model: str
    t51_adamw: bool           # add AdamW (+ clip) on ResNet-18 (paper)
    t51_epochs: int
    t51_milestones: tuple[int, ...]  # epochs at which the lr is multiplied by 0.1
    t51_seeds: int
    t51_adam_lr: float        # Adam and Adam-clip lr (the source's 0.01; 1e-3 reduced)
    t51_sgdm_wd: float        # SGDM's wd (the source's 1e-2; 1e-3 reduced)
    thresholds: tuple[float, ...]  # table 5.2's validation-accuracy marks, percent
    # Table 5.4: the lr x momentum grid (Adam: beta1 = momentum, beta2 = 0.999).
    t54_model: str
    t54_lrs: tuple[float, ...]
    t54_moms: tuple[float, ...]
    t54_epochs: int
    t54_seeds: int
    # Tables 5.5 (normalisation) and 5.6 (conv-only): models and runs per (model, variant).
    ablation_seeds: int
    t55_models: tuple[str, ...]
    t56_models: tuple[str, ...]
    # Fig 5.7's reduced analogue (Fashion-MNIST, one epoch) and its ImageNet run at paper.
    f57_model: str            # the analogue's model when the chapter's dataset is Fashion-MNIST
    f57_n_train: int | None   # None = the whole train split minus f57_n_val
    f57_n_val: int            # also the analogue's test examples
    f57_batch: int
    f57_eval_every: int       # steps between validations; 0 = 5 (paper, whose run is ImageNet's)
    f57_imagenet: dict        # `imagenet.CLASSIFIER_DEFAULTS` changes of the ImageNet run
    # Fig 5.8: reduced Barlow Twins with LARS / Orth-LARS (trunk convs only).
    bt_steps: int
    bt_batch: int
    bt_lr: float
    bt_momentum: float
    bt_wd: float
    bt_eta: float             # LARS trust coefficient
    bt_lambd: float           # weight of the off-diagonal term of the loss
    bt_noise: float           # std of the views' Gaussian noise (normalised pixels)
    bt_projector: tuple[int, ...]  # projector widths after the trunk
    bt_window: int            # fig 5.8's check: mean loss over the first this many steps
    # Fig 5.9: the Poisson VAE with Adam / Orth-Adam (encoder only).
    vae_steps: int
    vae_batch: int
    vae_lr: float
    vae_eval_every: int       # steps between held-out MSE evaluations
    unsup_seeds: int          # runs per optimiser of figs 5.8 and 5.9
    # Figs 5.10, 5.11: filter |cos| at the two lrs (the first: fig 5.10, lr = 1 in the source).
    cos_model: str
    cos_layers: tuple[str, str]    # panels A, B
    cos_lrs: tuple[float, float]
    cos_epochs: int
    cos_every: int            # steps between records
    cos_seeds: int            # runs per (lr, optimiser), paired by seed (the source shows one)
    # Fig 5.12: representation similarity, probed during the seed-0 suite runs.
    rep_model: str            # one of suite_models
    rep_modules: tuple[str, ...]
    rep_every: int            # steps between records
    # Fig 5.13: temporarily disabled parameters, probed during the suite runs of every seed
    # (drawn: the source's model or its analogue, which has batch norm), and the same probe on
    # a model without batch norm (not a source model), where exact zeros can occur: its SGDM /
    # Orth-SGDM runs are the suite's when it is in the suite, else their own ``seeds`` runs.
    tdp_model: str            # one of suite_models
    tdp_layer: str
    tdp_exact_model: str      # the exact-zero check's model (needs no batch norm to be judged)
    tdp_exact_layer: str
    tdp_window: int           # N of the running mean (the source's 50), batches
    # Fig 5.14: mini-batch sizes.
    f514_model: str
    f514_batches: tuple[int, ...]
    f514_n_train: int
    f514_epochs: int
    f514_seeds: int
    f514_overtake: int        # the batch size from which Orth-SGDM overtakes (the source's 32)
    # Figs I.1, I.2: the symmetry probe without and with skip connections.
    sym_models: tuple[str, str]
    sym_layer: str
    sym_epochs: int
    sym_every: int            # steps between records
    sym_seeds: int            # runs per model (the skip check pairs them by seed)
    sym_skip: int             # steps k of the own-update null: phi from theta_{t+k}, by when
                              # g_t's momentum echo has decayed to 0.9^k (< 1 % at k = 44);
                              # a multiple of sym_every
    # Execution: parallel training processes and the sweep's executor.
    workers: int
    executor: str | None      # "local" or "ray" (pip install .[distributed])
    # The classifier's null direction (our addition, not a source item: `classifier_null`).
    null_seeds: dict          # model -> Orth-SGDM runs with the null direction dropped, seeds
                              # 0, 1, ..., each paired with the complete (source) run of its seed
    null_probe: tuple[str, ...]  # models of the float64 complete-vs-drop probe
    null_steps: int           # steps of that probe
    null_f32_steps: int       # steps of its float32 run (with the rounding-only control)

    @property
    def datasets(self) -> tuple[str, ...]:
        """The real datasets the driver prepares: the chapter's and fig 5.7's Fashion-MNIST
        (ImageNet is used only where it is already present)."""
        return () if self.synthetic else tuple(sorted({self.dataset, "fashion_mnist"}))

    def check(self) -> None:
        """Reject values the runs or the notebook's cells cannot use (``ValueError``)."""
        check_null_settings(self)  # the classifier-null section's settings
        check_names(self, "dataset", check_dataset_name)
        for name in ("suite_models", "f51_model", "t51_model", "t54_model", "t55_models",
                     "t56_models", "f57_model", "cos_model", "rep_model", "tdp_model",
                     "tdp_exact_model", "f514_model", "sym_models", "widths", "source_analogue"):
            check_names(self, name, check_model_name)
        if any(isinstance(w, bool) or not isinstance(w, (int, float)) or w <= 0
               for w in self.widths.values()):
            raise ValueError(f"setting 'widths' must map models to positive numbers, "
                             f"got {self.widths!r}")
        positive(self, "n_train", "n_test", "f57_n_train", allow_none=True)
        positive(self, "n_val", "batch_size", "epochs", "lr", "seeds", "ns_seeds", "t51_epochs",
                 "t51_milestones", "t51_seeds", "t51_adam_lr", "thresholds", "t54_lrs",
                 "t54_epochs", "t54_seeds", "ablation_seeds", "f57_n_val", "f57_batch",
                 "bt_steps", "bt_batch", "bt_lr", "bt_eta", "bt_lambd", "bt_projector",
                 "bt_window", "vae_steps", "vae_batch", "vae_lr", "vae_eval_every",
                 "unsup_seeds", "cos_lrs", "cos_epochs", "cos_every", "rep_every", "tdp_window",
                 "f514_batches", "f514_n_train", "f514_epochs", "f514_seeds", "f514_overtake",
                 "f53_mark", "sym_epochs", "sym_every", "sym_seeds", "sym_skip", "cos_seeds",
                 "workers")
        for name in ("wd", "t51_sgdm_wd", "bt_wd", "bt_noise", "f57_eval_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"setting {name!r} must be >= 0, got {getattr(self, name)!r}")
        for name in ("momentum", "t54_moms", "bt_momentum"):
            value = getattr(self, name)
            if not all(0 <= v < 1 for v in (value if isinstance(value, tuple) else (value,))):
                raise ValueError(f"setting {name!r} must lie in [0, 1), got {value!r}")
        for name in ("suite_models", "t55_models", "t56_models", "t54_lrs", "t54_moms",
                     "rep_modules", "f514_batches", "bt_projector"):
            if not getattr(self, name):
                raise ValueError(f"setting {name!r} must not be empty")
        if list(self.t51_milestones) != sorted(self.t51_milestones) or any(
                m >= self.t51_epochs for m in self.t51_milestones):
            raise ValueError(f"setting 't51_milestones' must be increasing epochs in "
                             f"(0, t51_epochs = {self.t51_epochs}), got {self.t51_milestones!r}")
        if len(self.thresholds) < 2 or any(t > 100 for t in self.thresholds):
            raise ValueError(f"setting 'thresholds' must be >= 2 percentages in (0, 100] (table "
                             f"5.2 checks the first two), got {self.thresholds!r}")
        if self.sym_skip % self.sym_every:
            raise ValueError(f"setting 'sym_skip' must be a multiple of sym_every = "
                             f"{self.sym_every} (the probe keeps every sym_every-th step), "
                             f"got {self.sym_skip}")
        if self.ns_seeds > self.seeds:
            raise ValueError(f"setting 'ns_seeds' must be <= seeds = {self.seeds} (each "
                             f"Newton-Schulz run is paired with an SVD run), got {self.ns_seeds}")
        for name in ("rep_model", "tdp_model"):
            if getattr(self, name) not in self.suite_models:
                raise ValueError(f"setting {name!r} must be one of suite_models "
                                 f"{self.suite_models} (its probes ride on the suite's runs), "
                                 f"got {getattr(self, name)!r}")
        if self.tdp_exact_model == self.tdp_model and self.tdp_exact_layer != self.tdp_layer:
            raise ValueError(f"settings 'tdp_exact_layer' and 'tdp_layer' must be equal when "
                             f"the two models are ({self.tdp_model!r}): one probe per run, got "
                             f"{self.tdp_exact_layer!r} and {self.tdp_layer!r}")
        if self.executor is not None and self.executor not in EXECUTORS:
            raise ValueError(f"setting 'executor' must be one of {EXECUTORS}, "
                             f"got {self.executor!r}")
        _check_imagenet(self.f57_imagenet)
        for name, models in (("cos_layers", (self.cos_model,)), ("rep_modules", (self.rep_model,)),
                             ("tdp_layer", (self.tdp_model,)),
                             ("tdp_exact_layer", (self.tdp_exact_model,)),
                             ("sym_layer", self.sym_models)):
            value = getattr(self, name)
            for model in models:
                known = _module_names(model)
                if bad := [m for m in (value if isinstance(value, tuple) else (value,))
                           if m not in known]:
                    raise ValueError(f"setting {name!r}: model {model!r} has no modules {bad}; "
                                     f"it has e.g. {list(known)[:8]}")


@functools.cache
def _module_names(model: str) -> tuple[str, ...]:
    """The ``named_modules`` names of ``model``, built on the meta device (no memory, no
    init compute), so a probe's layer name is checked before any run."""
    with torch.device("meta"):
        return tuple(n for n, _ in build_model(model).named_modules() if n)


def _check_imagenet(params: dict) -> None:
    """Fig 5.7's ImageNet run: known `CLASSIFIER_DEFAULTS` keys (the notebook sets
    ``grad_transform`` and ``seed``), a torchvision model, positive sizes and lr."""
    from lalr_core.chapters.ch06_orthogonal_sgdm.imagenet import CLASSIFIER_DEFAULTS

    known = sorted(set(CLASSIFIER_DEFAULTS) - {"grad_transform", "seed"})
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"setting 'f57_imagenet' has unknown keys {unknown}; known: {known}")
    p = {**CLASSIFIER_DEFAULTS, **params}
    if str(p["model"]).removesuffix("_tv") not in TORCHVISION_ARCHS:
        raise ValueError(f"setting 'f57_imagenet' needs a torchvision model "
                         f"{TORCHVISION_ARCHS}, got {p['model']!r}")
    for key in ("lr", "batch_size", "epochs"):
        if isinstance(p[key], bool) or not isinstance(p[key], (int, float)) or p[key] <= 0:
            raise ValueError(f"setting 'f57_imagenet' needs a positive {key}, got {p[key]!r}")
    if not 0 <= p["momentum"] < 1 or p["wd"] < 0:
        raise ValueError(f"setting 'f57_imagenet' needs momentum in [0, 1) and wd >= 0, "
                         f"got {p['momentum']!r}, {p['wd']!r}")


# ----------------------------------------------------------------------------- profiles
# The untuned base (sec. 5.4.1.1; tables 5.5, 5.6 and figs 5.12-5.14 say "trained as in
# §5.4.1", read as this base) and fig 5.13's running mean, everywhere.
_SOURCE = dict(lr=1e-2, momentum=0.9, wd=5e-4, f51_model="resnet20", tdp_window=50)
_COMMON_SMALL = dict(
    suite_models=("basic_cnn", "resnet8", "mlp"), widths={"resnet8": 0.5},
    t51_model="basic_cnn", t51_adamw=False,
    t55_models=("basic_cnn", "resnet8"), t56_models=("basic_cnn", "resnet8"),
    t54_model="basic_cnn", t54_lrs=(1e-1, 1e-2, 1e-3), t54_moms=(0.9, 0.0),
    rep_model="basic_cnn", rep_modules=("bn1", "bn2", "bn3"),
    tdp_model="resnet8", tdp_layer="layer2.0.conv2",
    tdp_exact_model="basic_cnn_nobn", tdp_exact_layer="conv2",
    cos_model="basic_cnn", cos_layers=("conv2", "conv3"), cos_lrs=(1.0, 0.01),
    sym_models=("basic_cnn", "basic_cnn_skip"), sym_layer="conv2",
    f514_model="basic_cnn", f514_batches=(4, 32, 256),
    f57_model="basic_cnn",
    source_analogue={"resnet8": "resnet20"},  # reduced model -> the source model it stands for
)
# Figs 5.7-5.9 at every profile: the source's ImageNet ResNet-34 run (sec. 5.4.1.1), the
# reduced Barlow Twins (LARS trust 1e-3, momentum 0.9, lr 0.2, wd 1.5e-6: the Barlow Twins
# defaults, [Zbontar2021]; ours: lambda 5e-3, views = crop pad 2 + noise 0.1, projector 256-256,
# and the check averaging the first 100 steps) and the P-VAE (Adam 1e-3, batch 128).
_UNSUPERVISED = dict(
    f57_imagenet=dict(model="resnet34", lr=1e-2, momentum=0.9, wd=5e-4, batch_size=1024,
                      epochs=100),
    bt_lr=0.2, bt_momentum=0.9, bt_wd=1.5e-6, bt_eta=1e-3, bt_lambd=5e-3, bt_noise=0.1,
    bt_projector=(256, 256), bt_window=100, vae_batch=128, vae_lr=1e-3,
)


def check_null_settings(s: Settings) -> None:
    """``ValueError`` unless ``null_seeds`` maps known models to seed counts >= 1,
    ``null_probe`` names known models and ``null_steps``, ``null_f32_steps`` >= 1."""
    if not isinstance(s.null_seeds, Mapping) or not s.null_seeds:
        raise ValueError(f"setting 'null_seeds' must map models to seed counts, "
                         f"got {s.null_seeds!r}")
    for name, models in (("null_seeds", list(s.null_seeds)), ("null_probe", s.null_probe)):
        for model in models:
            try:
                check_model_name(model)
            except ValueError as e:
                raise ValueError(f"setting {name!r}: {e}") from None
    for model, n in s.null_seeds.items():
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"setting 'null_seeds' needs an int >= 1 per model, got "
                             f"{model}: {n!r}")
    for name in ("null_steps", "null_f32_steps"):
        n = getattr(s, name)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"setting {name!r} must be an int >= 1, got {n!r}")


PROFILES: dict[str, Settings] = {
    "smoke": Settings(**{
        **_COMMON_SMALL, **_SOURCE, "t54_lrs": (1e-1, 1e-2), "t54_moms": (0.9,),
        "f514_batches": (4, 32)}, dataset="fashion_mnist", synthetic=True, n_train=256,
        n_val=64, n_test=64, augment=False, batch_size=64, epochs=2, seeds=1, ns_seeds=1,
        ablation_seeds=1, t51_epochs=2, t51_milestones=(1,), t51_seeds=1, t51_adam_lr=1e-3,
        t51_sgdm_wd=1e-3, thresholds=(20, 30, 40, 50, 60), t54_epochs=1, t54_seeds=1,
        cos_epochs=1, cos_every=2, cos_seeds=1, rep_every=2, sym_epochs=1, sym_every=1,
        sym_skip=2, f514_n_train=64,
        f514_epochs=1, f514_seeds=1, f514_overtake=32, f53_mark=20, sym_seeds=1,
        f57_n_train=None, f57_n_val=64, f57_batch=64,
        f57_eval_every=2, bt_steps=6, bt_batch=64, vae_steps=30, vae_eval_every=10,
        unsup_seeds=1, **_UNSUPERVISED, workers=1, executor=None,
        null_seeds={"basic_cnn": 1}, null_probe=("basic_cnn",), null_steps=3,
        null_f32_steps=3,
    ),
    "quick": Settings(
        **_COMMON_SMALL, **_SOURCE, dataset="fashion_mnist", synthetic=False, n_train=10_000,
        n_val=2_000, n_test=2_000, augment=False, batch_size=256, epochs=8, seeds=3,
        ns_seeds=1, ablation_seeds=3, t51_epochs=10, t51_milestones=(6, 8), t51_seeds=3,
        t51_adam_lr=1e-3, t51_sgdm_wd=1e-3, thresholds=(60, 75, 80, 85, 88), t54_epochs=3,
        t54_seeds=1, cos_epochs=3, cos_every=10, cos_seeds=3, rep_every=10, sym_epochs=3,
        sym_every=1, sym_skip=44,
        f514_n_train=4_000, f514_epochs=1, f514_seeds=3, f514_overtake=32, f53_mark=80,
        sym_seeds=3, f57_n_train=None, f57_n_val=5_000,
        f57_batch=1024, f57_eval_every=5, bt_steps=150, bt_batch=256, vae_steps=1500,
        vae_eval_every=100, unsup_seeds=3, **_UNSUPERVISED, workers=2, executor=None,
        null_seeds={"basic_cnn": 3, "resnet8": 2}, null_probe=("basic_cnn",), null_steps=10,
        null_f32_steps=30,
    ),
    "paper": Settings(
        **_SOURCE, dataset="cifar10", synthetic=False, n_train=40_000, n_val=10_000,
        n_test=None, augment=True, batch_size=1024, epochs=100, seeds=5, ns_seeds=5,
        ablation_seeds=5,
        suite_models=("basic_cnn", "resnet20", "resnet44", "resnet18_tv", "resnet34_tv",
                      "resnet50_tv", "densenet121_tv", "densenet161_tv", "resnext50_32x4d_tv",
                      "wide_resnet50_2_tv"), widths={},
        t51_model="resnet20", t51_adamw=True, t51_epochs=200, t51_milestones=(100, 150),
        t51_seeds=5, t51_adam_lr=0.01, t51_sgdm_wd=1e-2, thresholds=(50, 75, 80, 85, 90),
        t55_models=("basic_cnn", "resnet18_tv", "resnet50_tv", "resnet44", "densenet121_tv"),
        t56_models=("basic_cnn", "resnet34_tv", "resnet20"),
        t54_model="resnet20", t54_lrs=(1e-1, 1e-2, 1e-3, 1e-4),
        t54_moms=(0.95, 0.9, 0.8, 0.5, 0.0), t54_epochs=100, t54_seeds=5,
        rep_model="basic_cnn", rep_modules=("bn1", "bn2", "bn3"), rep_every=10,
        tdp_model="resnet50_tv", tdp_layer="layer2.1.conv2",
        tdp_exact_model="basic_cnn_nobn", tdp_exact_layer="conv2",
        cos_model="resnet34_tv", cos_layers=("layer1.2.conv2", "layer4.1.conv1"),
        cos_lrs=(1.0, 0.01), cos_epochs=100, cos_every=10, cos_seeds=3,
        sym_models=("basic_cnn", "basic_cnn_skip"), sym_layer="conv2", sym_epochs=100,
        sym_every=5, sym_skip=45,
        f514_model="resnet20", f514_batches=(4, 32, 1024), f514_n_train=40_000,
        f514_epochs=100, f514_seeds=1, f514_overtake=32, f53_mark=50, sym_seeds=3,
        f57_model="resnet34_tv", f57_n_train=None, f57_n_val=5_000, f57_batch=1024,
        f57_eval_every=0, source_analogue={},
        bt_steps=150, bt_batch=256, vae_steps=200_000, vae_eval_every=2_000,
        unsup_seeds=3, **_UNSUPERVISED,
        workers=1, executor=None,  # "ray" on a cluster (pip install .[distributed])
        null_seeds={"basic_cnn": 5, "resnet20": 5, "resnet34_tv": 5},  # table 5.6's models
        null_probe=("basic_cnn", "resnet20"), null_steps=20, null_f32_steps=40,
    ),
}
