"""Process supervision: spawn a child, watch it, stop it with a timeout, never leave it behind.

One home for what the local launcher (every role of a job), the Spark task (the server beside a worker) and
``spawn_server`` need:

- :func:`spawn` starts a child (in its own process group when asked, and on Linux with SIGTERM sent to it
  should this process die first), optionally relaying its output line by line with a prefix;
- :func:`importing_env` gives a child of the same Python this process's ``sys.path`` (a Spark task's holds the
  code shipped with ``--py-files``, ``spark.submit.pyFiles``, ``addPyFile`` and archives, which the executor's
  environment does not name), so the child imports what this process imports;
- :class:`ExitWatch` calls back once if a child exits while the watch is open;
- :meth:`Child.stop` and :func:`stop_all` send SIGTERM, wait up to a grace period, then SIGKILL, and reap.

>>> child = spawn("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"])
>>> child.stop(grace=5)
>>> describe_exit(child.returncode)
'killed by SIGTERM'
"""
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time

_PR_SET_PDEATHSIG = 1


# Run by the child itself (after exec, before its program): ask for SIGTERM when the parent dies, give up if the
# parent already died, restore the signals Python ignores, then exec the program. No preexec function: Python code,
# and the fork handlers of this process's libraries (gRPC's, OpenMP's...), would run in a child forked from a
# threaded process, where they can wait forever on a lock another thread held (and Popen with them).
_DIE_WITH_PARENT = (
    "import ctypes, os, signal, sys\n"
    "ctypes.CDLL(None, use_errno=True).prctl(%d, signal.SIGTERM)\n"
    "if os.getppid() != int(sys.argv[1]):\n"
    "    sys.exit(143)\n"
    "for name in ('SIGPIPE', 'SIGXFSZ'):\n"
    "    signal.signal(getattr(signal, name), signal.SIG_DFL)\n"
    "os.execvp(sys.argv[2], sys.argv[2:])\n" % _PR_SET_PDEATHSIG)


def describe_exit(code):
    """'exit code 1', 'killed by SIGKILL' or 'still running' for a return code (None: running)."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return "killed by %s" % signal.Signals(-code).name
        except ValueError:
            return "killed by signal %d" % -code
    return "exit code %d" % code


class Child:
    """A supervised child process; Popen's ``pid``, ``poll``, ``wait``, ``returncode``, ``stdout``/``stderr``,
    ``terminate`` and ``kill`` work as on the Popen it wraps.

    With ``relay`` (a text stream), the child's merged output is copied there line by line as ``[name] line``
    and its last line kept in ``last_line``. With ``own_group``, signals go to the child's process group.
    """

    def __init__(self, name, process, relay=None, own_group=False):
        self.name, self.process, self.own_group = name, process, own_group
        self.last_line = ""
        self._relay = None
        if relay is not None:
            self._relay = threading.Thread(target=self._forward, args=(relay,), daemon=True,
                                           name="sparkps-relay-%s" % name)
            self._relay.start()

    def __getattr__(self, name):  # the Popen interface (pid, poll, wait, returncode, stderr, ...)
        return getattr(self.process, name)

    def _forward(self, out):
        for raw in self.process.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self.last_line = line
                out.write("[%s] %s\n" % (self.name, line))
                out.flush()
        self.process.stdout.close()

    @property
    def running(self):
        """True while the child has not exited."""
        return self.process.poll() is None

    def signal(self, signum):
        """Send ``signum`` to the child (its process group with ``own_group``); a gone child is ignored."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if self.own_group:
                os.killpg(self.process.pid, signum)
            else:
                self.process.send_signal(signum)

    def wait_exit(self, timeout):
        """Wait up to ``timeout`` s for the child to exit; its return code, or None if it still runs."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.process.wait(max(0.0, timeout))
        return None

    def stop(self, grace=5.0):
        """SIGTERM, then SIGKILL after ``grace`` s; returns once the child is reaped (blocks at most about
        ``2 * grace`` s plus the time the kernel takes to reap a killed process)."""
        stop_all([self], grace)

    def join_output(self, timeout):
        """Wait up to ``timeout`` s for the relay of the child's output to finish."""
        if self._relay is not None:
            self._relay.join(timeout)


def importing_env(env=None):
    """A copy of ``env`` (default ``os.environ``) whose PYTHONPATH is this process's ``sys.path``: every entry that
    exists, as an absolute path (``''``, the working folder, included), in order, then the entries PYTHONPATH
    already held. A child of ``sys.executable`` started with it imports the modules this process imports, from
    the same places: a Spark executor puts the zips of ``--py-files`` on the task's ``sys.path`` only."""
    env = dict(os.environ if env is None else env)
    entries = [os.path.abspath(entry or os.getcwd()) for entry in sys.path]
    entries += [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    seen, path = set(), []
    for entry in entries:
        if entry not in seen and os.path.exists(entry):
            seen.add(entry)
            path.append(entry)
    env["PYTHONPATH"] = os.pathsep.join(path)
    return env


def spawn(name, argv, env=None, relay=None, own_group=False, die_with_parent=True, stderr=None):
    """Start ``argv`` as a supervised :class:`Child`; never blocks. stdin is /dev/null.

    ``relay``: a text stream that receives the child's stdout and stderr line by line (else they are
    inherited, or stderr goes to ``stderr``). ``own_group``: a new session, so signals reach its children.
    """
    if die_with_parent and sys.platform.startswith("linux"):
        argv = [sys.executable, "-S", "-c", _DIE_WITH_PARENT, str(os.getpid())] + list(argv)
    if relay is not None:
        stdout, stderr = subprocess.PIPE, subprocess.STDOUT
    else:
        stdout = None
    process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr,
                               start_new_session=own_group)
    return Child(name, process, relay, own_group)


def stop_all(children, grace=5.0):
    """Stop every child still running: SIGTERM to all, one shared ``grace`` period, SIGKILL to the rest;
    reaps every child and finishes relaying its output."""
    live = [c for c in children if c.poll() is None]
    for child in live:
        child.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in live:
        child.wait_exit(deadline - time.monotonic())
    for child in children:
        if child.poll() is None:
            child.signal(signal.SIGKILL)
        child.wait()
        if isinstance(child, Child):
            child.join_output(grace)


class ExitWatch:
    """While open, call ``on_exit(code)`` (once, from a watch thread) if ``process`` exits.

    ``process`` is anything with ``poll()``; None watches nothing. Closing waits at most 10 s for the thread.

    >>> # with ExitWatch(server, lambda code: report_abort(...)):
    >>> #     register_with_the_scheduler()
    """

    def __init__(self, process, on_exit, interval=0.1):
        self._process, self._on_exit, self._interval = process, on_exit, interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="sparkps-exit-watch", daemon=True)

    def __enter__(self):
        if self._process is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _watch(self):
        while not self._done.wait(self._interval):
            code = self._process.poll()
            if code is not None:
                self._on_exit(code)
                return
