"""train_ctr offers only the strategies that can train sparse tables: --help lists those, and a strategy that
trains on the workers' own weights (dist_model_average, dist_easgd) is a usage error naming --kvstore."""
import pytest

from tests.spark.submit.test_job_flags import job_module


@pytest.mark.parametrize("refused", ["dist_model_average", "dist_easgd"])
def test_a_strategy_the_ctr_job_refuses_is_a_usage_error(refused, capsys):
    with pytest.raises(SystemExit) as stop:
        job_module("train_ctr").parse_args(["--demo", "--kvstore", refused])
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert "usage:" in err and "argument --kvstore: invalid choice: '%s'" % refused in err, err


def test_help_lists_only_the_strategies_the_ctr_job_runs(capsys):
    with pytest.raises(SystemExit) as stop:
        job_module("train_ctr").parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert stop.value.code == 0
    assert "--kvstore {dist_sync,dist_async,dist_sync_replicas}" in out, out
    assert "interval_steps" not in out and "moving_rate" not in out      # their options are not offered either
    assert job_module("train_ctr").parse_args(["--demo", "--kvstore", "dist_async"]).kvstore == "dist_async"


def test_the_classifier_job_keeps_every_strategy():
    args = job_module("train_classifier").parse_args(["--train", "a", "--kvstore", "dist_easgd"])
    assert args.kvstore == "dist_easgd"
