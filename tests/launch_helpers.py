"""Run `sparkps` as a real subprocess and follow its output."""
import os
import queue
import re
import subprocess
import sys
import threading
import time

import numpy as np

from cluster import CLUSTER_TIMEOUTS

# The suite's one timeouts setting (cluster.CLUSTER_TIMEOUTS) as `sparkps launch` options.
FAST_CLUSTER = ["--heartbeat-interval", f"{CLUSTER_TIMEOUTS['heartbeat_interval']:g}",
                "--heartbeat-timeout", f"{CLUSTER_TIMEOUTS['heartbeat_timeout']:g}", "--register-timeout", "30",
                "--grace", "3"]


def write_digits(tmp_path):
    """The digits split 80/20 as LibSVM files; returns (train path, test path)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    data = load_digits()
    X_train, X_test, y_train, y_test = train_test_split(data.data / 16.0, data.target, test_size=0.2,
                                                        random_state=0, stratify=data.target)
    paths = []
    for name, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
        path = tmp_path / ("digits-%s.libsvm" % name)
        with open(path, "w") as handle:
            for row, label in zip(X, y):
                features = " ".join("%d:%.6g" % (i + 1, v) for i, v in enumerate(row) if v)
                handle.write("%d %s\n" % (label, features))
        paths.append(str(path))
    return paths


# `python -m sparkps.cli`, with Ctrl-C (SIGINT) handled as in a terminal even where the suite itself runs in the
# background of a non-interactive shell, which starts its commands with SIGINT ignored (inherited over exec).
CLI = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
       "runpy.run_module('sparkps.cli', run_name='__main__', alter_sys=True)")


class Sparkps:
    """`python -m sparkps.cli ARGS` with its merged output collected line by line."""

    def __init__(self, args, env=None, cwd=None, new_session=False):
        child_env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
        child_env.update(env or {})
        self.process = subprocess.Popen([sys.executable, "-c", CLI] + list(args), env=child_env,
                                        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=new_session)
        self.lines, self._queue = [], queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.process.stdout:
            self._queue.put(raw.decode("utf-8", "replace").rstrip("\n"))
        self._queue.put(None)

    def wait_for_line(self, pattern, timeout=60):
        """Block until a line matches ``pattern`` (returns it); AssertionError after ``timeout`` s or EOF."""
        regex, deadline = re.compile(pattern), time.monotonic() + timeout
        for line in self.lines:
            if regex.search(line):
                return line
        while True:
            try:
                line = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line matching {pattern!r} within {timeout:g} s:\n{self.output}") from None
            if line is None:
                raise AssertionError("output ended without %r:\n%s" % (pattern, self.output))
            self.lines.append(line)
            if regex.search(line):
                return line

    def finish(self, timeout=120):
        """Wait for the exit code (kills the process after ``timeout`` s and fails)."""
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"sparkps did not exit within {timeout:g} s:\n{self.output}") from None
        self._reader.join(10)
        while True:
            line = self._queue.get_nowait() if not self._queue.empty() else None
            if line is None:
                break
            self.lines.append(line)
        return code

    @property
    def output(self):
        return "\n".join(self.lines)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def recorded_pids(path):
    """{role name: pid} from the launcher's SPARKPS_LAUNCH_PIDS_FILE."""
    pids = {}
    if os.path.exists(path):
        for line in open(path):
            name, _, pid = line.strip().rpartition(" ")
            pids[name] = int(pid)
    return pids


def alive(pid):
    """True while ``pid`` runs (a zombie, exited but not yet reaped by its parent, counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open("/proc/%d/stat" % pid) as handle:
            if handle.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
    except (OSError, IndexError):
        pass
    try:  # a zombie child of ours still answers kill(0): reap it if it is ours
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        return True


def digits_accuracy(prefix, epoch, test_path):
    from sparkps.io.readers import read_libsvm
    from sparkps.train.feedforward import FeedForward
    model = FeedForward.load(prefix, epoch)
    X, y = read_libsvm(test_path, num_features=64)
    return float(model.score(X, y))


def lines_matching(output, pattern):
    return [line for line in output.splitlines() if re.search(pattern, line)]


__all__ = ["FAST_CLUSTER", "Sparkps", "alive", "digits_accuracy", "np", "recorded_pids", "write_digits"]
