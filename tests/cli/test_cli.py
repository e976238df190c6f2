"""The `sparkps` command: help, usage errors, symbol files, status, env-driven roles, and `launch`
training the digits MLP to >= 93 % test accuracy with dist_sync and dist_async."""
import json
import os

import pytest
from click.testing import CliRunner

from cluster import NodeCluster
from launch_helpers import FAST_CLUSTER, Sparkps, alive, digits_accuracy, recorded_pids, write_digits
from sparkps.cli import main

SUBCOMMANDS = [["scheduler"], ["server"], ["worker"], ["worker", "train"], ["status"], ["launch"], ["symbol"],
               ["symbol", "mlp"], ["node"]]


def run(args, env=None):
    return CliRunner().invoke(main, args, env=env, catch_exceptions=False)


def test_top_level_help_lists_every_command():
    result = run(["--help"])
    assert result.exit_code == 0
    for name in ("launch", "node", "scheduler", "server", "status", "symbol", "worker"):
        assert name in result.output


@pytest.mark.parametrize("command", SUBCOMMANDS, ids=" ".join)
def test_every_subcommand_has_help(command):
    result = run(command + ["--help"])
    assert result.exit_code == 0 and "Usage:" in result.output
    assert len(result.output.splitlines()) > 4


def test_worker_train_help_documents_the_training_options():
    text = run(["worker", "train", "--help"]).output
    for option in ("--symbol", "--data", "--num-features", "--batch-size", "--epochs", "--optimizer", "--lr",
                   "--momentum", "--save", "--kvstore", "SPARKPS_SCHEDULER_URI", "SPARKPS_SECRET"):
        assert option in text


def test_unknown_options_are_usage_errors():
    result = run(["--frobnicate"])
    assert result.exit_code == 2 and "No such option" in result.output
    result = run(["scheduler", "-s", "1", "-w", "1", "--bogus"])
    assert result.exit_code == 2 and "No such option" in result.output


def test_scheduler_needs_the_role_counts():
    result = run(["scheduler"], env={"SPARKPS_NUM_SERVER": None, "SPARKPS_NUM_WORKER": None})
    assert result.exit_code == 2 and "--num-servers" in result.output


def test_server_without_a_scheduler_address_says_so():
    result = run(["server"], env={"SPARKPS_SCHEDULER_URI": None, "SPARKPS_SCHEDULER_PORT": None,
                                  "SPARKPS_SECRET": "x"})
    assert result.exit_code == 2 and "no scheduler address" in result.output


def test_symbol_mlp_writes_a_loadable_network(tmp_path):
    import sparkps.symbol as sym
    path = tmp_path / "net.json"
    result = run(["symbol", "mlp", "--layers", "784,128,64,10", "--act", "tanh", "-o", str(path)])
    assert result.exit_code == 0, result.output
    net = sym.load_json(path.read_text())
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "fc3_weight",
                                    "fc3_bias", "softmax_label"]
    assert run(["symbol", "mlp", "--layers", "10", "-o", str(path)]).exit_code == 2


def test_status_prints_a_table_and_json():
    c = NodeCluster(num_servers=1, num_workers=1, transport="tcp")
    try:
        c.workers[0].report_progress({"epoch": 1, "nbatch": 3, "samples": 96, "metrics": {"accuracy": 0.5}})
        c.workers[0].barrier("workers")  # the progress was handled before this barrier
        env = {"SPARKPS_SCHEDULER_URI": c.scheduler.uri, "SPARKPS_SECRET": c.scheduler.secret}
        table = run(["status"], env=env)
        assert table.exit_code == 0, table.output
        assert "state: running" in table.output and "server" in table.output
        assert "worker 0: epoch 1, batch 3, 96 samples, accuracy=0.5000" in table.output
        as_json = json.loads(run(["status", "--json"], env=env).output)
        assert as_json["state"] == "running" and len(as_json["nodes"]) == 2
        wrong = run(["status", "--timeout", "0.3"], env=dict(env, SPARKPS_SECRET="wrong"))
        assert wrong.exit_code == 1 and "PeerTimeout" in wrong.output
    finally:
        c.stop()


def test_a_scheduler_started_from_env_reports_the_roles_that_never_came():
    proc = Sparkps(["node", "--register-timeout", "0.5"],
                   env={"SPARKPS_ROLE": "scheduler", "SPARKPS_NUM_SERVER": "1", "SPARKPS_NUM_WORKER": "2",
                        "SPARKPS_SECRET": "s3cret", "SPARKPS_SCHEDULER_PORT": "0"})
    assert proc.finish(30) == 1
    assert "SPARKPS_SCHEDULER_URI=tcp://127.0.0.1:" in proc.output
    assert "1 of 1 servers (rank 0) and 2 of 2 workers (ranks 0, 1) never registered" in proc.output


@pytest.fixture(scope="module")
def digits_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("digits")
    train, test = write_digits(directory)
    net = directory / "net.json"
    assert run(["symbol", "mlp", "--layers", "64,64,10", "-o", str(net)]).exit_code == 0
    return {"train": train, "test": test, "net": str(net), "dir": directory}


@pytest.mark.slow
@pytest.mark.parametrize("kvstore", ["dist_sync", "dist_async"])
def test_launch_trains_the_digits_mlp(digits_files, kvstore, tmp_path):
    prefix = str(tmp_path / "digits")
    pids_file = str(tmp_path / "pids")
    proc = Sparkps(["launch", "-s", "2", "-w", "2", "--kvstore", kvstore] + FAST_CLUSTER +
                   ["--", "train", "--symbol", digits_files["net"], "--data", digits_files["train"],
                    "--num-features", "64", "--batch-size", "32", "--epochs", "10", "--optimizer", "sgd",
                    "--lr", "0.1", "--momentum", "0.9", "--seed", "1", "--save", prefix],
                   env={"SPARKPS_LAUNCH_PIDS_FILE": pids_file})
    assert proc.finish(180) == 0, proc.output
    assert "sparkps launch: job finished (2 servers, 2 workers)" in proc.output
    pids = recorded_pids(pids_file)
    assert sorted(pids) == ["scheduler", "server 0", "server 1", "worker 0", "worker 1"]
    assert not [name for name, pid in pids.items() if alive(pid)]
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0010.params")
    assert digits_accuracy(prefix, 10, digits_files["test"]) >= 0.93


def test_launch_sizes_every_roles_frame_limit_from_the_network_unless_the_environment_sets_it(digits_files,
                                                                                                 monkeypatch):
    from sparkps.comm.settings import DEFAULT_MAX_MESSAGE_BYTES, HEADER_LIMIT_BYTES, message_size_limit
    from sparkps.runtime.launcher import LocalCluster
    seen = []
    monkeypatch.setattr(LocalCluster, "run", lambda self: seen.append(self.env.get("SPARKPS_MAX_MESSAGE_BYTES")) or 0)
    monkeypatch.delenv("SPARKPS_MAX_MESSAGE_BYTES", raising=False)
    args = ["launch", "-s", "2", "-w", "1", "--", "train", "--symbol", digits_files["net"], "--data",
            digits_files["train"], "--batch-size", "32"]
    assert run(args + ["--num-features", "64"]).exit_code == 0
    dense = 64 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10        # the MLP 64-64-64-10's parameters
    assert int(seen[-1]) == message_size_limit(dense_elements=dense, num_servers=2) == HEADER_LIMIT_BYTES
    assert int(seen[-1]) == DEFAULT_MAX_MESSAGE_BYTES      # the header's limit: arrays travel in frames below it
    monkeypatch.setenv("SPARKPS_MAX_MESSAGE_BYTES", "256M")
    assert run(args + ["--num-features", "64"]).exit_code == 0 and seen[-1] == "256M"
    monkeypatch.delenv("SPARKPS_MAX_MESSAGE_BYTES")
    assert run(args).exit_code == 0 and seen[-1] is None       # width unknown until the file is read: the default


def test_launch_checks_the_train_options_before_starting_anything(tmp_path):
    result = run(["launch", "-s", "1", "-w", "1", "--", "train", "--symbol", str(tmp_path / "missing.json"),
                  "--data", str(tmp_path / "missing.libsvm")])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = run(["launch", "--", "predict"])
    assert result.exit_code == 2 and "runs `train ...`" in result.output
