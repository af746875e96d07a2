r"""Rank collapse of pure self-attention (``[ATDL-notes]`` sec. 4.1; the Linformer side is `linformer`).

Chapter 07 experiments E7 and E8 (ours, on sec. 4.1 and 4.2 of the lecture notes
``[ATDL-notes]``; keys: REFERENCES.md). Primary sources (``[Dong2021]``, ``[Noci2022]``,
``[Wang2020]``): Dong, Cordonnier & Loukas 2021, "Attention is not all you need: pure
attention loses rank doubly exponentially with depth" (ICML, arXiv 2103.03404); Noci et al.
2022 (arXiv 2206.03126) for the branch scaling; Wang et al. 2020, "Linformer: self-attention
with linear complexity" (arXiv 2006.04768).

**Residual.** ``res(X) = X - 1 x^T`` with ``x = argmin_x ||X - 1 x^T||`` (tokens are rows). For
the Frobenius norm the minimiser is the token mean, exactly. Dong et al. state their bounds in
the composite ``||X||_{1,inf} = sqrt(||X||_1 ||X||_inf)`` (induced max-column-sum and
max-row-sum norms), whose minimiser is not the mean in general; like their code we use the
mean for both norms. For ``l1inf`` this is a proxy within a factor
``2 (1 - 1/n)`` of the true minimum: ``X - 1 mean^T = (I - 11^T/n)(X - 1 x*^T)`` and
``||I - 11^T/n||_1 = ||I - 11^T/n||_inf = 2 (1 - 1/n)``.

**Doubly exponential decay.** One head, one layer: ``||res(SA(X))|| <= (4 gamma beta /
sqrt(d_qk)) ||res(X)||^3``; ``L`` layers of ``H`` heads: ``||res(SAN(X))|| <= (4 gamma beta H /
sqrt(d_qk))^((3^L - 1)/2) ||res(X)||^(3^L)`` (Dong et al. sec. 2, in the composite norm).
The same cube holds locally for any fixed weights: with ``X = 1 x^T + R`` the logits are
``const_i + x^T W r_j + r_i^T W r_j``; row constants cancel in the softmax and the
middle term is common to all rows, so ``P = 1 p^T + O(tau |R|^2)`` and ``res(P X W_V) =
res((P - 1 p^T) R W_V) = O(tau |R|^3)``. Hence ``u_l = -log res_l`` obeys ``u_{l+1} ~ 3 u_l -
c`` and ``log(-log res_l)`` rises with slope -> ``log 3 = 1.0986`` per layer (chapter
07's check); the regression of ``log res_{l+1}`` on ``log res_l`` has slope -> 3 and does not
depend on ``c`` (`doubly_exponential_fit` returns both). Float64 reaches its floor (~2e-16)
by layer 4-6, which leaves 2-4 usable layers: there the slope is still above ``log 3`` (1.3-2.1
measured, tau = 1-4, 20 seeds) because ``c < 0`` makes ``u_{l+1}/u_l > 3`` early on, while the
exponent is 3.0-3.3. Check the exponent; read the slope only as "about log 3 and falling".

**Setting (ours, all of it: the notes give no sizes).** Rows of ``X_0`` are ``N(0, I_d)``.
Each layer draws fresh weights: ``W_Q, W_K`` (per head ``d x d_qk``, ``d_qk = d / H``) with
entries ``N(0, 1/d)``; logits ``tau (X W_Q)(X W_K)^T / sqrt(d_qk)`` (so their spread is about
``tau`` at the input); ``W_V`` per head ``d x d`` (the output projection folded in, as Dong et
al. write ``sum_h P_h X W_h``) with entries ``N(0, 1/(d H))``, so ``sum_h W_h`` keeps the
token norm; the MLP is ``relu(Z W_1) W_2`` with ``d_ff = 4d``, He-scaled ``N(0, 2/d)`` and
``N(0, 1/d_ff)``, no biases; LN normalises each token over features without affine
parameters and sits after each sub-layer (post-LN). Skip: ``X + alpha SA(X)`` (and ``Z + alpha
MLP(Z)``); the scaled variant uses ``alpha / sqrt(L)`` (Noci et al.; credited there to
arXiv 1803.01719).

Errata in the notes (sec. 4.1) that this module does not copy:

* the MLP loosens the bound by ``lambda^((3^L - 1)/2)`` (``lambda`` multiplies the bracket),
  not ``lambda^((3L - 1)/2)``;
* Noci et al.'s limit: ``(1 + alpha^2/L)^L -> e^(alpha^2)``, so ``E[C(X^L)] -> e^(alpha_1^2 +
  alpha_2^2) C(X)``, not ``e^(alpha_1/sqrt(L) + alpha_2/sqrt(L)) C(X)`` (`gram_growth`).

Two more slips in the notes: they scale the branches by ``1/sqrt(l)`` (layer) in
their text but ``1/sqrt(L)`` (depth) in its formula; we follow the formula (Noci et al.). Their
Linformer text has ``F`` project the keys; their formula (and Wang et al.) has ``E`` for keys
and ``F`` for values, as here.

Path count (Dong et al., on skip connections): ``H^L`` paths through a pure SAN, ``C(L, l)
H^l`` of length ``l`` with skips (``sum_l C(L, l) H^l = (1 + H)^L``); see `path_count`.

**Linformer** (Wang et al.): ``softmax(Q (E K)^T / sqrt(d_k)) (F V)`` with ``E, F`` of
shape ``k x n``. The paper learns ``E, F``; at initialisation we offer block mean pooling
(among their "general projections": pooling with kernel and stride ``n/k``), exact at ``k = n``
and at uniform attention, and Gaussian ``N(0, 1/k)`` projections (the ``R`` of their Thm 2, used
there with scalings; unscaled and untrained inside the softmax they do not approximate exact
attention: measured relative error 2-65 at n = 512).

One module (over 400 lines) on purpose: the residual measures, the attention stack and the
doubly exponential fit are one experiment (E7); the Linformer side (E8) is
`lalr_core.methods.signal.linformer`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from lalr_core.core.validation import check_int
from lalr_core.methods.trajectory import check_scalar

# ----------------------------------------------------------------------------- constants
NORMS = ("fro", "l1inf")


E7_SETTING = {"n": 32, "d": 64, "heads": 4}   # E7's tokens, width, heads: our choices


E7_TEMPERATURE = 1.0                     # logit scale of our init (see the module docstring)


MLP_RATIO = 4                            # d_ff = 4 d (the usual transformer ratio)


LOG3 = math.log(3.0)                     # the doubly exponential rate per layer


def check_tokens(X, name: str = "X", min_ndim: int = 2) -> torch.Tensor:
    if not isinstance(X, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(X).__name__}")
    if X.ndim < min_ndim or X.numel() == 0 or not X.is_floating_point():
        raise ValueError(f"{name} must be a non-empty float tensor [..., n, d], got shape "
                         f"{tuple(X.shape)} and dtype {X.dtype}")
    return X


def _check_norm(norm: str) -> str:
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}")
    return norm


# ----------------------------------------------------------------------------- residual
def residual(X: torch.Tensor) -> torch.Tensor:
    """``res(X) = X - 1 x^T`` with ``x`` the token mean (Frobenius minimiser; ``l1inf`` proxy).

    Args:
        X: tokens as rows, `[..., n, d]`.

    Returns:
        `[..., n, d]`, zero iff all rows are equal.

    Raises:
        ValueError: if ``X`` is not a non-empty float tensor with at least 2 dims.
    """
    X = check_tokens(X)
    return X - X.mean(dim=-2, keepdim=True)


def matrix_norm(X: torch.Tensor, norm: str = "fro") -> torch.Tensor:
    """Frobenius, or Dong et al.'s ``sqrt(||X||_1 ||X||_inf)`` (max column / row abs sums).

    Args:
        X: `[..., n, d]`.
        norm: ``"fro"`` or ``"l1inf"``.

    Returns:
        `[...]` norms.

    Raises:
        ValueError: on a bad ``X`` or ``norm``.
    """
    X, norm = check_tokens(X), _check_norm(norm)
    if norm == "fro":
        return torch.linalg.matrix_norm(X, ord="fro")
    A = X.abs()
    return torch.sqrt(A.sum(-2).amax(-1) * A.sum(-1).amax(-1))


def relative_residual(X: torch.Tensor, norm: str = "fro") -> torch.Tensor:
    """``||res(X)|| / ||X||`` in ``norm`` (0 for identical rows, <= 1 for ``fro``).

    Args:
        X: `[..., n, d]`, not all zero.
        norm: ``"fro"`` or ``"l1inf"``.

    Returns:
        `[...]`.

    Raises:
        ValueError: on a bad ``X`` or ``norm``.
    """
    return matrix_norm(residual(X), norm) / matrix_norm(X, norm)


def token_cosine(X: torch.Tensor) -> torch.Tensor:
    """Mean cosine similarity over distinct token pairs (1 at collapse; ~0 for random tokens).

    Args:
        X: `[..., n, d]` with ``n >= 2`` and no zero rows.

    Returns:
        `[...]`.

    Raises:
        ValueError: on a bad ``X`` or ``n < 2``.
    """
    X = check_tokens(X)
    n = X.shape[-2]
    if n < 2:
        raise ValueError(f"token_cosine needs n >= 2 tokens, got {n}")
    U = X / torch.linalg.vector_norm(X, dim=-1, keepdim=True)
    s = U.sum(-2)
    return ((s * s).sum(-1) - n) / (n * (n - 1))   # sum_{i != j} cos_ij / #pairs


def token_sum_sq(X: torch.Tensor) -> torch.Tensor:
    """Noci et al.'s ``C(X) = sum_{k,k'} <X_k, X_k'> = ||sum_k X_k||^2``, `[..., n, d]` -> `[...]`.

    Args:
        X: `[..., n, d]`.

    Returns:
        `[...]`.

    Raises:
        ValueError: on a bad ``X``.
    """
    return check_tokens(X).sum(-2).square().sum(-1)


# ----------------------------------------------------------------------------- formulas
def path_count(depth: int, length: int, heads: int, skip: bool = True) -> int:
    """Dong et al.'s number of paths of ``length`` attention layers through a depth-``L`` SAN.

    Args:
        depth: ``L >= 1``.
        length: ``0 <= l <= L``, the layers a path does not skip.
        heads: ``H >= 1`` heads per layer.
        skip: with skip connections ``C(L, l) H^l``; without, ``H^L`` at ``l = L`` and 0 else.

    Returns:
        The count (exact integer).

    Raises:
        ValueError: on a non-integer or out-of-range argument.
    """
    L, H = check_int(depth, "depth"), check_int(heads, "heads")
    m = check_int(length, "length", low=0)
    if m > L:
        raise ValueError(f"length must be <= depth={L}, got {m}")
    if not skip:
        return H ** L if m == L else 0
    return math.comb(L, m) * H ** m


def gram_growth(depth: int, alpha1: float = 1.0, alpha2: float = 1.0,
                scaled: bool = False) -> float:
    """Noci et al.'s ``E[C(X^L)] / C(X) = (1 + a1^2)^L (1 + a2^2)^L`` (``a/sqrt(L)`` if scaled).

    Scaled, it rises to ``e^(a1^2 + a2^2)`` as ``L -> inf`` (the notes' limit, corrected).

    Args:
        depth: ``L >= 1``.
        alpha1: attention branch weight.
        alpha2: MLP branch weight (0 for no MLP).
        scaled: divide both branch weights by ``sqrt(L)``.

    Returns:
        The growth factor.

    Raises:
        ValueError: on a bad argument.
    """
    L = check_int(depth, "depth")
    a1 = check_scalar(alpha1, "alpha1") ** 2
    a2 = check_scalar(alpha2, "alpha2") ** 2
    if scaled:
        a1, a2 = a1 / L, a2 / L
    return math.exp(L * (math.log1p(a1) + math.log1p(a2)))


# ----------------------------------------------------------------------------- SAN stacks
@dataclass(frozen=True)
class Variant:
    """Which blocks a random SAN layer has (post-LN; skip scales ``alpha`` by ``1/sqrt(L)``)."""

    skip: bool = False
    mlp: bool = False
    ln: bool = False
    depth_scaled: bool = False


E7_VARIANTS = {                     # E7's six curves (the notes' sec. 4.1 variants)
    "pure": Variant(),
    "mlp": Variant(mlp=True),
    "ln": Variant(ln=True),
    "skip": Variant(skip=True),
    "skip_mlp": Variant(skip=True, mlp=True),
    "skip_scaled": Variant(skip=True, depth_scaled=True),
}


def layer_norm(X: torch.Tensor, eps: float = 0.0) -> torch.Tensor:
    """Each token centred and scaled to unit variance over features (no affine parameters).

    Args:
        X: `[..., n, d]`.
        eps: added to the variance; 0 (default) keeps ``LN(cX) = LN(X)`` exact (a token
            constant over its features then gives nan; random weights never make one).

    Returns:
        `[..., n, d]`.

    Raises:
        ValueError: on a bad ``X`` or a negative ``eps``.
    """
    X, eps = check_tokens(X), check_scalar(eps, "eps", low=0.0)
    Z = X - X.mean(-1, keepdim=True)
    return Z / torch.sqrt(Z.square().mean(-1, keepdim=True) + eps)


def attention_layer(X: torch.Tensor, W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor,
                    temperature: float = 1.0) -> torch.Tensor:
    """Multi-head ``SA(X) = sum_h softmax(tau X W_Q,h (X W_K,h)^T / sqrt(d_qk)) X W_V,h``.

    Args:
        X: `[S, n, d]`.
        W_Q: `[S, H, d, d_qk]`.
        W_K: `[S, H, d, d_qk]`.
        W_V: `[S, H, d, d]` (output projection folded in).
        temperature: ``tau >= 0`` (0 gives uniform attention).

    Returns:
        `[S, n, d]`.

    Raises:
        ValueError: on mismatched shapes or a bad temperature.
    """
    tau = check_scalar(temperature, "temperature", low=0.0)
    X = check_tokens(X, min_ndim=3)
    S, _, d = X.shape
    if W_Q.shape != W_K.shape or W_Q.ndim != 4 or W_Q.shape[:3] != (S, W_Q.shape[1], d) \
            or W_V.shape != (S, W_Q.shape[1], d, d):
        raise ValueError(f"weights must be W_Q, W_K [S, H, d, d_qk] and W_V [S, H, d, d] for X "
                         f"{tuple(X.shape)}, got {tuple(W_Q.shape)}, {tuple(W_K.shape)}, "
                         f"{tuple(W_V.shape)}")
    Xh = X[:, None]                                                  # (S, 1, n, d)
    logits = (Xh @ W_Q) @ (Xh @ W_K).mT * (tau / math.sqrt(W_Q.shape[-1]))  # (S, H, n, n)
    return (torch.softmax(logits, dim=-1) @ Xh @ W_V).sum(1)


def _gaussian(gen: torch.Generator, *shape, var: float, dtype) -> torch.Tensor:
    return torch.randn(*shape, generator=gen, dtype=dtype) * math.sqrt(var)


@dataclass(frozen=True)
class SANTrace:
    """Per-seed statistics of a random SAN, `[seeds, L + 1]` (column 0 is the input)."""

    variant: str
    res: np.ndarray       # relative residual ||res(X_l)|| / ||X_l||
    cosine: np.ndarray    # mean token cosine
    gram: np.ndarray      # C(X_l) = ||sum_k X_l,k||^2
    seconds: float

    @property
    def mean(self) -> np.ndarray:
        """Relative residual averaged over seeds, per layer."""
        return self.res.mean(0)

    @property
    def geomean(self) -> np.ndarray:
        """Geometric mean over seeds (the average of ``log res``: use it on log axes)."""
        return np.exp(np.log(self.res).mean(0))


def run_san(variant: str | Variant = "pure", *, n: int = 32, d: int = 64, heads: int = 4,
            depth: int = 24, seeds: int = 5, temperature: float = E7_TEMPERATURE,
            alpha: float = 1.0, norm: str = "fro", seed: int = 0,
            dtype: torch.dtype = torch.float64) -> SANTrace:
    """Random self-attention stack at init, ``seeds`` draws batched; statistics per layer.

    Args:
        variant: a key of `E7_VARIANTS` or a `Variant`.
        n: tokens.
        d: width (a multiple of ``heads``).
        heads: ``H``.
        depth: ``L``.
        seeds: independent draws of input and weights.
        temperature: logit scale ``tau >= 0``.
        alpha: skip-branch weight (``alpha/sqrt(L)`` if the variant is depth-scaled).
        norm: for the residual, ``"fro"`` or ``"l1inf"``.
        seed: for the generator; the same seed gives every variant the same input and weights.
        dtype: float64 keeps the floor of the relative residual near 1e-16.

    Returns:
        A `SANTrace`.

    Raises:
        ValueError: on a bad argument (checked before any compute).
    """
    name = variant if isinstance(variant, str) else "custom"
    if isinstance(variant, str):
        if variant not in E7_VARIANTS:
            raise ValueError(f"variant must be one of {tuple(E7_VARIANTS)}, got {variant!r}")
        variant = E7_VARIANTS[variant]
    elif not isinstance(variant, Variant):
        raise ValueError(  # noqa: TRY004 - a setting, like the others
            f"variant must be a name or a Variant, got {variant!r}")
    n, d, H = check_int(n, "n", 2), check_int(d, "d"), check_int(heads, "heads")
    L, S = check_int(depth, "depth"), check_int(seeds, "seeds")
    if d % H:
        raise ValueError(f"d={d} must be a multiple of heads={H}")
    tau = check_scalar(temperature, "temperature", low=0.0)
    a = check_scalar(alpha, "alpha", low=0.0) / (math.sqrt(L) if variant.depth_scaled else 1.0)
    norm, seed = _check_norm(norm), check_int(seed, "seed", 0)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")

    t0 = time.perf_counter()
    # two streams: attention (and the input) and MLP, so every variant sees the same input and
    # attention weights while the MLP weights are drawn only where used
    gen_a, gen_m = (torch.Generator().manual_seed(int(s))
                    for s in np.random.SeedSequence(seed).generate_state(2))
    dqk, dff = d // H, MLP_RATIO * d
    X = torch.randn(S, n, d, generator=gen_a, dtype=dtype)
    stats = [(relative_residual(X, norm), token_cosine(X), token_sum_sq(X))]
    for _ in range(L):
        W_Q, W_K = (_gaussian(gen_a, S, H, d, dqk, var=1 / d, dtype=dtype) for _ in range(2))
        W_V = _gaussian(gen_a, S, H, d, d, var=1 / (d * H), dtype=dtype)
        A = attention_layer(X, W_Q, W_K, W_V, tau)
        X = X + a * A if variant.skip else A
        if variant.mlp:
            W_1 = _gaussian(gen_m, S, d, dff, var=2 / d, dtype=dtype)     # He, for the relu
            W_2 = _gaussian(gen_m, S, dff, d, var=1 / dff, dtype=dtype)
            M = torch.relu(X @ W_1) @ W_2
            X = X + a * M if variant.skip else M
        if variant.ln:
            X = layer_norm(X)
        stats.append((relative_residual(X, norm), token_cosine(X), token_sum_sq(X)))
    res, cos, gram = (torch.stack(s, 1).numpy() for s in zip(*stats))
    return SANTrace(name, res, cos, gram, time.perf_counter() - t0)


def collapse_curves(variants=tuple(E7_VARIANTS), **kwargs) -> dict[str, SANTrace]:
    """`run_san` for each of ``variants`` (E7's six by default) with shared ``kwargs``.

    Args:
        variants: names in `E7_VARIANTS`.
        **kwargs: passed to `run_san`.

    Returns:
        ``{name: SANTrace}``.

    Raises:
        ValueError: on an unknown variant name (before any run) or a bad keyword value.
    """
    bad = [v for v in variants if v not in E7_VARIANTS]
    if bad or not variants:
        raise ValueError(f"variants must be non-empty names in {tuple(E7_VARIANTS)}, got {bad}")
    return {v: run_san(v, **kwargs) for v in variants}


@dataclass(frozen=True)
class DoublyExpFit:
    """``log(-log r_l) ~ slope l + intercept`` (theory: slope -> log 3) and the regression
    slope of ``log r_{l+1}`` on ``log r_l`` (theory: ``exponent`` -> 3)."""

    layers: np.ndarray
    slope: float
    intercept: float
    exponent: float


def doubly_exponential_fit(res, *, floor: float = 1e-12, ceiling: float = 0.5) -> DoublyExpFit:
    """Fit the doubly exponential signature on the layers with ``floor < res < ceiling``.

    The floor keeps out the float round-off plateau; the ceiling keeps ``-log res`` away from 0.

    Args:
        res: relative residual per layer (1-D; index = layer), e.g. ``SANTrace.geomean``.
        floor: lower bound of the usable range.
        ceiling: upper bound, ``floor < ceiling < 1``.

    Returns:
        A `DoublyExpFit` (``exponent`` is nan with fewer than 2 consecutive usable pairs).

    Raises:
        ValueError: on a bad ``res``, bounds, or fewer than 2 usable layers.
    """
    r = np.asarray(res, dtype=np.float64)
    if r.ndim != 1 or r.size == 0 or not np.all(np.isfinite(r)) or np.any(r < 0):
        raise ValueError("res must be a non-empty 1-D array of finite values >= 0")
    floor = check_scalar(floor, "floor", low=0.0, low_open=True)
    ceiling = check_scalar(ceiling, "ceiling", low=floor, low_open=True, high=1.0, high_open=True)
    ok = (r > floor) & (r < ceiling)
    layers = np.flatnonzero(ok)
    if layers.size < 2:
        raise ValueError(f"need >= 2 layers with {floor} < res < {ceiling}, got {layers.size}")
    slope, intercept = np.polyfit(layers, np.log(-np.log(r[layers])), 1)
    pairs = np.flatnonzero(ok[:-1] & ok[1:])
    exponent = (np.polyfit(np.log(r[pairs]), np.log(r[pairs + 1]), 1)[0]
                if pairs.size >= 2 else float("nan"))
    return DoublyExpFit(layers, float(slope), float(intercept), float(exponent))
