"""`sparkps --version`; a foreign JSON as --symbol names the file and what was expected; `sparkps status` reaches a
`sparkps launch` job through the status file the launcher writes (scheduler address and secret, mode 0600)."""
import json
import os
import stat

from click.testing import CliRunner

from launch_helpers import FAST_CLUSTER, Sparkps, write_digits
from sparkps import __version__
from sparkps.cli import main


def run(args, env=None):
    return CliRunner().invoke(main, args, env=env)


def test_version():
    result = run(["--version"])
    assert result.exit_code == 0 and result.output.strip() == "sparkps %s" % __version__


def test_a_foreign_json_as_symbol_names_the_file_and_what_was_expected(tmp_path):
    angel = tmp_path / "deepfm.json"
    angel.write_text(json.dumps({"data": {"indexrange": 10}, "layers": []}))
    (tmp_path / "d.libsvm").write_text("1 1:1\n")
    result = run(["launch", "-w", "1", "--", "train", "--symbol", str(angel), "--data", str(tmp_path / "d.libsvm")])
    assert result.exit_code == 2
    assert result.output.strip() == (
        "sparkps launch: error: --symbol %s: expected a symbol JSON document (an object with 'nodes' and 'heads', "
        "as `sparkps symbol mlp` writes); not a symbol JSON document: 'nodes'" % angel)


def test_status_without_a_launch_names_the_status_file(tmp_path):
    missing = tmp_path / "none.json"
    result = run(["status", "--status-file", str(missing)])
    assert result.exit_code == 2 and "status file %s: No such file or directory" % missing in result.output


def test_status_reaches_a_launched_job_through_its_status_file(tmp_path):
    train, _ = write_digits(tmp_path)
    net = tmp_path / "net.json"
    assert run(["symbol", "mlp", "--layers", "64,16,10", "-o", str(net)]).exit_code == 0
    status_file = tmp_path / "state" / "launch.json"
    proc = Sparkps(["launch", "-s", "1", "-w", "1", "--status-file", str(status_file)] + FAST_CLUSTER +
                   ["--", "train", "--symbol", str(net), "--data", train, "--num-features", "64", "--epochs", "500",
                    "--batch-size", "8"])
    try:
        proc.wait_for_line(r"`sparkps status --status-file %s` shows the job" % status_file, timeout=60)
        assert stat.S_IMODE(os.stat(status_file).st_mode) == 0o600
        saved = json.load(open(status_file))
        assert saved["scheduler"].startswith("tcp://127.0.0.1:") and saved["secret"]
        env = {k: None for k in ("SPARKPS_SCHEDULER_URI", "SPARKPS_SCHEDULER_PORT", "SPARKPS_SECRET")}
        result = run(["status", "--status-file", str(status_file), "--json"], env=env)
        assert result.exit_code == 0, result.output
        assert "worker" in result.output
        result = run(["status"], env=dict(env, SPARKPS_STATUS_FILE=str(status_file)))     # the default file
        assert result.exit_code == 0, result.output
    finally:
        proc.process.terminate()
        proc.finish(60)
