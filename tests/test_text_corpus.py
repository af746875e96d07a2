"""D-SYN-TXT (`lalr_core.methods.pretrained.text.corpus`): labels recomputed by independent rules on
hand-written and generated sequences, the sparse chain, seeded determinism, class balance and
the OOD sets of X-L15."""

import itertools
import re

import numpy as np
import pytest

from lalr_core.methods.pretrained.text import corpus as c

PAD, CLS = 0, 1


def count_rule(seq) -> int:
    """Independent SENT rule: positives are ids 3..12, negatives 13..22."""
    return sum(3 <= t <= 12 for t in seq) - sum(13 <= t <= 22 for t in seq)


def nested_by_reduction(seq) -> bool:
    """Independent ACC rule: brackets as characters, matched pairs deleted until none is
    left (a string rewriting, unlike the stack of `is_well_nested`)."""
    chars = "".join("abcde"[t - 23] if 23 <= t <= 27 else "ABCDE"[t - 28]
                    for t in seq if 23 <= t <= 32)
    pair = re.compile("aA|bB|cC|dD|eE")
    while pair.search(chars):
        chars = pair.sub("", chars)
    return chars == ""


def test_vocabulary_classes_partition_the_64_ids():
    groups = [(c.PAD,), (c.CLS,), (c.MASK,), c.POSITIVE, c.NEGATIVE, c.OPENERS, c.CLOSERS,
              c.NEUTRAL]
    ids = sorted(t for g in groups for t in g)
    assert ids == list(range(64)) and c.VOCAB_SIZE == 64
    assert [len(g) for g in groups[3:]] == [10, 10, 5, 5, 31]
    assert (c.PAD, c.CLS, c.MASK) == (0, 1, 2)


def test_hand_written_sequences_get_the_rules_labels():
    two_pos_one_neg = [CLS, 3, 40, 15, 41, 12, 50]
    assert c.sentiment_score([two_pos_one_neg])[0] == 1  # label 1[1 > 0] = 1
    assert c.sentiment_score([[CLS, 3, 13, 40]])[0] == 0  # a tie
    assert c.sentiment_score([[CLS, 14, 22, 5]])[0] == -1
    nested = [CLS, 23, 24, 40, 29, 28, 25, 30]  # ( [ ] ) { }
    swapped = [CLS, 23, 24, 40, 28, 29, 25, 30]  # ( [ ) ] { }: closers swapped
    changed = [CLS, 23, 24, 40, 29, 32, 25, 30]  # ( [ ] > { }: a closer of another kind
    deleted = [CLS, 23, 24, 40, 29, 25, 30]       # ( [ ] { }: one closer deleted
    plain = [CLS, 40, 3, 50]
    got = [bool(c.is_well_nested([s])[0]) for s in (nested, swapped, changed, deleted, plain)]
    assert got == [True, False, False, False, True]
    assert got == [nested_by_reduction(s) for s in (nested, swapped, changed, deleted, plain)]
    assert c.max_depth([nested])[0] == 2


@pytest.mark.parametrize("dataset", c.DATASETS)
def test_generated_labels_follow_the_independent_rules(dataset):
    splits = c.classification_splits(dataset, n_train=300, n_val=50, n_test=200)
    length = 16 if dataset in ("sent", "acc") else 48
    for name, (X, y) in splits.items():
        assert X.shape[1] == length and (X[:, 0] == CLS).all(), name
        assert not np.isin(X[:, 1:], [PAD, CLS, 2]).any(), name
        if dataset == "acc":
            assert list(y) == [int(nested_by_reduction(s)) for s in X], name
        else:
            d = np.array([count_rule(s) for s in X])
            if dataset == "stars":  # levels {1,2} -> 0 below {4,5} -> 1, level 3 dropped
                assert d[y == 0].max() < d[y == 1].min(), name
                assert (np.isin(c.stars_level(X), (1, 2)) == (y == 0)).all()
                assert not (c.stars_level(X) == 3).any()
            else:
                assert (d != 0).all() and list(y) == list((d > 0).astype(int)), name


def test_stars_mid_rank_levels_are_symmetric_in_the_score():
    X = c.corpus_like(c.stream(3, "test"), 3000, c.STARS_LENGTH)
    d, level = c.sentiment_score(X), c.stars_level(X)
    for v in np.unique(d):
        assert len(set(level[d == v])) == 1  # a function of d, monotone
    by_score = {int(v): int(level[d == v][0]) for v in np.unique(d)}
    assert [by_score[v] for v in sorted(by_score)] == sorted(by_score.values())
    assert by_score[0] == 3
    for v in (1, 2, 3, 4, 5):  # d and -d on opposite sides of level 3
        assert by_score[v] + by_score[-v] == 6


def test_neutral_bigrams_are_transitions_of_the_sparse_chain():
    succ, cum = c.markov_chain()
    assert succ.shape == (31, c.MARKOV_OUT_DEGREE) and np.allclose(cum[:, -1], 1)
    assert all(len(set(row)) == c.MARKOV_OUT_DEGREE for row in succ)
    allowed = {(c.NEUTRAL[i], c.NEUTRAL[j]) for i in range(31) for j in succ[i]}
    X, _ = c.pretraining_corpus(400, data_seed=2)
    seen = set()
    for row in X:
        for a, b in itertools.pairwise(row):
            if a in c.NEUTRAL and b in c.NEUTRAL:
                seen.add((int(a), int(b)))
    assert seen <= allowed and len(seen) > 0.9 * len(allowed)


def test_splits_are_seeded_prefix_stable_and_independent_of_n_train():
    a = c.classification_splits("sent", n_train=200, data_seed=1)
    b = c.classification_splits("sent", n_train=1000, data_seed=1)
    again = c.classification_splits("sent", n_train=200, data_seed=1)
    other = c.classification_splits("sent", n_train=200, data_seed=2)
    for name in a:
        np.testing.assert_array_equal(a[name][0], again[name][0])
        assert not np.array_equal(a[name][0], other[name][0])
    np.testing.assert_array_equal(a["train"][0], b["train"][0][:200])
    for name in ("val", "test", "test_noise"):
        np.testing.assert_array_equal(a[name][0], b[name][0])
    assert not np.array_equal(a["val"][0][:100], a["test"][0][:100])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_class_balance_within_stated_bounds(seed):
    bounds = {"sent": (0.44, 0.56), "long": (0.44, 0.56), "stars": (0.44, 0.56),
              "acc": (0.65, 0.75)}  # ACC: 70 % positive (CoLA-like), 3.4 sd at n = 1000
    for dataset, (lo, hi) in bounds.items():
        y = c.classification_splits(dataset, n_train=1000, n_val=1, n_test=1,
                                    data_seed=seed)["train"][1]
        assert lo <= y.mean() <= hi, (dataset, y.mean())


def test_pretraining_corpus_mixes_lengths_and_pads_with_zero():
    X, lengths = c.pretraining_corpus(401, data_seed=0)
    assert X.shape == (401, 48) and list(np.bincount(lengths)[[16, 48]]) == [200, 201]
    for row, L in zip(X, lengths):
        assert row[0] == CLS and (row[L:] == PAD).all() and (row[1:L] != PAD).all()
    assert c.is_well_nested(X).all() and c.max_depth(X).max() <= c.MAX_TRAIN_DEPTH
    has = lambda ids: np.isin(X, ids).any(1).mean()
    assert 0.4 < has(c.OPENERS) < 0.6  # a bracket group in half of the sequences
    assert has(c.POSITIVE + c.NEGATIVE) > 0.9
    val, _ = c.pretraining_corpus(50, split="val")
    assert not np.array_equal(val, X[:50])
    with pytest.raises(ValueError, match="split"):
        c.pretraining_corpus(5, split="dev")


def test_acc_negatives_are_one_corrupted_closer():
    rng = np.random.default_rng(0)
    for _ in range(300):
        group = c.dyck_group(rng, int(rng.integers(1, 4)), 2)
        bad = c.corrupt_group(rng, group)
        assert nested_by_reduction(group) and not nested_by_reduction(bad)
        assert len(bad) in (len(group), len(group) - 1)
        diff = [i for i, (x, y) in enumerate(zip(group, bad)) if x != y]
        if len(bad) == len(group):  # a kind change of exactly one closer
            assert len(diff) == 1 and group[diff[0]] in c.CLOSERS and bad[diff[0]] in c.CLOSERS
        else:  # one closer deleted
            i = diff[0] if diff else len(bad)
            assert group[i] in c.CLOSERS and group[:i] + group[i + 1:] == bad
    with pytest.raises(ValueError, match="depth"):
        c.dyck_group(rng, 2, 2, min_depth=3)


def test_deep_test_nests_deeper_than_any_training_sequence():
    s = c.classification_splits("acc", n_train=1000, n_val=10, n_test=400)
    X, y = s["train"]  # depth is that of the well-nested ones (a deleted closer leaves the
    assert c.max_depth(X[y == 1]).max() <= c.MAX_TRAIN_DEPTH  # opener count of a negative up)
    deep, y = s["test_deep"]
    positives = deep[y == 1]
    assert c.max_depth(positives).min() >= c.MAX_TRAIN_DEPTH + 1
    assert 0.63 < y.mean() < 0.77


def test_neutral_noise_replaces_only_neutral_tokens_and_keeps_labels():
    s = c.classification_splits("sent", n_train=1, n_val=1, n_test=500)
    (X, y), (N, yn) = s["test"], s["test_noise"]
    changed = X != N
    assert (changed.sum(1) <= 2).all() and changed.sum() > 700  # round(0.1 * 15) = 2 each
    assert np.isin(X[changed], c.NEUTRAL).all() and np.isin(N[changed], c.NEUTRAL).all()
    np.testing.assert_array_equal(yn, y)
    np.testing.assert_array_equal([count_rule(r) > 0 for r in N], y.astype(bool))


def test_lexicon_shift_trains_on_one_half_and_tests_on_the_other():
    s = c.classification_splits("sent", n_train=300, n_val=100, n_test=300, lexicon="shift")
    lexicon = c.POSITIVE + c.NEGATIVE
    for name, allowed in (("train", c.LEXICON_A), ("val", c.LEXICON_A), ("test", c.LEXICON_B)):
        X = s[name][0]
        used = set(X[np.isin(X, lexicon)].tolist())
        assert used == set(allowed[0] + allowed[1]), name
    with pytest.raises(ValueError, match="shift"):
        c.classification_splits("acc", lexicon="shift")


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="dataset"):
        c.classification_splits("imdb")
    with pytest.raises(ValueError, match="data_seed"):
        c.stream(-1, "x")
    with pytest.raises(ValueError, match="examples"):
        c.sentiment_set(-3, 16, np.random.default_rng(0))
