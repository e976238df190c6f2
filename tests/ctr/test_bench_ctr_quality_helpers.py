"""The pure helpers of benchmarks/bench_ctr_quality.py: the grids, the exact AUC, logloss and the per-model
summary over seeds (no Spark)."""
import numpy as np
import pytest

from benchmarks.bench_ctr_quality import auc, best, grid, logloss, one_axis_sweep, race_verdicts, summarise
from benchmarks.ctr_reference import RunCache


def test_grid_is_every_combination_last_axis_fastest():
    assert grid({"a": [1, 2], "b": ["x", "y"]}) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"},
                                                   {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    assert grid({}) == [{}]


def test_one_axis_sweep_keeps_the_defaults_once():
    settings = one_axis_sweep({"lr": 0.01, "l2": 0.0}, {"lr": [0.001, 0.01], "l2": [0.0, 1e-4]})
    assert settings == [{"lr": 0.001, "l2": 0.0}, {"lr": 0.01, "l2": 0.0}, {"lr": 0.01, "l2": 1e-4}]


def test_auc_matches_the_pair_count_with_ties():
    rng = np.random.default_rng(0)
    labels = rng.random(200) < 0.3
    scores = np.round(rng.random(200) + labels * 0.3, 1)       # many ties
    pos, neg = scores[labels], scores[~labels]
    pairs = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    assert auc(labels, scores) == pytest.approx(pairs)
    assert auc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4]) == 1.0
    assert auc([1, 1], [0.1, 0.2]) is None


def test_logloss_clips_certain_mistakes():
    assert logloss([1, 0], [0.5, 0.5]) == pytest.approx(np.log(2))
    assert logloss([1], [0.0]) == pytest.approx(-np.log(1e-15))          # a certain mistake costs log(1/eps)
    assert logloss([0], [1.0]) == pytest.approx(-np.log(1e-15), rel=1e-3)  # 1 - (1 - 1e-15) in float64


def test_summarise_means_and_spread_over_seeds():
    runs = [{"auc": 0.70, "logloss": 0.5, "epochs": 3, "fit_s": 10.0},
            {"auc": 0.74, "logloss": 0.7, "epochs": 5, "fit_s": 20.0}]
    row = summarise(runs)
    assert row["auc"] == pytest.approx(0.72) and row["spread"] == pytest.approx(0.04)
    assert (row["logloss"], row["epochs"], row["fit_s"], row["seeds"]) == (pytest.approx(0.6), 4.0, 15.0, 2)
    assert best([{"val_auc": 0.6, "k": 1}, {"val_auc": 0.7, "k": 2}, {"val_auc": 0.7, "k": 3}])["k"] == 2


def test_run_cache_keeps_runs_across_instances(tmp_path):
    path = str(tmp_path / "runs.json")
    key = ("planted_noise0", 100, "lr", "tuned", 0, (8,))
    first = RunCache(path)
    assert first.get(key) is None
    first.put(key, {"auc": 0.71, "setting": {"regParam": 0.01}})
    assert RunCache(path).get(key) == {"auc": 0.71, "setting": {"regParam": 0.01}}
    assert RunCache(path).get(key[:-1] + ((4,),)) is None
    unkept = RunCache(None)
    unkept.put(key, {"auc": 0.5})
    assert unkept.get(key) == {"auc": 0.5} and not (tmp_path / "None").exists()


def _row(model, variant, auc_value, fit_s):
    return {"model": model, "variant": variant, "summary": {"auc": auc_value, "fit_s": fit_s},
            "runs": [{"seed": 0, "auc": auc_value, "fit_s": fit_s}]}


def _seeded(model, variant, runs):
    """A row over seeds: runs [(auc, fit_s)] of seeds 0, 1, 2, ... summarised as the benchmark does."""
    runs = [{"seed": seed, "auc": a, "fit_s": f, "logloss": 0.5, "epochs": 1} for seed, (a, f) in enumerate(runs)]
    return {"model": model, "variant": variant, "summary": summarise(runs), "runs": runs}


def test_race_verdicts_count_the_pipeline_and_measure_against_the_best_mllib_row():
    rows = [_row("sparkps fm", "default", 0.7800, 5.0), _row("sparkps lr", "default", 0.7700, 2.0),
            _row("sparkps fm", "previous", 0.9, 1.0),                   # not at its defaults: no verdict
            _row("MLlib LogisticRegression", "default", 0.7690, 6.0),
            _row("MLlib FMClassifier", "tuned", 0.7760, 60.0)]          # the best MLlib AUC, whatever its time
    verdicts = {v["model"]: v for v in race_verdicts(rows, pipeline_s=4.0)}
    assert set(verdicts) == {"sparkps fm", "sparkps lr"}
    assert verdicts["sparkps fm"]["auc_margin"] == pytest.approx(0.0040)
    assert verdicts["sparkps fm"]["speedup"] == pytest.approx((6.0 + 4.0) / 5.0)      # 2.0x: met, just
    assert verdicts["sparkps fm"]["met"]
    assert verdicts["sparkps lr"]["auc_margin"] == pytest.approx(-0.0060) and not verdicts["sparkps lr"]["met"]
    assert verdicts["sparkps lr"]["speedup"] == pytest.approx(5.0)
    slow = race_verdicts([_row("sparkps fm", "default", 0.7800, 5.1)] + rows[3:], pipeline_s=4.0)
    assert not slow[0]["met"]                       # AUC enough, 1.96x: missed
    assert race_verdicts(rows[:3], pipeline_s=4.0) == []       # no MLlib row: nothing to race
    assert race_verdicts([rows[0], rows[4]], pipeline_s=None)[0]["speedup"] is None


def test_race_verdicts_pair_each_seeds_systems_and_say_when_the_spread_crosses_a_target():
    rows = [_seeded("sparkps fm", "default", [(0.790, 4.0), (0.781, 6.0), (0.785, 5.0)]),
            _seeded("MLlib LogisticRegression", "default", [(0.780, 6.0), (0.780, 6.0), (0.780, 7.0)])]
    (verdict,) = race_verdicts(rows, pipeline_s=3.0)
    assert verdict["auc_range"] == (pytest.approx(0.001), pytest.approx(0.010))    # seed by seed, not the medians
    assert verdict["auc_margin"] == pytest.approx(0.005)
    assert verdict["speed_range"] == (pytest.approx(9.0 / 6.0), pytest.approx(9.0 / 4.0))
    assert verdict["speedup"] == pytest.approx(10.0 / 5.0)
    assert verdict["met"] and verdict["crosses"] == ["AUC", "speed"]
    steady = [_seeded("sparkps fm", "default", [(0.790, 2.0)] * 3), rows[1]]
    assert race_verdicts(steady, pipeline_s=3.0)[0]["crosses"] == []
