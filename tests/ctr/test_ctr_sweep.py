"""benchmarks/ctr_sweep.py on a small planted data set: every setting of the swept axis fitted with early
stopping and scored, the table names the best setting and the defaults' gap to it, and a second run reuses the
cached fits instead of fitting again."""
import json

import pytest

from benchmarks import ctr_sweep


def test_a_sweep_fits_each_setting_once_and_reports_the_defaults_gap(tmp_path, capsys, monkeypatch):
    cache = str(tmp_path / "fits.json")
    argv = ["--rows", "1500", "--models", "fm", "--data", "noise0", "--seeds", "0", "--axes", "learningRate",
            "--max-epochs", "3", "--patience", "1", "--cache", cache]
    assert ctr_sweep.main(argv) == 0
    out = capsys.readouterr().out
    fits = json.load(open(cache))
    assert len(fits) == len(ctr_sweep.AXES["learningRate"])
    for run in fits.values():
        assert 0.0 <= run["auc"] <= 1.0 and 1 <= run["best_epoch"] <= run["epochs"] <= 3
    assert "| fm | centre |" in out and "- fm: best " in out and "the defaults" in out

    def refit(*args, **kwargs):
        raise AssertionError("a cached fit was fitted again")
    monkeypatch.setattr(ctr_sweep, "fit_once", refit)
    assert ctr_sweep.main(argv) == 0


def test_an_unknown_axis_is_named(capsys):
    with pytest.raises(SystemExit):
        ctr_sweep.parse_args(["--axes", "momentum"])
    assert "--axes: unknown ['momentum']" in capsys.readouterr().err
