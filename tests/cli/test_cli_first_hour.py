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
        proc.finish(180)


def test_a_bad_label_is_named_by_its_file_line_not_its_row_in_a_shard(tmp_path):
    data = tmp_path / "labels.libsvm"
    data.write_text("1 1:1\n0 2:1\n1 1:1\n0 2:1\n7 1:1\n1 2:1\n")      # line 5: worker 0's row 2 of 2 workers
    net = tmp_path / "net.json"
    assert run(["symbol", "mlp", "--layers", "2,4,2", "-o", str(net)]).exit_code == 0
    proc = Sparkps(["launch", "-w", "2", "--status-file", str(tmp_path / "st.json")] + FAST_CLUSTER +
                   ["--", "train", "--symbol", str(net), "--data", str(data), "--num-features", "2", "--epochs", "1",
                    "--batch-size", "2"])
    assert proc.finish(120) == 1
    assert ("the first failure: worker 0 exit code 2: sparkps worker train: error: %s:5: label 'softmax_label' "
            "holds 7, but the network predicts 2 classes" % data) in proc.output


def test_with_file_line_maps_a_shard_row_to_its_line_past_a_csv_header(tmp_path):
    from sparkps.errors import DataError
    from sparkps.io.readers import with_file_line
    data = tmp_path / "d.csv"
    data.write_text("label,x\n1,0\n0,1\n\n3,1\n")
    exc = with_file_line(DataError("label 'y' holds 3 at row 1, but"), str(data), 0, 2, csv=True)
    assert str(exc) == "%s:5: label 'y' holds 3, but" % data


def test_status_after_the_launcher_ended_says_so_at_once(tmp_path, monkeypatch):
    import subprocess
    import sys

    import sparkps.scheduler
    asked = []
    monkeypatch.setattr(sparkps.scheduler, "fetch_status", lambda *args, **kw: asked.append(args) or {})
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    status_file = tmp_path / "launch.json"
    status_file.write_text(json.dumps({"scheduler": "tcp://127.0.0.1:9", "secret": "s", "curve": False,
                                       "pid": int(ended.stdout)}))
    result = run(["status", "--status-file", str(status_file), "--timeout", "10"])
    assert result.exit_code == 2 and "has ended: its launcher (pid %d) is gone" % int(ended.stdout) in result.output
    assert asked == []             # no scheduler was asked (nor waited for until --timeout)
