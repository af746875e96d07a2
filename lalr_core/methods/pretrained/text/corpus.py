"""D-SYN-TXT: the seeded synthetic language of chapters 01 (LALR) and 03 (NTK linearisation).

D-SYN-TXT, our design, replaces the sources' GLUE / IMDb / Yelp data and pretrained language
models by one small synthetic language. Vocabulary of 64 tokens::

    0 [PAD]   1 [CLS]   2 [MASK]
    3-12  positive lexicon        13-22 negative lexicon
    23-27 openers                 28-32 closers (28 + i closes 23 + i)
    33-63 neutral (31 tokens)

A sequence is ``[CLS]`` followed by ``length - 1`` content tokens: neutral tokens drawn from a
seeded sparse first-order Markov chain, with lexicon and bracket tokens inserted. Tasks built
on it (labels are always recomputed from the final tokens by `sentiment_score` and
`is_well_nested`, never carried over from the generator):

* **SENT** (SST-2 analogue): length 16, label ``1[#pos - #neg > 0]``, ties resampled;
* **ACC** (CoLA analogue): length 16, label ``1`` iff the bracket tokens are properly nested
  and matched; about 70 % positive; negatives made by deleting one closer or changing its kind;
* **LONG** (IMDb analogue): SENT at length 48;
* **STARS** (Yelp analogue): five levels from the quintiles of ``#pos - #neg``, levels {1, 2}
  -> 0, {4, 5} -> 1, level 3 dropped (length 48, see below);
* the **pretraining corpus**: Markov sequences, half of length 16 and half of length 48, padded
  with ``[PAD]`` to 48, for masked-token prediction;
* the **OOD test sets** of X-L15: neutral-token noise (`with_neutral_noise`), the lexicon
  shift (``lexicon="shift"``) and deeper nesting (ACC's ``test_deep``).

Finer choices (also ours, stated once here):

* the language (the chain) is one fixed draw, ``LANGUAGE_SEED``, shared by every task and the
  corpus, so pretraining and fine-tuning speak the same language; ``data_seed`` only changes
  which sequences are drawn;
* the chain: each neutral token has ``MARKOV_OUT_DEGREE = 4`` successors (its cyclic
  neighbour, which makes the chain irreducible, and 3 others drawn without replacement), with
  Dirichlet(1) transition weights; the first neutral token is uniform;
* injection: inserted tokens take a position, and the neutral chain continues in the
  remaining positions (so neutral bigrams stay the chain's across an insertion). A sequence
  carries one bracket group with probability ``BRACKET_RATE = 0.5`` (always in ACC): 1-3 pairs
  of random kinds, a random Dyck word of nesting depth at most ``MAX_TRAIN_DEPTH = 2``, at
  random positions; each remaining content position holds a lexicon token with probability
  ``LEXICON_RATE = 0.2``;
* polarity: each sequence has a latent polarity (+ or -, equally likely) and each lexicon token
  has that polarity with probability ``POLARITY_COHERENCE = 0.75``, so that masked-token
  prediction can learn which tokens belong together (what makes X-L15's lexicon shift
  transferable through pretraining). SENT's label is still the count rule above;
* splits: 1000 train / 500 val and 1000 test (the test set large enough for paired
  bootstrap intervals), each drawn from its own seed stream, in blocks of 256 candidates, so
  the first ``n`` examples of a split do not depend on how many were asked for
  (``n_train=200`` is a prefix of ``n_train=1000``), and val / test do not depend on
  ``n_train``;
* ACC negatives: with probability ``ACC_NEGATIVE_RATE = 0.3`` one closer, chosen uniformly, is
  deleted (the chain fills its place) or given another kind (each with probability 1/2);
  both always break the nesting. Balance: positives 0.70 +- 0.05 at 1000 examples;
* ``test_deep`` (X-L15 iii): 3-4 pairs with nesting depth 3-4, deeper than every training
  group (depth <= 2; depth of the group before any corruption), same negative rate;
* ``test_noise`` (X-L15 i): ``round(0.10 * (length - 1))`` content positions (2 at length 16,
  5 at length 48) replaced by uniform random neutral tokens, chosen among the neutral
  positions so that the label is unchanged (replacing a lexicon token would change it);
* lexicon shift (X-L15 ii): train and val use only positive 3-7 and negative 13-17, test only
  8-12 and 18-22 (which the model saw only during pretraining);
* STARS: length 48 (ours; Yelp reviews are long). The quintiles are those of
  ``d = #pos - #neg`` over a pool of 20 000 corpus-like sequences (``data_seed`` 0), taken at
  each example's mid-rank (`stars_level`), since ``d`` is discrete with ties at the edges. At
  length 16 the middle level is exactly ``d = 0`` and STARS would be SENT; at 48 the levels
  are d <= -6, -5..-3, -2..2, 3..5, >= 6, so STARS is "clear polarity" (|d| >= 3, ~51 %
  positive), a task distinct from LONG.

Everything is numpy with explicit generators; no network. Arrays are int64 ``[N, length]``.
Serves chapters 01 and 03.

One module (over 400 lines) on purpose: the grammar, the splits and the shifted test sets are
one generator under one seed scheme.
"""

from __future__ import annotations

import functools
import zlib

import numpy as np

# ----------------------------------------------------------------------------- vocabulary
VOCAB_SIZE = 64
PAD, CLS, MASK = 0, 1, 2
POSITIVE = tuple(range(3, 13))
NEGATIVE = tuple(range(13, 23))
OPENERS = tuple(range(23, 28))
CLOSERS = tuple(range(28, 33))  # CLOSERS[i] closes OPENERS[i]
NEUTRAL = tuple(range(33, 64))
N_KINDS = len(OPENERS)
SHORT, LONG_LENGTH = 16, 48  # sequence lengths, [CLS] included

# lexicon halves of the X-L15 lexicon shift: train / val on A, test on B
LEXICON_A = (tuple(range(3, 8)), tuple(range(13, 18)))
LEXICON_B = (tuple(range(8, 13)), tuple(range(18, 23)))
LEXICONS = ("all", "shift")

# ----------------------------------------------------------------------------- the language
LANGUAGE_SEED = 0          # the Markov chain: one fixed draw shared by every task
MARKOV_OUT_DEGREE = 4      # successors per neutral token
LEXICON_RATE = 0.2         # per content position left free by the brackets
POLARITY_COHERENCE = 0.75  # P(a lexicon token has the sequence's latent polarity)
BRACKET_RATE = 0.5         # P(a sequence carries a bracket group), corpus and SENT-like tasks
MAX_PAIRS = 3              # bracket pairs per group: 1..MAX_PAIRS
MAX_TRAIN_DEPTH = 2        # nesting depth of every training / corpus bracket group
DEEP_PAIRS, DEEP_DEPTH = (3, 4), (3, 4)  # test_deep: pairs and depth ranges
ACC_NEGATIVE_RATE = 0.3    # ACC: P(one closer corrupted)
NOISE_RATE = 0.10          # test_noise: fraction of content positions replaced
BLOCK = 256                # candidates drawn per block (prefix-stable splits)
STARS_POOL = 20_000        # sequences behind the STARS quintiles
STARS_LENGTH = LONG_LENGTH  # see the module docstring: at 16, STARS would be SENT

DATASETS = ("sent", "acc", "long", "stars")
SPLIT_SIZES = {"train": 1000, "val": 500, "test": 1000}  # defaults of the tasks


# ----------------------------------------------------------------------------- helpers
def stream(data_seed: int, name: str) -> np.random.Generator:
    """The numpy generator of one named stream (e.g. ``"sent/train"``) of ``data_seed``."""
    if isinstance(data_seed, bool) or not isinstance(data_seed, int) or data_seed < 0:
        raise ValueError(f"data_seed must be an int >= 0, got {data_seed!r}")
    return np.random.default_rng([data_seed, zlib.crc32(name.encode())])


@functools.lru_cache(maxsize=1)
def markov_chain() -> tuple[np.ndarray, np.ndarray]:
    """The language's chain over the neutral tokens.

    Returns:
        ``(successors, cumulative)``: `[31, 4]` indices into ``NEUTRAL`` and the cumulative
        transition probabilities `[31, 4]` (last column 1).
    """
    rng = np.random.default_rng(LANGUAGE_SEED)
    n = len(NEUTRAL)
    succ = np.empty((n, MARKOV_OUT_DEGREE), dtype=np.int64)
    for i in range(n):
        others = np.setdiff1d(np.arange(n), [i, (i + 1) % n])
        succ[i, 0] = (i + 1) % n  # the cycle through all tokens makes the chain irreducible
        succ[i, 1:] = rng.choice(others, MARKOV_OUT_DEGREE - 1, replace=False)
    cum = np.cumsum(rng.dirichlet(np.ones(MARKOV_OUT_DEGREE), size=n), axis=1)
    cum[:, -1] = 1.0
    return succ, cum


def neutral_chain(n: int, steps: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` runs of the chain, ``steps`` neutral tokens each, `[n, steps]` token ids."""
    succ, cum = markov_chain()
    state = np.empty((n, steps), dtype=np.int64)
    if steps == 0:
        return state
    state[:, 0] = rng.integers(0, len(NEUTRAL), n)
    for t in range(1, steps):
        prev = state[:, t - 1]
        pick = (rng.random(n)[:, None] > cum[prev]).sum(1)  # inverse-CDF draw per row
        state[:, t] = succ[prev, np.minimum(pick, MARKOV_OUT_DEGREE - 1)]
    return np.asarray(NEUTRAL)[state]


def dyck_group(rng: np.random.Generator, n_pairs: int, max_depth: int,
               min_depth: int = 1) -> list[int]:
    """A random properly nested bracket group of ``n_pairs`` pairs, depth in the range.

    Each opener's kind is uniform; its closer matches it. The shape is a random walk that
    opens with probability 1/2 where both moves are allowed; groups whose depth is below
    ``min_depth`` are redrawn.
    """
    if not 1 <= min_depth <= max_depth or n_pairs < min_depth:
        raise ValueError(f"no group of {n_pairs} pairs has depth in [{min_depth}, {max_depth}]")
    while True:
        tokens, stack, opened, deepest = [], [], 0, 0
        while opened < n_pairs or stack:
            can_open = opened < n_pairs and len(stack) < max_depth
            if can_open and (not stack or rng.random() < 0.5):
                kind = int(rng.integers(N_KINDS))
                stack.append(kind)
                tokens.append(OPENERS[kind])
                opened += 1
                deepest = max(deepest, len(stack))
            else:
                tokens.append(CLOSERS[stack.pop()])
        if deepest >= min_depth:
            return tokens


def corrupt_group(rng: np.random.Generator, group: list[int]) -> list[int]:
    """``group`` with one closer (uniform) deleted or changed to another kind (p = 1/2 each)."""
    closers = [i for i, t in enumerate(group) if t in CLOSERS]
    i = closers[int(rng.integers(len(closers)))]
    if rng.random() < 0.5:
        return group[:i] + group[i + 1:]
    kind = CLOSERS.index(group[i])
    other = (kind + 1 + int(rng.integers(N_KINDS - 1))) % N_KINDS  # any kind but its own
    return group[:i] + [CLOSERS[other]] + group[i + 1:]


def compose(rng: np.random.Generator, groups: list[list[int]], length: int,
            lexicon: tuple[tuple[int, ...], tuple[int, ...]] = (POSITIVE, NEGATIVE)
            ) -> np.ndarray:
    """Sequences ``[CLS] + content``: bracket groups, lexicon tokens and the neutral chain.

    Args:
        rng: the generator.
        groups: one bracket group per sequence (a token list, possibly empty).
        length: sequence length with [CLS].
        lexicon: the positive and the negative tokens to insert.

    Returns:
        `[len(groups), length]` int64 token ids.
    """
    n, content = len(groups), length - 1
    if any(len(g) > content for g in groups):
        raise ValueError(f"a bracket group does not fit in {content} content positions")
    out = np.zeros((n, content), dtype=np.int64)
    taken = np.zeros((n, content), dtype=bool)
    for row, group in enumerate(groups):  # brackets at sorted random positions, in order
        if group:
            pos = np.sort(rng.choice(content, len(group), replace=False))
            out[row, pos], taken[row, pos] = group, True
    lex = ~taken & (rng.random((n, content)) < LEXICON_RATE)
    polarity = rng.random(n) < 0.5  # latent polarity: True = positive
    same = rng.random((n, content)) < POLARITY_COHERENCE
    positive = np.where(same, polarity[:, None], ~polarity[:, None])
    pos_tok = np.asarray(lexicon[0])[rng.integers(0, len(lexicon[0]), (n, content))]
    neg_tok = np.asarray(lexicon[1])[rng.integers(0, len(lexicon[1]), (n, content))]
    out[lex] = np.where(positive, pos_tok, neg_tok)[lex]
    free = ~taken & ~lex  # the chain runs through the free positions, in order
    chain = neutral_chain(n, content, rng)
    slot = np.cumsum(free, axis=1) - 1
    out[free] = np.take_along_axis(chain, np.maximum(slot, 0), axis=1)[free]
    return np.concatenate([np.full((n, 1), CLS, dtype=np.int64), out], axis=1)


# ----------------------------------------------------------------------------- labels
def sentiment_score(tokens: np.ndarray) -> np.ndarray:
    """``#positive - #negative`` lexicon tokens per row of `[N, L]` tokens."""
    tokens = np.asarray(tokens)
    return (np.isin(tokens, POSITIVE).sum(-1) - np.isin(tokens, NEGATIVE).sum(-1)).astype(int)


def is_well_nested(tokens: np.ndarray) -> np.ndarray:
    """Per row of `[N, L]` tokens: are its bracket tokens properly nested and matched?

    A row without brackets is well nested; other tokens are ignored.
    """
    tokens = np.atleast_2d(np.asarray(tokens))
    out = np.ones(len(tokens), dtype=bool)
    for row, seq in enumerate(tokens):
        stack: list[int] = []
        for t in seq:
            if t in OPENERS:
                stack.append(OPENERS.index(t))
            elif t in CLOSERS and (not stack or stack.pop() != CLOSERS.index(t)):
                out[row] = False
                break
        out[row] &= not stack
    return out


def max_depth(tokens: np.ndarray) -> np.ndarray:
    """Deepest opener nesting per row (openers minus closers so far, maximised)."""
    tokens = np.atleast_2d(np.asarray(tokens))
    step = np.isin(tokens, OPENERS).astype(int) - np.isin(tokens, CLOSERS).astype(int)
    return np.maximum(np.cumsum(step, axis=1).max(axis=1), 0)


# ----------------------------------------------------------------------------- generators
def _groups(rng: np.random.Generator, n: int, rate: float, pairs: tuple[int, int],
            depth: tuple[int, int], negative_rate: float = 0.0) -> list[list[int]]:
    """``n`` bracket groups: present with probability ``rate``, corrupted w.p. negative_rate."""
    groups = []
    for _ in range(n):
        if rng.random() >= rate:
            groups.append([])
            continue
        k = int(rng.integers(pairs[0], pairs[1] + 1))
        group = dyck_group(rng, k, min(depth[1], k), min(depth[0], k))
        groups.append(corrupt_group(rng, group) if rng.random() < negative_rate else group)
    return groups


def _blocks(n: int, draw) -> tuple[np.ndarray, np.ndarray]:
    """First ``n`` accepted examples of ``draw()`` blocks ``(tokens, labels, keep)``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"the number of examples must be an int >= 0, got {n!r}")
    tokens, labels, have = [], [], 0
    while have < n:
        X, y, keep = draw()
        tokens.append(X[keep])
        labels.append(y[keep])
        have += int(keep.sum())
    if not tokens:
        return np.zeros((0, 0), dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(tokens)[:n], np.concatenate(labels)[:n].astype(np.int64)


def corpus_like(rng: np.random.Generator, n: int, length: int,
                lexicon=(POSITIVE, NEGATIVE)) -> np.ndarray:
    """``n`` sentences of the language (brackets well nested, depth <= 2), `[n, length]`."""
    return compose(rng, _groups(rng, n, BRACKET_RATE, (1, MAX_PAIRS), (1, MAX_TRAIN_DEPTH)),
                   length, lexicon)


def sentiment_set(n: int, length: int, rng: np.random.Generator,
                  lexicon=(POSITIVE, NEGATIVE)) -> tuple[np.ndarray, np.ndarray]:
    """SENT (length 16) or LONG (48): label ``1[#pos - #neg > 0]``, ties resampled."""
    def draw():
        X = corpus_like(rng, BLOCK, length, lexicon)
        d = sentiment_score(X)
        return X, (d > 0).astype(np.int64), d != 0
    return _blocks(n, draw)


def acceptability_set(n: int, rng: np.random.Generator, *, deep: bool = False,
                      length: int = SHORT) -> tuple[np.ndarray, np.ndarray]:
    """ACC: label ``1`` iff the brackets are well nested (~70 % positive).

    ``deep``: X-L15's test of 3-4 pairs nested 3-4 deep (training groups are <= 2 deep).
    """
    pairs, depth = (DEEP_PAIRS, DEEP_DEPTH) if deep else ((1, MAX_PAIRS), (1, MAX_TRAIN_DEPTH))

    def draw():
        X = compose(rng, _groups(rng, BLOCK, 1.0, pairs, depth, ACC_NEGATIVE_RATE), length)
        return X, is_well_nested(X).astype(np.int64), np.ones(BLOCK, dtype=bool)
    return _blocks(n, draw)


@functools.lru_cache(maxsize=1)
def stars_pool_scores() -> np.ndarray:
    """Sorted ``#pos - #neg`` of the STARS pool (the score distribution of the language)."""
    pool = corpus_like(stream(0, "stars/quantiles"), STARS_POOL, STARS_LENGTH)
    return np.sort(sentiment_score(pool))


def stars_level(tokens: np.ndarray) -> np.ndarray:
    """STARS level 1..5 per row: the quintile of the mid-rank of its ``d = #pos - #neg``.

    ``level = 1 + floor(5 * (P(D < d) + P(D <= d)) / 2)`` (capped at 5) under the pool's
    distribution of ``D``. ``d`` is discrete, with a large mass at 0, so plain quantile edges
    would cut through ties on one side only; the mid-rank treats ``d`` and ``-d`` alike.
    """
    d = sentiment_score(tokens)
    pool = stars_pool_scores()
    below = np.searchsorted(pool, d, side="left")
    upto = np.searchsorted(pool, d, side="right")
    mid = (below + upto) / (2 * len(pool))
    return np.minimum(1 + np.floor(5 * mid).astype(int), 5)


def stars_set(n: int, rng: np.random.Generator,
              lexicon=(POSITIVE, NEGATIVE)) -> tuple[np.ndarray, np.ndarray]:
    """STARS: levels {1, 2} -> 0, {4, 5} -> 1, level 3 dropped (length 48)."""
    def draw():
        X = corpus_like(rng, BLOCK, STARS_LENGTH, lexicon)
        level = stars_level(X)
        return X, (level >= 4).astype(np.int64), level != 3
    return _blocks(n, draw)


def with_neutral_noise(tokens: np.ndarray, rng: np.random.Generator,
                       rate: float = NOISE_RATE) -> np.ndarray:
    """X-L15 (i): ``round(rate * content)`` neutral positions per row -> random neutral tokens.

    Only neutral positions change, so sentiment labels (and nesting) are unchanged; a row
    with fewer neutral positions has all of them replaced.
    """
    tokens = np.array(tokens, copy=True)
    k = round(rate * (tokens.shape[1] - 1))
    neutral = np.isin(tokens, NEUTRAL)
    score = np.where(neutral, rng.random(tokens.shape), 2.0)  # non-neutral ranks last
    ranks = score.argsort(1).argsort(1)
    hit = neutral & (ranks < k)
    tokens[hit] = rng.choice(NEUTRAL, int(hit.sum()))
    return tokens


# ----------------------------------------------------------------------------- task splits
def classification_splits(dataset: str, n_train: int = SPLIT_SIZES["train"],
                          n_val: int = SPLIT_SIZES["val"], n_test: int = SPLIT_SIZES["test"],
                          data_seed: int = 0, lexicon: str = "all"
                          ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Train / val / test (and OOD) splits of one task: ``{split: (tokens, labels)}``.

    Args:
        dataset: ``"sent"``, ``"acc"``, ``"long"`` or ``"stars"``.
        n_train, n_val, n_test: examples per split.
        data_seed: which sequences are drawn (the language is fixed).
        lexicon: ``"all"``, or ``"shift"`` (X-L15 ii; not for ACC): train / val on tokens
            3-7 / 13-17, test on 8-12 / 18-22.

    Returns:
        ``train``, ``val``, ``test`` and the task's OOD split: ``test_noise`` (SENT, LONG,
        STARS: the test set with neutral-token noise) or ``test_deep`` (ACC: deeper nesting).
    """
    if dataset not in DATASETS:
        raise ValueError(f"unknown text dataset {dataset!r}; choose one of {DATASETS}")
    if lexicon not in LEXICONS or (lexicon == "shift" and dataset == "acc"):
        raise ValueError(f"lexicon must be one of {LEXICONS} ('shift' not for acc), "
                         f"got {lexicon!r} for {dataset!r}")
    sizes = {"train": n_train, "val": n_val, "test": n_test}
    out = {}
    for split, n in sizes.items():
        rng = stream(data_seed, f"{dataset}/{split}")
        lex = (POSITIVE, NEGATIVE) if lexicon == "all" else \
            (LEXICON_B if split == "test" else LEXICON_A)
        if dataset == "acc":
            out[split] = acceptability_set(n, rng)
        elif dataset == "stars":
            out[split] = stars_set(n, rng, lex)
        else:
            out[split] = sentiment_set(n, SHORT if dataset == "sent" else LONG_LENGTH, rng, lex)
    if dataset == "acc":
        out["test_deep"] = acceptability_set(n_test, stream(data_seed, "acc/test_deep"),
                                             deep=True)
    else:
        X, y = out["test"]
        out["test_noise"] = (with_neutral_noise(X, stream(data_seed, f"{dataset}/noise")), y)
    return out


def pretraining_corpus(n: int, data_seed: int = 0, split: str = "train"
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The MLM corpus: ``n // 2`` sequences of length 16 and the rest of length 48.

    Args:
        n: sequences.
        data_seed: which sequences are drawn.
        split: ``"train"``, ``"val"`` or ``"test"`` (independent streams; val is the held-out
            set of the forgetting measure, X-L3).

    Returns:
        ``(tokens, lengths)``: `[n, 48]` int64, padded with ``[PAD]``, and `[n]` lengths.
    """
    if split not in ("train", "val", "test"):
        raise ValueError(f"split must be 'train', 'val' or 'test', got {split!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    n_short = n // 2
    short = corpus_like(stream(data_seed, f"corpus/{split}/short"), n_short, SHORT)
    long_ = corpus_like(stream(data_seed, f"corpus/{split}/long"), n - n_short, LONG_LENGTH)
    tokens = np.full((n, LONG_LENGTH), PAD, dtype=np.int64)
    tokens[:n_short, :SHORT] = short
    tokens[n_short:] = long_
    lengths = np.array([SHORT] * n_short + [LONG_LENGTH] * (n - n_short), dtype=np.int64)
    return tokens, lengths
