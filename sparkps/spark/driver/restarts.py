"""The driver's side of resuming after a failure: which failures a fit restarts from, what a restart lost, and
how restarts show in the progress and the history.

``SparkTrainer.fit`` runs the barrier stage; when a worker task or a server process dies (the stage fails
with StageFailed) and the fit has a checkpoint folder, it starts a new scheduler and stage that load the
newest complete checkpoint (:func:`sparkps.runtime.resume.latest_checkpoint`), up to ``max_restarts`` times.
Errors of the data or the settings (DataError, ConfigError, ShapeError in the failed role's message) and
the fit's own ``timeout`` are not restarted: a new attempt would fail the same way.

No pyspark here: decisions on plain values (the scheduler's status dicts, the failure's message).
"""
import re
import time

from sparkps.errors import ClusterError, PeerTimeout
from sparkps.runtime.resume import transient

_ROLE = re.compile(r"\b((?:worker|server) \d+)\b")
APP_ENDED = "the cluster manager ended the application"     # a stage failure's text (driver/stage.py)


def restartable(exc):
    """True for a failure a restart from a checkpoint can get past (a dead task, node or process); not the fit's
    own timeout, nor the end of the whole application (its SparkContext is stopped)."""
    if isinstance(exc, PeerTimeout) and "(timeout)" in str(exc):    # the fit's own deadline
        return False
    if APP_ENDED in str(exc):
        return False
    return isinstance(exc, ClusterError) and transient(exc)


def failed_role(exc):
    """The role a failure names first ('server 0', 'worker 1'), else 'a Spark task'."""
    node = exc.node if isinstance(exc, ClusterError) else None
    found = _ROLE.search(str(node or "")) or _ROLE.search(str(exc))
    return found.group(1) if found else "a Spark task"


class ProgressLog:
    """Wraps a ProgressView and keeps what a restart needs from the status snapshots: each worker's last
    progress and the batches per epoch it reported; tells ``restarts`` (a Restarts) when a restarted stage
    trains again. ``update`` never blocks."""

    def __init__(self, view, restarts=None):
        self.view, self.restarts = view, restarts
        self.last = {}          # rank (str) -> last progress entry
        self.epoch_batches = {}  # rank (str) -> {epoch: batches}

    def update(self, status):
        for rank, entry in (status.get("progress") or {}).items():
            if isinstance(entry, dict) and entry.get("epoch") is not None:
                self.last[str(rank)] = entry
                seen = self.epoch_batches.setdefault(str(rank), {})
                epoch = int(entry["epoch"])
                seen[epoch] = max(seen.get(epoch, 0), int(entry.get("nbatch") or 0))
        if self.restarts is not None:
            self.restarts.training_again(self)
        self.view.update(status)

    def steps_of(self, rank, steps_per_epoch=None):
        """Worker ``rank``'s steps since the job started, from its last progress (None if it reported none)."""
        entry = self.last.get(str(rank))
        if entry is None:
            return None
        epoch, seen = int(entry["epoch"]), self.epoch_batches.get(str(rank), {})
        full = steps_per_epoch or max(seen.values(), default=0)
        return sum(seen.get(e, full) for e in range(epoch)) + int(entry.get("nbatch") or 0)

    def forget(self):
        """A new attempt starts: progress of the failed one no longer counts."""
        self.last, self.epoch_batches = {}, {}


class Restarts:
    """The restarts of one fit: ``record`` one after a failure, ``entries`` for the history and last_fit."""

    def __init__(self, max_restarts):
        self.max_restarts = int(max_restarts)
        self.entries = []
        self.failed_at = None

    @property
    def count(self):
        return len(self.entries)

    def allowed(self, exc):
        """True when ``exc`` may be restarted from and restarts are left."""
        return restartable(exc) and self.count < self.max_restarts

    def give_up(self, exc):
        """The one error a fit raises when it stops restarting: it names the role that died."""
        return ClusterError("%s died again after %d restart(s) (max_restarts=%d): %s"
                            % (failed_role(exc), self.count, self.max_restarts, exc),
                            node=exc.node if isinstance(exc, ClusterError) else None)

    def record(self, exc, point, progress):
        """Note a restart after ``exc`` from checkpoint ``point`` (None: from the start); returns its entry.

        ``lost_steps``: worker 0's steps trained beyond those the checkpoint holds (they are trained again), from
        its last progress report (sent at most once a second: a lower bound)."""
        self.failed_at = time.monotonic()    # the failure's cleanup is done: the restart begins
        done = progress.steps_of(0, point.steps_per_epoch if point else None)
        # from the steps worker 0 skips: under model averaging / EASGD its steps since its last meeting with the
        # servers are lost too, though the checkpoint was taken after them
        base = point.steps_of(0) if point else 0
        entry = {"restart": self.count + 1, "role": failed_role(exc), "cause": str(exc)[:500], "failed_at": time.time(),
                 "checkpoint": point.path if point else None, "checkpoint_step": base,
                 "epoch": point.epoch if point else 0, "resumed_steps": dict(point.steps) if point else {},
                 "lost_steps": max(done - base, 0) if done is not None else None}
        self.entries.append(entry)
        return entry

    def training_again(self, progress):
        """Seconds from the failure to the first progress of the new attempt (set once, on the driver)."""
        if not self.entries or self.failed_at is None or not progress.last:
            return
        if "seconds_to_resume" not in self.entries[-1]:
            self.entries[-1].update(seconds_to_resume=time.monotonic() - self.failed_at, resumed_at=time.time())

    def describe(self, entry):
        """One progress line about a restart."""
        lost = "unknown" if entry["lost_steps"] is None else "at least %d" % entry["lost_steps"]
        where = ("checkpoint %s (worker 0 at step %d, epoch %d)" % (entry["checkpoint"], entry["checkpoint_step"],
                                                                  entry["epoch"] + 1)
                 if entry["checkpoint"] else "the start (no checkpoint yet)")
        return ("restart %d of %d: %s died (%s); resuming from %s; steps lost since it: %s"
                % (entry["restart"], self.max_restarts, entry["role"], entry["cause"][:200], where, lost))


def history_with_restarts(history, entries):
    """``history`` with each epoch a restart resumed in marked ``restarts`` (how many happened in it): worker 0's
    epoch at the checkpoint, or the last epoch when worker 0 had finished by then (under an asynchronous strategy a
    worker trains on while a dead one is being detected)."""
    if not history:
        return history
    last = max(h["epoch"] for h in history)
    marks = {}
    for entry in entries:
        epoch = min(entry["epoch"], last)
        marks[epoch] = marks.get(epoch, 0) + 1
    return [dict(h, restarts=marks[h["epoch"]]) if h["epoch"] in marks else h for h in history]
