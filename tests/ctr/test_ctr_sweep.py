"""benchmarks/ctr_sweep.py on a small planted data set: every setting of the swept axis fitted with early
stopping and scored, the table names the best setting, the fastest one near it and the defaults' gap to it, and a
second run reuses the cached fits instead of fitting again; its pure helpers: the learning rate scaled with the
batch, the settings of a model's sweep, the stop rule replayed on a fit's history and the verdicts."""
import json

import pytest

from benchmarks import ctr_sweep


def test_a_sweep_fits_each_setting_once_and_reports_the_defaults_gap(tmp_path, capsys, monkeypatch):
    cache = str(tmp_path / "fits.json")
    argv = ["--rows", "1500", "--models", "fm", "--data", "noise0", "--seeds", "0", "--axes", "learningRate",
            "--max-epochs", "3", "--cache", cache]
    assert ctr_sweep.main(argv) == 0
    out = capsys.readouterr().out
    fits = json.load(open(cache))
    swept = ctr_sweep.settings_for("fm", ["learningRate"], max_epochs=3) + [ctr_sweep.defaults_setting("fm", 3)]
    assert len(fits) == len({ctr_sweep.trajectory(s) for s in swept}) >= len(ctr_sweep.AXES["learningRate"])
    for history in fits.values():
        assert 1 <= len(history) <= 3
        for epoch in history:
            assert 0.0 <= epoch["auc"] <= 1.0 and epoch["fit_s"] > 0
    assert "| fm | centre |" in out and "- fm: best by held-out AUC " in out and "the defaults" in out
    assert "fastest within 0.002 of it" in out and "- every model (fm): the fastest setting" in out

    def refit(*args, **kwargs):
        raise AssertionError("a cached fit was fitted again")
    monkeypatch.setattr(ctr_sweep, "fit_once", refit)
    assert ctr_sweep.main(argv) == 0


def test_settings_of_patience_and_budget_share_one_fit(tmp_path, capsys):
    cache = str(tmp_path / "fits.json")
    assert ctr_sweep.main(["--rows", "1500", "--models", "lr", "--data", "noise0", "--seeds", "0", "--axes",
                           "earlyStoppingPatience,numEpochs", "--max-epochs", "4", "--cache", cache]) == 0
    centre = repr(ctr_sweep.trajectory(ctr_sweep.centre_for("lr")))
    (key,) = [k for k in json.load(open(cache)) if centre in k]     # one fit for all five settings around the centre
    assert key.endswith(", 0, 4, 3)")        # seed 0, the largest budget and patience of the settings
    assert key.startswith("('%s', " % ctr_sweep.code_version())     # kept under the code that fitted it
    assert "| lr | earlyStoppingPatience 1 |" in capsys.readouterr().out


def test_the_replayed_stop_matches_a_fit_run_with_it():
    dataset = ctr_sweep.load("noise0", 1500)
    arrays = ctr_sweep.featurised(dataset)
    setting = ctr_sweep.centre_for("fm")
    long = ctr_sweep.fit_once(dataset, arrays, "fm", setting, 0, 4, 3)
    short = ctr_sweep.fit_once(dataset, arrays, "fm", setting, 0, 2, 1)
    replayed = ctr_sweep.early_stopped(long, 1, 2)
    assert replayed["epochs"] == len(short)
    assert replayed["auc"] == max(short, key=lambda h: h["val_auc"])["auc"]


def test_the_learning_rate_follows_the_square_root_of_the_batch():
    assert ctr_sweep.scaled_lr(0.003, 256) == 0.003
    assert ctr_sweep.scaled_lr(0.003, 1024) == 0.006
    assert ctr_sweep.scaled_lr(0.003, 4096) == 0.012
    assert ctr_sweep.scaled_lr(0.003, 2048) == 0.008485
    with pytest.raises(ValueError, match="batch sizes must be positive: batch 0"):
        ctr_sweep.scaled_lr(0.003, 0)


def test_a_models_settings_scale_the_rate_on_the_batch_axis_only():
    fm = ctr_sweep.settings_for("fm", ["batchSize", "learningRate", "dropout"])
    assert {(s["batchSize"], s["learningRate"]) for s in fm} == {
        (256, 0.003), (1024, 0.006), (2048, 0.008485), (4096, 0.012), (8192, 0.01697), (256, 0.001), (256, 0.01)}
    assert all("dropout" not in s for s in fm)
    deep = ctr_sweep.settings_for("deepfm", ["dropout"])
    assert [s["dropout"] for s in deep] == [0.0, 0.3, 0.5]
    assert ctr_sweep.settings_for("deepfm", ["batchSize", "dropout"], brief=True) == deep
    capped = ctr_sweep.settings_for("fm", ["numEpochs"], max_epochs=5)
    assert [s["numEpochs"] for s in capped] == [5]


def _epochs(*val_aucs):
    return [{"val_auc": v, "auc": v / 2, "logloss": 1 - v, "fit_s": float(i + 1), "wall_s": i + 1.5}
            for i, v in enumerate(val_aucs)]


def test_the_stop_rule_is_replayed_on_a_history():
    history = _epochs(0.60, 0.62, 0.61, 0.61, 0.63, 0.62, 0.62, 0.62)
    assert ctr_sweep.early_stopped(history, 2, 10) == {"val_auc": 0.62, "auc": 0.31, "logloss": 1 - 0.62,
                                                      "epochs": 4, "best_epoch": 2, "fit_s": 4.0, "wall_s": 4.5}
    assert ctr_sweep.early_stopped(history, 1, 10)["epochs"] == 3
    assert ctr_sweep.early_stopped(history, 3, 10)["best_epoch"] == 5
    assert ctr_sweep.early_stopped(history, 3, 6) == dict(ctr_sweep.early_stopped(history, 3, 10), epochs=6,
                                                          fit_s=6.0, wall_s=6.5)
    with pytest.raises(ValueError, match="ends at epoch 8 before patience 4"):
        ctr_sweep.early_stopped(history, 4, 20)


def _row(text, val_auc, fit_s, test_auc=0.5):
    return {"text": text, "summary": {"val_auc": val_auc, "auc": test_auc, "fit_s": fit_s}}


def test_the_verdict_takes_the_fastest_setting_near_the_best():
    rows = [_row("centre", 0.700, 10.0), _row("batch 1024", 0.699, 4.0), _row("batch 4096", 0.6985, 2.0),
            _row("batch 8192", 0.690, 1.0)]
    assert ctr_sweep.fastest_within(rows)["text"] == "batch 4096"
    assert ctr_sweep.fastest_within(rows, tolerance=0.001)["text"] == "batch 1024"


def test_the_test_rows_never_choose():
    """The best and the fastest near it are read on the held-out rows; a setting that wins only on the test rows
    is not chosen."""
    rows = [_row("centre", 0.700, 10.0, test_auc=0.650), _row("lucky on test", 0.690, 1.0, test_auc=0.900)]
    assert ctr_sweep.best_held_out(rows)["text"] == "centre"
    assert ctr_sweep.fastest_within(rows)["text"] == "centre"
    assert ctr_sweep.fastest_for_all({"fm": rows}) == ("centre", 10.0)
    with pytest.raises(ValueError, match="no settings"):
        ctr_sweep.fastest_within([])


def test_the_shared_verdict_needs_every_model_near_its_best():
    by_model = {"lr": [_row("centre", 0.70, 5.0), _row("batch 4096", 0.699, 1.0), _row("batch 8192", 0.699, 0.5)],
                "fm": [_row("centre", 0.80, 6.0), _row("batch 4096", 0.7995, 2.0), _row("batch 8192", 0.79, 1.0)]}
    assert ctr_sweep.fastest_for_all(by_model) == ("batch 4096", 3.0)
    by_model["fm"][1] = _row("batch 4096", 0.79, 2.0)
    assert ctr_sweep.fastest_for_all(by_model) == ("centre", 11.0)
    assert ctr_sweep.fastest_for_all({"lr": [_row("a", 0.7, 1.0)], "fm": [_row("b", 0.7, 1.0)]}) is None


def test_an_unknown_axis_is_named(capsys):
    with pytest.raises(SystemExit):
        ctr_sweep.parse_args(["--axes", "momentum"])
    assert "--axes: unknown ['momentum']" in capsys.readouterr().err


def test_a_combined_setting_moves_several_axes_and_scales_the_rate():
    moves = ctr_sweep.parse_args(["--combine", "validationFraction=0.05,batchSize=1024"]).combine
    assert moves == [{"validationFraction": 0.05, "batchSize": 1024}]
    fm = ctr_sweep.combined("fm", moves[0])
    assert fm == dict(ctr_sweep.CENTRE, validationFraction=0.05, batchSize=1024, learningRate=0.006)
    assert ctr_sweep.combined("fm", {"batchSize": 1024, "learningRate": 0.003, "dropout": 0.3}) == dict(
        ctr_sweep.CENTRE, batchSize=1024)
    assert ctr_sweep.combined("deepfm", {"dropout": 0.3, "numEpochs": 20}, max_epochs=5) == dict(
        ctr_sweep.CENTRE, dropout=0.3, numEpochs=5)
    with pytest.raises(ValueError, match=r"names \['momentum'\], not a swept param"):
        ctr_sweep.combined("fm", {"momentum": 0.9})


def test_a_combined_setting_that_does_not_parse_is_named(capsys):
    with pytest.raises(SystemExit):
        ctr_sweep.parse_args(["--combine", "batchSize"])
    assert "'batchSize': expected name=value,name=value" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ctr_sweep.parse_args(["--combine", "momentum=0.9"])
    assert "--combine: unknown ['momentum']" in capsys.readouterr().err
