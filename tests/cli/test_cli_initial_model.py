"""`sparkps launch -- train --initial-model PATH`: a launched job starts from a saved model (a checkpoint PREFIX that
--save wrote, or a SparkModel folder), on another number of servers; a model that does not fit is named before any
role starts."""
import numpy as np
import pytest
from click.testing import CliRunner

from launch_helpers import FAST_CLUSTER, Sparkps, digits_accuracy, write_digits
from sparkps.cli import main


def run(args):
    return CliRunner().invoke(main, args)


@pytest.fixture(scope="module")
def digits_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("digits")
    train, test = write_digits(directory)
    nets = {}
    for layers in ("64,32,10", "64,48,10"):
        nets[layers] = str(directory / ("net-%s.json" % layers.replace(",", "-")))
        assert run(["symbol", "mlp", "--layers", layers, "-o", nets[layers]]).exit_code == 0
    return {"train": train, "test": test, "net": nets["64,32,10"], "other": nets["64,48,10"]}


def launch(files, servers, extra, net=None):
    return Sparkps(["launch", "-s", str(servers), "-w", "2"] + FAST_CLUSTER +
                   ["--", "train", "--symbol", net or files["net"], "--data", files["train"], "--num-features", "64",
                    "--batch-size", "32", "--optimizer", "sgd", "--seed", "1"] + extra)


@pytest.mark.slow
def test_a_launched_job_starts_from_the_saved_weights_on_another_server_count(digits_files, tmp_path):
    from sparkps.model_files import load_checkpoint
    day1, day2 = str(tmp_path / "day1"), str(tmp_path / "day2")
    proc = launch(digits_files, 2, ["--epochs", "6", "--lr", "0.1", "--momentum", "0.9", "--save", day1])
    assert proc.finish(180) == 0, proc.output
    # a learning rate too small to move anything: the weights come back as they were saved
    proc = launch(digits_files, 1, ["--epochs", "1", "--lr", "1e-9", "--initial-model", day1, "--save", day2])
    assert proc.finish(180) == 0, proc.output
    _, before, _ = load_checkpoint(day1, 6)
    _, after, _ = load_checkpoint(day2, 1)
    for name, value in before.items():
        np.testing.assert_allclose(after[name], value, atol=1e-6)
    assert digits_accuracy(day2, 1, digits_files["test"]) >= 0.9


def test_a_model_that_does_not_fit_is_named_before_any_role_starts(digits_files, tmp_path):
    missing = str(tmp_path / "nothing")
    result = run(["launch", "-s", "1", "-w", "1", "--", "train", "--symbol", digits_files["net"], "--data",
                  digits_files["train"], "--num-features", "64", "--initial-model", missing])
    assert result.exit_code != 0 and "%s is not a saved model" % missing in result.output
    prefix = str(tmp_path / "narrow")
    from sparkps import symbol as sym
    from sparkps.model_files import save_checkpoint
    net = sym.load_json(open(digits_files["net"], encoding="utf-8").read())
    arg_shapes, _, _ = net.infer_shape(data=(32, 64))
    params = {n: np.zeros(s, np.float32) for n, s in zip(net.list_arguments(), arg_shapes)
              if n not in ("data", "softmax_label")}
    save_checkpoint(prefix, 3, net, params, {})
    result = run(["launch", "-s", "1", "-w", "1", "--", "train", "--symbol", digits_files["other"], "--data",
                  digits_files["train"], "--num-features", "64", "--initial-model", prefix])
    assert result.exit_code != 0
    assert "parameter 'fc1_bias': initial model %s holds shape (32,), this fit's network needs (48,)" % prefix \
        in result.output, result.output
