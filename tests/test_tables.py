"""`lalr_core.core.results.tables.run_table`: one row per run, columns in a fixed order."""

import math

import pytest

from lalr_core.core.results.tables import run_table


def _res(final, diverged=False, wall=1.5):
    return {"final": final, "diverged": diverged, "wall_time_s": wall}


def test_rows_columns_and_percent():
    configs = [{"m": "a", "seed": 0}, {"m": "b", "seed": 1}]
    results = [_res({"train_acc": 0.5, "test_acc": 0.25, "test_loss": 2.0}),
               _res({"test_acc": 0.125}, diverged=True, wall=3.0)]
    df = run_table(configs, results, lambda c: {"model": c["m"], "seed": c["seed"]},
                   metrics=("train_acc", "test_acc", "test_loss"), percent=True)
    assert list(df.columns) == ["model", "seed", "train_acc", "test_acc", "test_loss",
                                "diverged", "wall_time_s"]
    assert df.loc[0, "train_acc"] == 50.0 and df.loc[0, "test_acc"] == 25.0
    assert df.loc[0, "test_loss"] == 2.0                      # losses are never scaled
    assert math.isnan(df.loc[1, "train_acc"])                 # not recorded: NaN
    assert df["diverged"].tolist() == [False, True] and df.loc[1, "wall_time_s"] == 3.0
    frac = run_table(configs, results, lambda c: {}, metrics=("test_acc",))
    assert frac["test_acc"].tolist() == [0.25, 0.125]


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="2 results for 1 configs"):
        run_table([{}], [_res({}), _res({})], lambda c: {})
