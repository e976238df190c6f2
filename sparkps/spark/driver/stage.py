"""Run the one barrier stage on a background thread while the driver watches the scheduler.

A DataFrame trains in ``mapInArrow(..., barrier=True)`` (FrameStage: classic and Spark Connect sessions, cancelled
by its tag on Connect, by its job group on classic), an RDD on a classic session in ``rdd.barrier().mapPartitions``
(RddStage, cancelled by its job group); both run the one task of :mod:`sparkps.spark.task.barrier_task`. The stage
runs apart, so any failure (a worker's exception, a node reported dead by the scheduler, a timeout, Ctrl-C on the
driver) cancels exactly this stage. ``run_watched`` always stops the scheduler before it returns or raises.
"""
import contextlib
import re
import threading
import time
import uuid

from sparkps.errors import ClusterError, PeerTimeout

POLL_SECONDS = 0.25
SERVER_EXIT_SECONDS = 10
FIT_ENV = "SPARKPS_FIT"      # a server process's environment names its fit (found and ended after a failure)


class StageFailed(ClusterError):
    """The barrier stage failed; the message names the failed role and its cause."""


class _StageThread(threading.Thread):
    """Runs ``action()`` (the stage's collect) on its own thread, keeping its result or its exception."""

    def __init__(self, action):
        super().__init__(name="sparkps-stage", daemon=True)
        self.action = action
        self.results, self.error = None, None

    def run(self):
        try:
            self.results = self.action()
        except BaseException as exc:  # reported by the driver's loop, which owns the clean-up
            self.error = exc


class RddStage:
    """``rdd.barrier().mapPartitions(task).collect()`` under its own job group (classic sessions): ``run()``
    blocks until the stage ends, ``cancel()`` (from another thread) cancels exactly this stage."""

    def __init__(self, sc, rdd, task, description="sparkps training"):
        self.sc, self.rdd, self.task, self.description = sc, rdd, task, description
        self.job_group = "sparkps-%s" % uuid.uuid4().hex[:12]

    def run(self):
        self.sc.setJobGroup(self.job_group, self.description, interruptOnCancel=True)
        return self.rdd.barrier().mapPartitions(self.task).collect()

    def cancel(self):
        with contextlib.suppress(Exception):     # a stopped SparkContext (the application removed, Ctrl-C)
            self.sc.cancelJobGroup(self.job_group)


class FrameStage:
    """``df.mapInArrow(task, OUTPUT_SCHEMA, barrier=True).collect()`` (classic and Spark Connect sessions alike),
    its results joined from their chunks (:mod:`sparkps.spark.common.result_chunks`). ``run()`` blocks until the
    stage ends; ``cancel()`` (from another thread) cancels exactly this stage: on a Connect session the action runs
    under a unique tag (``addTag``, ``interruptTag``); on a classic session under a job group of its own, as the
    RDD stage. A classic session's first tag makes it unserialisable (Spark 4.3: its ``threadUuid``), and MLlib
    models that keep their session in a training summary (LogisticRegressionModel) then fail to score in that
    session ("Task not serializable"), so classic sessions never get one."""

    def __init__(self, session, df, task, description="sparkps training"):
        from sparkps.spark.common.session import is_connect
        self.session, self.df, self.task, self.description = session, df, task, description
        self.tag = "sparkps-%s" % uuid.uuid4().hex[:12]
        self.connect = is_connect(session)

    def run(self):
        from sparkps.spark.common.result_chunks import OUTPUT_SCHEMA, join_results
        if not self.connect:
            self.session.sparkContext.setJobGroup(self.tag, self.description, interruptOnCancel=True)
            return join_results(self.df.mapInArrow(self.task, OUTPUT_SCHEMA, barrier=True).collect())
        self.session.addTag(self.tag)       # the tags of this thread's actions
        try:
            rows = self.df.mapInArrow(self.task, OUTPUT_SCHEMA, barrier=True).collect()
        finally:
            self.session.removeTag(self.tag)
        return join_results(rows)

    def cancel(self):
        with contextlib.suppress(Exception):     # the session may already be gone (Ctrl-C, a lost server)
            if self.connect:
                self.session.interruptTag(self.tag)
            else:
                self.session.sparkContext.cancelJobGroup(self.tag)


def run_watched(stage_action, scheduler, view=None, timeout=None, local=False, fit_id=None):
    """Run ``stage_action`` (an RddStage or FrameStage) on a background thread; return its results.

    Blocks until the stage finishes, a role fails, or ``timeout`` seconds pass (None: no limit).  Polls
    ``scheduler.status()`` every quarter second for progress (shown through ``view``) and errors; ``scheduler`` is
    None when it runs inside the stage (placement 'stage'): then Spark's own failure is the only news.  On any
    failure it cancels the stage, stops the scheduler (which tells every node to terminate) and raises
    StageFailed (PeerTimeout on timeout) naming the failed role and its cause; with ``local`` (every role on
    this machine: :func:`same_machine`) it first waits for the server processes to end, SIGKILLing any left
    after SERVER_EXIT_SECONDS (a stopped or hung one) and reaping them, so none outlives the failed fit (those of
    a stage-hosted scheduler are found by ``fit_id``, in their environment).
    """
    stage = _StageThread(stage_action.run)
    deadline = None if timeout is None else time.monotonic() + timeout
    failure, servers = None, []
    stage.start()
    try:
        while stage.is_alive():
            stage.join(POLL_SECONDS)
            status = _status(scheduler)
            if view is not None and status:
                view.update(status)
            failure = failure or _cluster_failure(status)
            if failure is None and deadline is not None and time.monotonic() > deadline:
                failure = PeerTimeout("training did not finish within %.0f s (timeout)" % timeout)
            if failure is not None:
                break
        if failure is None and stage.error is not None:
            failure = StageFailed(describe_stage_error(stage.error, _status(scheduler)))
    except BaseException as exc:   # KeyboardInterrupt on the driver: clean up, then let it through
        failure = exc
    finally:
        if failure is not None:
            servers = server_pids(_status(scheduler)) if local else []
            stage_action.cancel()
            stage.join(60)
        if scheduler is not None:
            scheduler.stop()
        if local and failure is not None:     # servers still starting never registered: find them by the
            if scheduler is not None:         # URI they were given, or by the fit's id in their environment
                servers = set(servers) | set(processes_naming(scheduler.uri))
            if fit_id:
                servers = set(servers) | set(processes_with_env(FIT_ENV, fit_id))
            servers = sorted(servers)
        reap(servers, SERVER_EXIT_SECONDS)
    if failure is not None:
        raise failure
    return stage.results


def same_machine(master):
    """True when every executor of ``master`` runs on this machine (``local[...]`` and ``local-cluster[...]``):
    the driver can then end any server process a failed fit left (a SIGSTOPped one ignores SIGTERM)."""
    from sparkps.spark.driver.checks import is_local
    return is_local(master) or str(master).startswith("local-cluster[")


def server_pids(status):
    """PIDs of the server nodes that registered with the scheduler (they report their pid and host)."""
    return [int(n["pid"]) for n in (status or {}).get("nodes", []) if n.get("role") == "server" and n.get("pid")]


def reap(pids, timeout):
    """Wait up to ``timeout`` s for the processes ``pids`` (on this machine) to end; SIGKILL those left.
    Only for processes this fit's own tasks started: the scheduler told them to stop already."""
    import os
    import signal
    deadline = time.monotonic() + timeout
    alive = [pid for pid in pids if _running(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _running(pid)]
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
    while alive and time.monotonic() < deadline + 5:
        alive = [pid for pid in alive if _running(pid)]
        time.sleep(0.05)


def processes_naming(text):
    """PIDs of this machine's processes whose command line contains ``text`` (a server is started with
    ``--scheduler URI``); empty where /proc cannot be read."""
    import os
    found = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    needle = text.encode()
    for pid in pids:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                if needle in handle.read():
                    found.append(pid)
        except OSError:
            continue
    return [pid for pid in found if pid != os.getpid()]


def processes_with_env(name, value):
    """PIDs of this machine's processes whose environment holds ``name=value`` (readable for this user's own
    processes); empty where /proc cannot be read."""
    import os
    needle = ("%s=%s" % (name, value)).encode()
    found = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            with open("/proc/%d/environ" % pid, "rb") as handle:
                if needle in handle.read().split(b"\0"):
                    found.append(pid)
        except OSError:
            continue
    return [pid for pid in found if pid != os.getpid()]


def _running(pid):
    """True while ``pid`` exists and is not a zombie (a reaped child disappears; an orphan's zombie waits
    for init, which counts as gone)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        import os
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True


def _status(scheduler):
    if scheduler is None:
        return {}
    try:
        return scheduler.status()
    except Exception:  # a status failure must not hide the stage's own outcome
        return {}


def _cluster_failure(status):
    """A StageFailed for errors the scheduler knows of, unless every worker already finished."""
    if not status or status.get("state") == "finished":
        return None
    errors = status.get("errors") or []
    if errors:
        return StageFailed(_error_text(errors[0]), node=errors[0].get("node"))
    if status.get("state") == "failed":
        return StageFailed("the parameter-server cluster failed (scheduler state 'failed')")
    return None


def _error_text(error):
    """The scheduler's error entry as one line that starts with the failed node's name."""
    node, message = error.get("node"), str(error.get("message", ""))
    if node and not message.startswith(str(node)):
        return "%s failed: %s" % (node, message)
    return message


_BARRIER_TASK = re.compile(r"barrier task ResultTask\(\d+, (\d+)\) finished unsuccessfully")
_EXECUTOR_LOST = re.compile(r"ExecutorLostFailure \(executor (\S+?) ([^)\n]*)\)(?: Reason: ([^\n]*))?")
_APP_REMOVED = re.compile(r"Master removed our application: \w+|Application has been killed\. Reason: [^\n]+")
_PY_ERROR = re.compile(r"^(?::\s*)?(?:[\w.]+\.)?(\w*(?:Error|Exception|Timeout|Died)):\s*(.+)$", re.M)


def describe_stage_error(exc, status=None):
    """The most useful line of a failed stage: a role's error from the scheduler, else the task's Python
    exception (``SomeError: message``) dug out of Spark's wrapped traceback, else Spark's own text."""
    text = str(exc)
    removed = _APP_REMOVED.search(text)
    if removed:         # the cluster manager ended the whole application: no role is at fault
        from sparkps.spark.driver.restarts import APP_ENDED
        return "%s: %s" % (APP_ENDED, removed.group(0))
    errors = (status or {}).get("errors") or []
    if errors and errors[0].get("node"):
        return _error_text(errors[0])
    task = _BARRIER_TASK.search(text)      # a barrier task's partition is its worker's rank
    lost = _EXECUTOR_LOST.search(text)
    if lost:
        reason = "; ".join(part.strip() for part in (lost.group(2), lost.group(3)) if part and part.strip())
        return "executor %s was lost%s (%s)" % (lost.group(1), " with worker %s" % task.group(1) if task else "",
                                                reason or "no reason given")
    ours = re.findall(r"sparkps ((?:worker|server) \d+) failed: (.+)", text)
    if ours:
        return "%s failed: %s" % (ours[-1][0], ours[-1][1].strip())
    matches = list(_PY_ERROR.finditer(text))
    found = [m for m in matches if not m.group(1).startswith(("Py4J", "Spark"))] or \
        [m for m in matches if m.group(1).startswith("Spark")]
    role = "worker %s" % task.group(1) if task else "a Spark task"
    if found:
        last = found[-1]
        return "%s failed: %s: %s" % (role, last.group(1), last.group(2).strip())
    first_line = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return "%s failed: %s" % (role, first_line[:500])
