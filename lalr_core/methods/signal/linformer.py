"""Softmax attention against the Linformer projection (Wang et al. 2020, "Linformer: self-attention
with linear complexity", arXiv 2006.04768): the approximation error over the projected length
k and the temperature, the singular-value energy of the attention matrix, and the timing.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from lalr_core.core.validation import check_int
from lalr_core.methods.signal.rank_collapse import check_tokens
from lalr_core.methods.trajectory import check_scalar

E8_N, E8_D = 512, 64                     # E8's tokens n and width d: our choices (the notes give no sizes)


E8_KS = (16, 32, 64, 128, 256)           # E8's projected lengths k: our grid


E8_TEMPERATURES = (0.25, 1.0, 2.0, 4.0)


PROJECTIONS = ("pool", "gaussian", "identity")


# ----------------------------------------------------------------------------- Linformer
def _check_qkv(Q, K, V) -> int:
    for name, T in (("Q", Q), ("K", K), ("V", V)):
        check_tokens(T, name)
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(f"need Q [.., m, d_k], K [.., n, d_k], V [.., n, d_v], got "
                         f"{tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
    return K.shape[-2]


def attention_matrix(Q: torch.Tensor, K: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """``P = softmax(tau Q K^T / sqrt(d_k))``, row-stochastic, `[..., m, n]`.

    Args:
        Q: `[..., m, d_k]`.
        K: `[..., n, d_k]`.
        temperature: ``tau >= 0``.

    Returns:
        `[..., m, n]`.

    Raises:
        ValueError: on bad shapes or temperature.
    """
    tau = check_scalar(temperature, "temperature", low=0.0)
    _check_qkv(Q, K, K)
    return torch.softmax(Q @ K.mT * (tau / math.sqrt(Q.shape[-1])), dim=-1)


def softmax_attention(Q, K, V, temperature: float = 1.0) -> torch.Tensor:
    """Exact attention ``P V``.

    Args:
        Q: `[..., m, d_k]`.
        K: `[..., n, d_k]`.
        V: `[..., n, d_v]`.
        temperature: ``tau >= 0``.

    Returns:
        `[..., m, d_v]`.

    Raises:
        ValueError: on bad shapes or temperature.
    """
    _check_qkv(Q, K, V)
    return attention_matrix(Q, K, temperature) @ V


def linformer_attention(Q, K, V, E, F, temperature: float = 1.0) -> torch.Tensor:
    """Wang et al.'s ``softmax(tau Q (E K)^T / sqrt(d_k)) (F V)``: cost ``O(n k)``.

    Args:
        Q: `[..., m, d_k]`.
        K: `[..., n, d_k]`.
        V: `[..., n, d_v]`.
        E: key projection `[k, n]` (or batched `[..., k, n]`).
        F: value projection, same shape as ``E``.
        temperature: ``tau >= 0``.

    Returns:
        `[..., m, d_v]`.

    Raises:
        ValueError: on bad shapes or temperature.
    """
    n = _check_qkv(Q, K, V)
    for name, T in (("E", E), ("F", F)):
        check_tokens(T, name)
    if E.shape != F.shape or E.shape[-1] != n:
        raise ValueError(f"E and F must both be [k, n={n}], got {tuple(E.shape)}, "
                         f"{tuple(F.shape)}")
    tau = check_scalar(temperature, "temperature", low=0.0)
    logits = Q @ (E @ K).mT * (tau / math.sqrt(Q.shape[-1]))       # (.., m, k)
    return torch.softmax(logits, dim=-1) @ (F @ V)


def projection(n: int, k: int, kind: str = "pool", *, generator: torch.Generator | None = None,
               dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """A ``k x n`` Linformer projection.

    Args:
        n: sequence length.
        k: projected length; ``pool`` needs ``n % k == 0``, ``identity`` needs ``k == n``.
        kind: ``"pool"`` (block means, kernel = stride = ``n/k``), ``"gaussian"``
            (``N(0, 1/k)``, Wang et al. Thm 2) or ``"identity"``.
        generator: for ``gaussian``.
        dtype: of the result.

    Returns:
        `[k, n]`.

    Raises:
        ValueError: on a bad ``kind`` or an incompatible ``n, k``.
    """
    n, k = check_int(n, "n"), check_int(k, "k")
    if kind not in PROJECTIONS:
        raise ValueError(f"kind must be one of {PROJECTIONS}, got {kind!r}")
    if k > n or (kind == "pool" and n % k) or (kind == "identity" and k != n):
        raise ValueError(f"k={k} does not fit n={n} for kind={kind!r}")
    if kind == "gaussian":
        return torch.randn(k, n, generator=generator, dtype=dtype) / math.sqrt(k)
    b = n // k
    return torch.kron(torch.eye(k, dtype=dtype), torch.full((1, b), 1.0 / b, dtype=dtype))


def _rel(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    return torch.linalg.matrix_norm(A - B) / torch.linalg.matrix_norm(B)


@dataclass(frozen=True)
class LinformerErrors:
    """Relative Frobenius errors vs exact attention, `[temperatures, ks]` (mean over seeds)."""

    ks: tuple
    temperatures: tuple
    linformer: np.ndarray   # Linformer with the given projection kind
    best_rank_k: np.ndarray  # P replaced by its truncated SVD P_k: ||P_k V - P V|| / ||P V||
    energy: np.ndarray      # cumulative singular energy of P, `[temperatures, n]`
    seconds: float


def singular_energy(P: torch.Tensor) -> torch.Tensor:
    """Cumulative singular energy ``sum_{i<=j} s_i^2 / sum_i s_i^2`` of `[..., m, n]` matrices.

    Args:
        P: `[..., m, n]`, not all zero.

    Returns:
        `[..., min(m, n)]`, rising to 1.

    Raises:
        ValueError: on a bad ``P``.
    """
    s2 = torch.linalg.svdvals(check_tokens(P, "P")).square()
    return s2.cumsum(-1) / s2.sum(-1, keepdim=True)


def linformer_errors(*, n: int = E8_N, d: int = E8_D, ks=E8_KS, temperatures=E8_TEMPERATURES,
                     kind: str = "pool", seeds: int = 4, seed: int = 0) -> LinformerErrors:
    """E8: Linformer's error vs ``k`` at several temperatures, on random ``N(0, 1)`` Q, K, V.

    Args:
        n: sequence length.
        d: head width (``d_k = d_v = d``).
        ks: projected lengths (each ``<= n``; divisors of ``n`` for ``pool``).
        temperatures: logit scales ``tau >= 0``.
        kind: projection kind (see `projection`), the same ``E = F`` for keys and values.
        seeds: independent draws, batched.
        seed: for the generator.

    Returns:
        A `LinformerErrors`.

    Raises:
        ValueError: on a bad argument (checked before any compute).
    """
    n, d, S = check_int(n, "n"), check_int(d, "d"), check_int(seeds, "seeds")
    ks = tuple(check_int(k, "k") for k in ks)
    taus = tuple(check_scalar(t, "temperature", low=0.0) for t in temperatures)
    if not ks or not taus:
        raise ValueError("ks and temperatures must be non-empty")
    gen = torch.Generator().manual_seed(check_int(seed, "seed", 0))
    projs = [projection(n, k, kind, generator=gen) for k in ks]   # validates k before compute
    t0 = time.perf_counter()
    Q, K, V = (torch.randn(S, n, d, generator=gen, dtype=torch.float64) for _ in range(3))
    lin, best, energy = np.zeros((len(taus), len(ks))), np.zeros((len(taus), len(ks))), []
    for i, tau in enumerate(taus):
        P = attention_matrix(Q, K, tau)
        exact = P @ V
        U, s, Vh = torch.linalg.svd(P)
        energy.append((s.square().cumsum(-1) / s.square().sum(-1, keepdim=True)).mean(0))
        for j, (k, E) in enumerate(zip(ks, projs)):
            lin[i, j] = _rel(linformer_attention(Q, K, V, E, E, tau), exact).mean()
            Pk = (U[..., :k] * s[..., None, :k]) @ Vh[..., :k, :]
            best[i, j] = _rel(Pk @ V, exact).mean()
    return LinformerErrors(ks, taus, lin, best, torch.stack(energy).numpy(),
                           time.perf_counter() - t0)


def attention_timing(ns=(256, 512, 1024, 2048), *, k: int = 64, d: int = E8_D,
                     repeats: int = 5, dtype: torch.dtype = torch.float32) -> np.ndarray:
    """Median wall time (s) of exact vs Linformer (pooled) attention, `[len(ns), 2]`.

    Args:
        ns: sequence lengths (multiples of ``k``).
        k: projected length.
        d: head width.
        repeats: timed calls per point (after one warm-up).
        dtype: of the inputs.

    Returns:
        Columns ``(exact, linformer)``.

    Raises:
        ValueError: on a bad argument.
    """
    ns = tuple(check_int(m, "n") for m in ns)
    k, d, R = check_int(k, "k"), check_int(d, "d"), check_int(repeats, "repeats")
    Es = [projection(m, k, "pool", dtype=dtype) for m in ns]
    out = np.zeros((len(ns), 2))
    for i, (m, E) in enumerate(zip(ns, Es)):
        Q, K, V = (torch.randn(m, d, dtype=dtype) for _ in range(3))
        for j, (f, args) in enumerate(((softmax_attention, (Q, K, V)),
                                       (linformer_attention, (Q, K, V, E, E)))):
            f(*args)                                                   # warm-up
            ts = []
            for _ in range(R):
                t0 = time.perf_counter()
                f(*args)
                ts.append(time.perf_counter() - t0)
            out[i, j] = float(np.median(ts))
    return out
