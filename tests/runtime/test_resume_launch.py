"""`sparkps launch` with a checkpoint folder: Ctrl-C (SIGINT to the launcher's process group) then
`launch --resume` ends within 1 % of a clean run's accuracy; a SIGKILLed worker restarts the cluster from the
newest checkpoint; `--resume` without a checkpoint is one clear error."""
import os
import re
import signal
import threading
import time

import pytest

from launch_helpers import FAST_CLUSTER, Sparkps, digits_accuracy, recorded_pids, write_digits
from sparkps.comm.manifest import read_manifest
from sparkps.runtime.resume import checkpoints, latest_checkpoint

pytestmark = pytest.mark.slow
EPOCHS = 6


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    directory = tmp_path_factory.mktemp("resume-launch")
    train, test = write_digits(directory)
    net = directory / "net.json"
    proc = Sparkps(["symbol", "mlp", "--layers", "64,32,10", "-o", str(net)])
    assert proc.finish(60) == 0, proc.output
    return {"train": train, "test": test, "net": str(net)}


def wait_until_stopped(pid, timeout=20.0):
    """Block until process ``pid`` is stopped (state T in /proc: a SIGSTOP is delivered asynchronously)."""
    deadline, pause = time.monotonic() + timeout, threading.Event()
    while True:
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        if state in ("T", "t"):
            return
        assert time.monotonic() < deadline, "process %d is still %s %g s after SIGSTOP" % (pid, state, timeout)
        pause.wait(0.01)


def launch(job, prefix, checkpoints=None, extra=(), env=None, epochs=EPOCHS):
    args = ["launch", "-s", "1", "-w", "2"] + FAST_CLUSTER
    if checkpoints:
        args += ["--checkpoint-dir", str(checkpoints), "--checkpoint-steps", "5"]
    args += list(extra) + ["--", "train", "--symbol", job["net"], "--data", job["train"], "--num-features", "64",
                           "--batch-size", "32", "--epochs", str(epochs), "--lr", "0.1", "--momentum", "0.9",
                           "--seed", "1", "--save", str(prefix)]
    return Sparkps(args, env=env, new_session=True)


@pytest.fixture(scope="module")
def clean_accuracy(job, tmp_path_factory):
    prefix = tmp_path_factory.mktemp("clean") / "digits"
    proc = launch(job, prefix)
    assert proc.finish(180) == 0, proc.output
    return digits_accuracy(str(prefix), EPOCHS, job["test"])


def wait_for_checkpoint(folder, step, proc, timeout=120):
    deadline, pause = time.monotonic() + timeout, threading.Event()
    while time.monotonic() < deadline and proc.process.poll() is None:
        point = latest_checkpoint(str(folder))
        if point is not None and point.step >= step:
            return point
        pause.wait(0.05)
    raise AssertionError("no checkpoint at step >= %d in %s:\n%s" % (step, folder, proc.output))


def test_launch_resume_after_ctrl_c_ends_as_a_clean_run(job, clean_accuracy, tmp_path):
    prefix, folder = tmp_path / "digits", tmp_path / "checkpoints"
    proc = launch(job, prefix, folder)
    try:
        wait_for_checkpoint(folder, 40, proc)              # epoch 2 of 6 (23 steps an epoch)
        os.killpg(proc.process.pid, signal.SIGINT)         # Ctrl-C: the launcher's process group
        assert proc.finish(60) == 130, proc.output
    finally:
        proc.kill()
    assert "stopping every role" in proc.output
    assert not os.path.exists(str(prefix) + "-%04d.params" % EPOCHS)
    resumed = launch(job, prefix, folder, ["--resume"])
    try:
        assert resumed.finish(180) == 0, resumed.output
    finally:
        resumed.kill()
    assert "sparkps launch: resuming from %s" % folder in resumed.output
    assert abs(digits_accuracy(str(prefix), EPOCHS, job["test"]) - clean_accuracy) <= 0.01


def test_a_sigkilled_worker_restarts_the_launched_cluster_from_the_checkpoint(job, clean_accuracy, tmp_path):
    prefix, folder, pids_file = tmp_path / "digits", tmp_path / "checkpoints", str(tmp_path / "pids")
    proc = launch(job, prefix, folder, env={"SPARKPS_LAUNCH_PIDS_FILE": pids_file})
    try:
        wait_for_checkpoint(folder, 30, proc)
        os.kill(recorded_pids(pids_file)["worker 1"], signal.SIGKILL)
        assert proc.finish(180) == 0, proc.output
    finally:
        proc.kill()
    assert "sparkps launch: restart 1 of 2 after worker 1 killed by SIGKILL; resuming from %s" % folder \
        in proc.output, proc.output
    assert abs(digits_accuracy(str(prefix), EPOCHS, job["test"]) - clean_accuracy) <= 0.01


def test_launch_resume_without_a_checkpoint_is_one_clear_error(job, tmp_path):
    proc = launch(job, tmp_path / "digits", tmp_path / "empty", ["--resume"])
    assert proc.finish(60) == 2, proc.output
    assert "sparkps launch: error: --resume: no complete checkpoint in" in proc.output


def test_after_max_restarts_the_launcher_gives_up_naming_the_role(job, tmp_path):
    prefix, folder, pids_file = tmp_path / "digits", tmp_path / "checkpoints", str(tmp_path / "pids")
    proc = launch(job, prefix, folder, ["--max-restarts", "1"], env={"SPARKPS_LAUNCH_PIDS_FILE": pids_file},
                  epochs=100000)
    try:
        wait_for_checkpoint(folder, 10, proc)
        first = recorded_pids(pids_file)["worker 1"]
        os.kill(first, signal.SIGKILL)
        proc.wait_for_line(r"^sparkps launch: restart 1 of 1 after worker 1 killed by SIGKILL", timeout=60)
        deadline, pause = time.monotonic() + 60, threading.Event()
        while recorded_pids(pids_file).get("worker 1") == first and time.monotonic() < deadline:
            pause.wait(0.05)
        os.kill(recorded_pids(pids_file)["worker 1"], signal.SIGKILL)     # the restarted worker 1 dies too
        assert proc.finish(60) == 1, proc.output
    finally:
        proc.kill()
    assert "sparkps launch: worker 1 killed by SIGKILL again after 1 restart(s) (--max-restarts 1); giving up" \
        in proc.output, proc.output


def test_a_restart_passes_over_a_damaged_newest_checkpoint_for_the_one_before_it(job, tmp_path):
    prefix, folder, pids_file = tmp_path / "digits", tmp_path / "checkpoints", str(tmp_path / "pids")
    proc = launch(job, prefix, folder, env={"SPARKPS_LAUNCH_PIDS_FILE": pids_file})
    try:
        wait_for_checkpoint(folder, 30, proc)
        pids = recorded_pids(pids_file)
        os.kill(pids["worker 0"], signal.SIGSTOP)        # worker 0 writes the manifests: no new checkpoint now
        wait_until_stopped(pids["worker 0"])              # a save in flight stays without manifest (incomplete)
        found = checkpoints(str(folder))
        newest, older = found[-1].path, found[-2].path
        piece = os.path.join(newest, read_manifest(newest)["keys"]["0"]["pieces"][0]["file"])
        with open(piece, "r+b") as f:                      # one bit flipped in the first weight piece
            f.seek(200)
            byte = f.read(1)
            f.seek(200)
            f.write(bytes([byte[0] ^ 1]))
        os.kill(pids["worker 1"], signal.SIGKILL)
        assert proc.finish(180) == 0, proc.output
    finally:
        proc.kill()
    assert "skipping damaged checkpoint %s: piece %s" % (newest, piece) in proc.output, proc.output
    # the stopped worker 0 or the killed worker 1, whichever the scheduler notices first
    assert re.search(r"restart 1 of 2 after worker [01]\b.*; resuming from %s \(" % re.escape(older), proc.output), \
        proc.output
    assert os.path.exists(str(prefix) + "-%04d.params" % EPOCHS)
