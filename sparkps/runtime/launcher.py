"""The local launcher: a scheduler, S servers and W workers as subprocesses on 127.0.0.1.

Each role runs in its own process group; its output is relayed line by line with a ``[role]`` prefix.
When a role fails the others are expected to stop on their own (the scheduler notices and tells them);
whatever still runs after the heartbeat timeout plus a grace period is sent SIGTERM, then SIGKILL.
Ctrl-C and SIGTERM stop every role the same way.  No process is left behind.
"""
import json
import os
import re
import signal
import sys
import tempfile
import threading
import time

from sparkps.comm.message import generate_secret
from sparkps.comm.timeouts import Timeouts
from sparkps.errors import ClusterError, ConfigError
from sparkps.runtime.supervisor import describe_exit, spawn, stop_all

__all__ = ["LocalCluster", "describe_exit"]

class LocalCluster:
    """Runs one job locally; ``run()`` returns the exit code (0: every role exited 0).

    >>> LocalCluster(2, 2, ['train', '--symbol', 'net.json', '--data', 'train.libsvm']).run()  # doctest: +SKIP
    """

    def __init__(self, num_servers, num_workers, train_args, kvstore="dist_sync", curve=False, timeouts=None,
                 grace=5.0, python=sys.executable, out=None, env=None):
        self.num_servers, self.num_workers = num_servers, num_workers
        self.train_args, self.kvstore, self.curve = list(train_args), kvstore, curve
        self.timeouts = timeouts or Timeouts()
        self.grace, self.python = grace, python
        self.out = out or sys.stderr
        self.env = dict(os.environ if env is None else env)
        self.roles = []
        self.pids_file = None
        self.status_file = None     # where start() writes the scheduler address and the secret (mode 0600)
        self.first_failure = None
        self.checkpoint_dir = self.checkpoint_steps = self.resume_from = None
        self.max_restarts, self.restarts = 0, []
        self.stopped = set()   # id() of the roles this launcher ended itself (stop)
        self.signalled = None  # 'got SIGTERM' / 'interrupted' once SIGTERM / Ctrl-C arrived (see _on_signal)

    def set_checkpoints(self, folder, every_steps=None, resume=False, max_restarts=2):
        """Checkpoint into ``folder`` (worker 0 has the servers save at each epoch end and every ``every_steps``
        steps); with ``resume`` start from its newest complete checkpoint (ConfigError when there is none). A
        role that dies then restarts the whole cluster from the newest checkpoint, up to ``max_restarts`` times
        (:mod:`sparkps.runtime.resume`)."""
        from sparkps.runtime.resume import check_resumable, latest_checkpoint
        if not folder:
            raise ConfigError("--resume needs --checkpoint-dir (the folder of the stopped job's checkpoints)")
        self.checkpoint_dir, self.checkpoint_steps = folder, every_steps
        self.max_restarts = int(max_restarts)
        if resume:
            check_resumable(self.kvstore)
            point = latest_checkpoint(folder)
            if point is None:
                raise ConfigError("--resume: no complete checkpoint in %s to resume from" % folder)
            self.resume_from = point.path
            self.out.write("sparkps launch: resuming from %s (worker 0 at step %d, epoch %d)\n"
                           % (point.path, point.step, point.epoch + 1))

    def _checkpoint_args(self):
        args = ["--checkpoint-dir", self.checkpoint_dir] if self.checkpoint_dir else []
        if self.checkpoint_steps:
            args += ["--checkpoint-steps", str(self.checkpoint_steps)]
        return args + (["--resume-from", self.resume_from] if self.resume_from else [])

    def _timeout_args(self):
        t = self.timeouts
        return ["--register-timeout", str(t.register), "--request-timeout", str(t.request),
                "--heartbeat-interval", str(t.heartbeat_interval), "--heartbeat-timeout", str(t.heartbeat_timeout)]

    def _role_env(self, role, secret, uri=None):
        env = dict(self.env, SPARKPS_ROLE=role, SPARKPS_SECRET=secret, SPARKPS_NUM_SERVER=str(self.num_servers),
                   SPARKPS_NUM_WORKER=str(self.num_workers), PYTHONUNBUFFERED="1",
                   SPARKPS_CURVE="1" if self.curve else "0")
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        if uri:
            env["SPARKPS_SCHEDULER_URI"] = uri
        return env

    def _start(self, name, args, env):
        role = spawn(name, [self.python, "-m", "sparkps.cli"] + args, env, relay=self.out, own_group=True)
        self.roles.append(role)
        if self.pids_file:
            with open(self.pids_file, "a", encoding="utf-8") as handle:
                handle.write("%s %d\n" % (name, role.pid))
        return role

    def _start_scheduler(self, secret, workdir):
        uri_file = os.path.join(workdir, "scheduler.uri")
        sched = self._start("scheduler", ["scheduler", "--uri-file", uri_file] + self._timeout_args(),
                            self._role_env("scheduler", secret))
        deadline = time.monotonic() + self.timeouts.register
        pause = threading.Event()
        while not os.path.exists(uri_file):
            if sched.process.poll() is not None:
                raise ClusterError("the scheduler exited (%s) before binding: %s"
                                   % (describe_exit(sched.process.returncode), sched.last_line), node="scheduler")
            if time.monotonic() > deadline:
                raise ClusterError("the scheduler did not bind within %g s" % self.timeouts.register, node="scheduler")
            self._check_signal()
            pause.wait(0.02)
        with open(uri_file, encoding="utf-8") as handle:
            return handle.read().strip()

    def start(self):
        """Start every role; returns the scheduler URI.  Blocks until the scheduler is bound."""
        secret = generate_secret()
        with tempfile.TemporaryDirectory(prefix="sparkps-launch-") as workdir:
            uri = self._start_scheduler(secret, workdir)
        self._write_status_file(uri, secret)
        for rank in range(self.num_servers):
            self._check_signal()
            self._start("server %d" % rank, ["server", "--rank", str(rank)] + self._timeout_args(),
                        self._role_env("server", secret, uri))
        for rank in range(self.num_workers):
            self._check_signal()
            args = ["worker", *self.train_args[:1], "--rank", str(rank), "--kvstore", self.kvstore]
            self._start("worker %d" % rank, args + self._timeout_args() + self.train_args[1:] + self._checkpoint_args(),
                        self._role_env("worker", secret, uri))
        return uri

    def _write_status_file(self, uri, secret):
        """Write {scheduler, secret, curve, pid} to ``status_file`` (readable by this user only) and say where, so
        that ``sparkps status --status-file FILE`` reaches the job."""
        if not self.status_file:
            return
        folder = os.path.dirname(os.path.abspath(self.status_file))
        os.makedirs(folder, exist_ok=True)
        partial = self.status_file + ".partial"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"scheduler": uri, "secret": secret, "curve": bool(self.curve), "pid": os.getpid()}, handle)
        os.chmod(partial, 0o600)
        os.replace(partial, self.status_file)
        self.out.write("sparkps launch: scheduler %s; `sparkps status --status-file %s` shows the job\n"
                       % (uri, self.status_file))

    def _wait(self):
        """Wait for every role; after the first failure give the rest heartbeat timeout + grace to stop."""
        pause, failed_at = threading.Event(), None
        while True:
            codes = [r.process.poll() for r in self.roles]
            if all(code is not None for code in codes):
                return
            self._check_signal()
            if failed_at is None and any(code not in (None, 0) for code in codes):
                failed_at = time.monotonic()
                self.first_failure = next(r for r, code in zip(self.roles, codes) if code not in (None, 0))
            if failed_at is None and codes[0] is not None:  # the scheduler ended: the rest must follow
                failed_at = time.monotonic()
            if failed_at is not None and time.monotonic() - failed_at > self.timeouts.heartbeat_timeout + self.grace:
                self.out.write("sparkps launch: roles still running after a failure; stopping them\n")
                return
            pause.wait(0.05)

    def stop(self):
        """SIGTERM every role's process group, SIGKILL after ``grace`` seconds; reap them all."""
        self.stopped.update(id(r) for r in self.roles if r.process.poll() is None)   # ended by us, not by a fault
        stop_all(self.roles, self.grace)

    def report(self):
        """Exit code: 0 if every role exited 0; else print which role failed first and why, return 1."""
        failed = [r for r in self.roles if r.process.returncode != 0]
        if not failed:
            self.out.write("sparkps launch: job finished (%d servers, %d workers)\n"
                           % (self.num_servers, self.num_workers))
            return 0
        cause = first_cause(self.roles, self.first_failure)
        failed.sort(key=lambda r: r is not cause)  # the first to fail is the likely cause
        if cause is not None:
            self.out.write("sparkps launch: the first failure: %s\n" % cause_text(self.roles, cause, self.stopped))
        for r in failed:
            why = describe_exit(r.process.returncode)
            last = f": {r.last_line}" if r.last_line and r.process.returncode > 0 else ""
            self.out.write(f"sparkps launch: {r.name} (pid {r.pid}) failed: {why}{last}\n")
        return 1

    def run(self):
        """Start, wait, stop and report; returns the exit code.  Ctrl-C / SIGTERM stop every role (130/143)."""
        previous = signal.signal(signal.SIGTERM, self._on_signal) if _main_thread() else None
        # Ctrl-C the same way, unless SIGINT is ignored (a job started in the background) or handled by the caller
        catch_int = _main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if catch_int:
            signal.signal(signal.SIGINT, self._on_signal)
        try:
            self.start()
            self._wait()
            while self._restart():
                self.start()
                self._wait()
        except KeyboardInterrupt as exc:
            self.out.write("sparkps launch: %s; stopping every role\n" % (exc.args[0] if exc.args else "interrupted"))
            self.stop()
            return 143 if exc.args and "SIGTERM" in exc.args[0] else 130
        except ClusterError as exc:
            self.out.write("sparkps launch: %s\n" % exc)
            self.stop()
            self.report()
            return 1
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            if catch_int:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            self.stop()
        return self.report()


    def _on_signal(self, signum, frame):
        """SIGTERM or Ctrl-C: remember it, then raise KeyboardInterrupt.  Python can lose an exception raised by a
        signal handler that runs while a child is forked with a preexec function, so the loops of ``start`` and
        ``_wait`` also check ``signalled`` (:meth:`_check_signal`)."""
        self.signalled = "got SIGTERM" if signum == signal.SIGTERM else "interrupted"
        raise KeyboardInterrupt(self.signalled)

    def _check_signal(self):
        """Raise KeyboardInterrupt when SIGTERM or Ctrl-C arrived (its handler's own exception may have been lost)."""
        if self.signalled:
            raise KeyboardInterrupt(self.signalled)

    def _restart(self):
        """After a failed attempt: stop what is left and return True when the job restarts from its newest
        checkpoint (a checkpoint folder, restarts left, and a failure a restart can get past)."""
        from sparkps.runtime.resume import RESUMABLE, latest_checkpoint, transient
        codes = [r.process.poll() for r in self.roles]
        if not self.checkpoint_dir or all(code == 0 for code in codes):
            return False
        if self.kvstore not in RESUMABLE:   # a kvstore type that keeps no weights on the servers
            return False
        cause = first_cause(self.roles, self.first_failure)
        line = cause_text(self.roles, cause, self.stopped) if cause is not None else "a role failed"
        if not transient(line):
            return False
        if len(self.restarts) >= self.max_restarts:
            if self.restarts:
                self.out.write("sparkps launch: %s again after %d restart(s) (--max-restarts %d); giving up\n"
                               % (line, len(self.restarts), self.max_restarts))
            return False
        self.stop()
        point = latest_checkpoint(self.checkpoint_dir)
        self.restarts.append({"cause": line, "checkpoint": point.path if point else None})
        where = ("%s (worker 0 at step %d)" % (point.path, point.step)) if point else "the start (no checkpoint yet)"
        self.out.write("sparkps launch: restart %d of %d after %s; resuming from %s\n"
                       % (len(self.restarts), self.max_restarts, line, where))
        self.resume_from = point.path if point else None
        self.roles, self.first_failure, self.stopped = [], None, set()
        return True


def first_cause(roles, first_exited):
    """The role whose failure ended the job: the node the scheduler's last line names (``worker 1 (node 4)
    failed: ...``, ``... stopped sending heartbeats``) when it names one, else the first role seen exiting
    with an error (several roles can exit within one poll, the scheduler listed first)."""
    scheduler = next((r for r in roles if r.name == "scheduler"), None)
    line = scheduler.last_line if scheduler is not None else ""
    named = re.search(r"\b((?:worker|server) \d+)(?: \(node \d+\))? (?:failed|stopped)", line or "")
    if named:
        for r in roles:
            if r.name == named.group(1):
                return r
    return first_exited


def cause_text(roles, cause, stopped=()):
    """What the first failure was: the scheduler's words when it blamed ``cause`` for missed heartbeats and the
    role did not end by itself (still running, or ended by the launcher: ``id(role)`` in ``stopped``; its own
    SIGKILL of a stopped or hung role is not the cause); else :func:`cause_line`."""
    scheduler = next((r for r in roles if r.name == "scheduler"), None)
    line = scheduler.last_line if scheduler is not None else ""
    missed = re.search(r"\b(%s)(?: \(node \d+\))? stopped sending heartbeats.*$" % re.escape(cause.name), line or "")
    code = cause.process.returncode
    if missed and (code is None or id(cause) in stopped):
        return missed.group(0)
    return cause_line(cause)


def cause_line(role):
    """The failed role's name and its last output line (its own error message) as one line."""
    if role.process.returncode is None:
        return role.name
    why = describe_exit(role.process.returncode)
    last = role.last_line if role.last_line and role.process.returncode > 0 else ""
    return "%s %s%s" % (role.name, why, (": " + last) if last else "")


def _main_thread():
    return threading.current_thread() is threading.main_thread()

