"""`sparkps launch` with the strategies: MXNet-style kvstore names, strategy options and 2-bit pushes."""
import pytest
from click.testing import CliRunner

from launch_helpers import FAST_CLUSTER, Sparkps, digits_accuracy, write_digits
from sparkps.cli import main


def run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.fixture(scope="module")
def digits_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("digits")
    train, test = write_digits(directory)
    net = directory / "net.json"
    assert run(["symbol", "mlp", "--layers", "64,64,10", "-o", str(net)]).exit_code == 0
    return {"train": train, "test": test, "net": str(net)}


def train_args(files, *extra):
    return ["--", "train", "--symbol", files["net"], "--data", files["train"], "--num-features", "64",
            "--batch-size", "32", "--optimizer", "sgd", "--lr", "0.1", "--seed", "1", *extra]


@pytest.mark.slow
def test_launch_with_one_backup_worker_and_two_bit_pushes_trains_the_digits(digits_files, tmp_path):
    prefix = str(tmp_path / "digits")
    proc = Sparkps(["launch", "-s", "1", "-w", "2", "--kvstore", "dist_sync_replicas"] + FAST_CLUSTER +
                   train_args(digits_files, "--epochs", "10", "--momentum", "0.5", "--save", prefix,
                              "--kvstore-param", "replicas_to_aggregate=1", "--compression", "2bit",
                              "--compression-threshold", "0.5"))
    assert proc.finish(180) == 0, proc.output
    assert digits_accuracy(prefix, 10, digits_files["test"]) >= 0.93


@pytest.mark.parametrize("kvstore,param,message", [
    ("dist_sync", "max_staleness=2", "kvstore 'dist_sync' has no option(s) max_staleness (known: none)"),
    ("dist_easgd", "interval_steps=4", "'dist_easgd' has no option(s) interval_steps (known: communication_period"),
    ("dist_async", "max_staleness", "strategy option 'max_staleness' is not name=value"),
    ("dist_sync_replicas", "replicas_to_aggregate=x", "replicas_to_aggregate must be a positive int, got 'x'"),
    ("dist_easgd", "moving_rate=2", "'dist_easgd': moving_rate must be a number in (0, 1], got 2"),
])
def test_unknown_strategy_options_stop_launch_before_anything_starts(digits_files, kvstore, param, message):
    result = CliRunner().invoke(main, ["launch", "-w", "1", "--kvstore", kvstore] +
                                train_args(digits_files, "--kvstore-param", param))
    assert result.exit_code == 2 and message in result.output, result.output


def test_every_strategy_is_a_launch_and_train_choice():
    for command in (["launch", "--help"], ["worker", "train", "--help"]):
        output = run(command).output
        for name in ("dist_sync_replicas", "dist_model_average", "dist_easgd"):
            assert name in output, (command, name)


def test_the_strategy_table_is_the_one_source_of_names_options_and_sync():
    """kvstore/strategies.py holds the one table; the dist kvstore's types, the workers' local-training classes and
    the help of `worker train --kvstore-param` are derived from it."""
    from sparkps.kvstore.strategies import LOCAL_STRATEGIES, OPTION_NAMES, STRATEGY_TABLE
    from sparkps.worker.averaging import LOCAL_TRAINING
    from sparkps.worker.dist_kvstore import SYNC_OF_TYPE
    assert sorted(LOCAL_TRAINING) == sorted(LOCAL_STRATEGIES) == ["dist_easgd", "dist_model_average"]
    assert {name: SYNC_OF_TYPE[name] for name in STRATEGY_TABLE} == {
        "dist_sync": True, "dist_async": False, "dist_sync_replicas": True, "dist_model_average": False,
        "dist_easgd": False}
    help_text = " ".join(run(["worker", "train", "--help"]).output.split())
    assert all(name in help_text for name in OPTION_NAMES), help_text
