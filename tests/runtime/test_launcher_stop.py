"""The launcher's stop: SIGTERM to every role's process group, SIGKILL to what still runs after the grace."""
import io
import os
import signal
import stat
import sys
import threading
import time

from cluster import cluster_timeouts
from sparkps.runtime.launcher import LocalCluster

# Stands in for the python interpreter the launcher starts roles with: worker roles become a process that
# notes SIGTERM and keeps running (as a role stuck in native code would), every other role runs for real.
STUBBORN_PYTHON = """#!{python}
import os, signal, sys
if sys.argv[1:4] == ["-m", "sparkps.cli", "worker"]:
    record = os.environ["STUBBORN_RECORD"]
    signal.signal(signal.SIGTERM, lambda *_: open(record, "a").write("SIGTERM %f\\n" % __import__("time").monotonic()))
    open(record, "a").write("started\\n")
    while True:
        signal.pause()
os.execv(sys.executable, [sys.executable] + sys.argv[1:])
"""


def lines(path):
    return open(path).read().split("\n") if os.path.exists(path) else []


def test_a_role_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path):
    python = tmp_path / "stubborn-python"
    python.write_text(STUBBORN_PYTHON.format(python=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    record = tmp_path / "worker.record"
    out = io.StringIO()
    cluster = LocalCluster(1, 1, ["train", "--symbol", "unused.json", "--data", "unused.libsvm"], grace=1.0,
                           python=str(python), out=out, env=dict(os.environ, STUBBORN_RECORD=str(record)),
                           timeouts=cluster_timeouts(register=60, request=60, heartbeat_timeout=30))
    try:
        cluster.start()
        deadline, pause = time.monotonic() + 60, threading.Event()
        while "started" not in lines(record) and time.monotonic() < deadline:
            pause.wait(0.05)
        assert "started" in lines(record), out.getvalue()
        stop_began = time.monotonic()
        cluster.stop()
        stop_took = time.monotonic() - stop_began
    finally:
        for role in cluster.roles:  # whatever happened above, nothing outlives the test
            if role.process.poll() is None:
                role.process.kill()
                role.process.wait()
    codes = {role.name: role.process.returncode for role in cluster.roles}
    assert codes["worker 0"] == -9, codes                          # SIGKILL, after ...
    terms = [float(line.split()[1]) for line in lines(record) if line.startswith("SIGTERM")]
    assert len(terms) == 1 and terms[0] >= stop_began              # ... one SIGTERM it ignored
    assert stop_took >= 1.0                                        # and the grace period it was given
    assert codes["scheduler"] != -9 and codes["server 0"] != -9, codes   # the others stopped on SIGTERM


def test_sigterm_whose_exception_was_lost_during_a_role_start_still_stops_the_job(tmp_path):
    """Python can drop the KeyboardInterrupt a SIGTERM handler raises while a child is forked with a preexec
    function (seen as a launch that went on training after SIGTERM).  The handler notes the signal first, so the
    launcher's next check stops the job: 143, no role started after it, none left running."""
    out = io.StringIO()
    cluster = LocalCluster(1, 1, ["train", "--symbol", "unused.json", "--data", "unused.libsvm"], grace=1.0, out=out,
                           timeouts=cluster_timeouts(register=60, request=60, heartbeat_timeout=30))
    start = cluster._start

    def start_then_lose_sigterm(name, args, env):
        role = start(name, args, env)
        if name == "server 0":
            try:
                cluster._on_signal(signal.SIGTERM, None)      # what SIGTERM runs; its exception lost on the way
            except KeyboardInterrupt:
                pass
        return role

    cluster._start = start_then_lose_sigterm
    try:
        code = cluster.run()
    finally:
        for role in cluster.roles:
            if role.process.poll() is None:
                role.process.kill()
                role.process.wait()
    assert code == 143, out.getvalue()
    assert [role.name for role in cluster.roles] == ["scheduler", "server 0"], out.getvalue()
    assert all(role.process.poll() is not None for role in cluster.roles)
    assert "got SIGTERM; stopping every role" in out.getvalue()
