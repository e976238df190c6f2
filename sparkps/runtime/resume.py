"""Resume after a failure: where a job's checkpoints live, which one to load, and how a worker continues from it.

A job with a checkpoint folder ``D`` keeps one sub-folder per checkpoint: ``epoch-0003`` after epoch 3 and
``step-00000120`` every ``checkpoint_steps`` steps (worker 0's steps since the job started). Each is a
kvstore checkpoint (:mod:`sparkps.comm.manifest`) whose manifest also records where training stood::

    "resume": {"epoch": 2, "nbatch": 10, "step": 120, "steps_per_epoch": 55,
               "steps": {"0": 120, "1": 120}, "history": [{"epoch": 0, "accuracy": 0.71}, ...]}

``steps`` comes from the servers: how many steps of each worker the saved weights hold (the step in flight
when the save arrived is not among them), so a resumed worker skips exactly those batches of its data and no
step is applied twice. The manifest is written last and atomically (a temporary file renamed): a checkpoint
whose manifest is missing, unreadable or lacks ``resume`` (a crash mid-save, a half-written file) is passed
over for the one before it (:func:`latest_checkpoint`), and so is one with a damaged piece (missing, truncated,
altered or replaced by another file: the manifest records each piece's digest), with one warning naming it.
A damaged checkpoint is pruned or left by one rule (:func:`prune`): an incomplete step checkpoint older than the
newest complete one is removed, an incomplete epoch checkpoint is left and warned about once.

Worker side: :class:`Checkpointer` (worker 0 saves, from the batch-end and epoch-end callbacks),
``kv.resume_from(path)`` of the dist kvstore (loads the checkpoint once the optimizer is set) and
:class:`SkippedIter` (a DataIter fast-forwarded past the steps already trained). Nothing here imports pyspark.

>>> # point = latest_checkpoint("/shared/ckpt")   -> ResumePoint or None
>>> # data = SkippedIter(data, point.steps_of(rank)); kv.resume_from(point.path)
>>> # model.begin_epoch = data.begin_epoch; model.fit(data, kvstore=kv, batch_end_callback=ckpt.on_batch, ...)
"""
import itertools
import logging
import os
import re
import shutil
from typing import NamedTuple

from sparkps.comm.manifest import MANIFEST, read_manifest, verify_checkpoint
from sparkps.errors import ConfigError, DataError
from sparkps.io import DataIter
from sparkps.kvstore.strategies import DIST_TYPES

log = logging.getLogger(__name__)
_NAME = re.compile(r"^(epoch-\d{4,}|step-\d{8,})$")
_NOT_TRANSIENT = re.compile(r"\b(DataError|ConfigError|ShapeError)\b")

# strategies a restart continues. Model averaging and EASGD train on the workers: the servers hold the last
# average / the center, and a resumed worker starts from it, having lost what it trained since its last meeting
# with the servers (its local weights and optimizer state are not in the checkpoint; the servers count its
# meetings, each ``period`` local steps: worker/averaging.py ``held_steps``)
RESUMABLE = DIST_TYPES    # every type the parameter server serves keeps its weights there


def check_resumable(kvstore):
    """ConfigError naming the kvstore when restarts / resume cannot continue it (a type not on the servers)."""
    if kvstore not in RESUMABLE:
        raise ConfigError("kvstore %r keeps no weights on the parameter servers: it cannot resume from their "
                          "checkpoint; use one of %s" % (kvstore, ", ".join(RESUMABLE[:5])))


def transient(message):
    """False when a failure's message shows an error of the data or the settings (DataError, ConfigError,
    ShapeError): a restart would fail the same way. True for the rest (a dead process, task or node)."""
    return not _NOT_TRANSIENT.search(str(message))


def epoch_checkpoint(folder, epoch):
    """The folder of the checkpoint written after epoch ``epoch`` (0-based) ends."""
    return os.path.join(folder, "epoch-%04d" % (epoch + 1))


def step_checkpoint(folder, step):
    """The folder of the checkpoint written after worker 0's step ``step``."""
    return os.path.join(folder, "step-%08d" % step)


class ResumePoint(NamedTuple):
    """A complete checkpoint and where training stood when it was written."""
    path: str
    epoch: int            # worker 0's epoch (0-based) of the next step
    step: int             # worker 0's steps since the job started
    steps: dict           # {rank (str): steps that worker had applied}
    steps_per_epoch: int  # worker 0's batches per epoch (None while its first epoch was running)
    history: list         # worker 0's per-epoch metrics up to the checkpoint

    def steps_of(self, rank):
        """Steps worker ``rank`` skips; a worker missing from the record (none of its steps arrived) skips 0."""
        return int(self.steps.get(str(rank), 0))

    def as_plan(self):
        """A plain dict for a task closure (:meth:`from_plan` reads it back)."""
        return dict(self._asdict())

    @classmethod
    def from_plan(cls, plan):
        return None if plan is None else cls(**plan)


def read_point(path):
    """The ResumePoint of the checkpoint in ``path``; DataError when it is incomplete or unreadable."""
    manifest = read_manifest(path)
    record = manifest.get("resume")
    if not isinstance(record, dict) or not isinstance(record.get("steps"), dict):
        raise DataError("%s has no resume record (not written by a job with a checkpoint folder)"
                        % os.path.join(path, MANIFEST))
    try:
        return ResumePoint(path, int(record["epoch"]), int(record["step"]),
                           {str(k): int(v) for k, v in record["steps"].items()},
                           None if record.get("steps_per_epoch") is None else int(record["steps_per_epoch"]),
                           list(record.get("history") or []))
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError("%s: bad resume record (%s)" % (os.path.join(path, MANIFEST), exc)) from None


def checkpoints(folder, warned=None):
    """Every complete checkpoint in ``folder``, oldest first (by worker 0's step, epoch checkpoints after step
    ones of the same step). Incomplete ones are logged and skipped; a missing folder has none. ``warned``: a set
    of the paths already warned about (each new one is added and warned about once), None to warn about each."""
    found = []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return found
    for name in names:
        path = os.path.join(folder, name)
        if not _NAME.match(name) or not os.path.isdir(path):
            continue
        try:
            point = read_point(path)
        except DataError as exc:
            if warned is None or path not in warned:
                log.warning("sparkps: skipping checkpoint %s: %s", path, exc)
                if warned is not None:
                    warned.add(path)
            continue
        found.append(point)
    found.sort(key=lambda p: (p.step, os.path.basename(p.path).startswith("epoch")))
    return found


def latest_checkpoint(folder):
    """The newest complete checkpoint in ``folder`` whose pieces are all intact, as a ResumePoint, or None
    when there is none. A damaged one (:func:`sparkps.comm.manifest.verify_checkpoint`) is passed over with
    one warning naming its first damaged piece. Blocks while it reads the pieces of the checkpoints it checks."""
    for point in reversed(checkpoints(folder)):
        try:
            damaged = verify_checkpoint(point.path)
        except DataError as exc:
            damaged = [(MANIFEST, str(exc))]
        if not damaged:
            return point
        name, why = damaged[0]
        more = " (and %d more damaged pieces)" % (len(damaged) - 1) if len(damaged) > 1 else ""
        log.warning("sparkps: skipping damaged checkpoint %s: piece %s: %s%s; trying the one before it",
                    point.path, os.path.join(point.path, os.path.basename(name)), why, more)
    return None


def prune(folder, keep=2, warned=None):
    """Remove all but the newest ``keep`` step checkpoints of ``folder`` (the one before the newest stays in
    case the newest turns out unreadable); epoch checkpoints stay (they are the per-epoch models).

    The rule for damaged ones: an incomplete step checkpoint (no readable manifest or resume record) older than
    the newest complete one is removed; an incomplete epoch checkpoint is left in place (it may be the only copy
    of that epoch's model, for a person to look at) and warned about once per ``warned`` set (a Checkpointer
    keeps one), never at every save."""
    steps = [p for p in checkpoints(folder, warned) if os.path.basename(p.path).startswith("step-")]
    for point in steps[:-keep] if keep else steps:
        shutil.rmtree(point.path, ignore_errors=True)
    if steps:     # saves that never completed (no readable manifest), older than the newest complete one
        complete = {os.path.basename(p.path) for p in steps}
        for name in os.listdir(folder):
            if name.startswith("step-") and _NAME.match(name) and name not in complete \
                    and int(name[5:]) < steps[-1].step:
                shutil.rmtree(os.path.join(folder, name), ignore_errors=True)


class Checkpointer:
    """Worker 0's saves: every ``every_steps`` steps (None: only at epoch ends) and at each epoch end.

    ``start_step`` is the worker's step count when this run began (its resume point), ``history`` a callable
    giving the per-epoch metrics so far. Only worker 0 saves (non-collective: the other workers train on);
    the servers say how far each worker's steps are in the saved weights. ``on_batch`` and ``on_epoch`` are
    FeedForward's batch-end and epoch-end callbacks; each save blocks until every server wrote its part.
    """

    def __init__(self, kv, folder, every_steps=None, rank=0, start_step=0, history=None):
        if every_steps is not None and int(every_steps) < 1:
            raise ConfigError("checkpoint_steps must be >= 1 (or None for epoch ends only), got %r" % (every_steps,))
        self.kv, self.folder, self.rank = kv, folder, rank
        self.every_steps = None if every_steps is None else int(every_steps)
        self.step, self.history = int(start_step), history or (lambda: [])
        self.steps_per_epoch = None
        self.saved = []       # paths written by this run, in order
        self._warned = set()  # incomplete checkpoints already warned about (once each, not at every save)

    def on_batch(self, param):
        """Count one step; worker 0 saves when the count reaches a multiple of ``every_steps``."""
        self.step += 1
        if self.rank == 0 and self.every_steps and self.step % self.every_steps == 0:
            self.save(step_checkpoint(self.folder, self.step), int(param.epoch), int(param.nbatch))

    def on_epoch(self, epoch, *_):
        """Worker 0 saves the epoch's checkpoint (the next step is epoch + 1's first)."""
        if self.rank != 0:
            return
        if self.steps_per_epoch is None and epoch == 0:
            self.steps_per_epoch = self.step
        self.save(epoch_checkpoint(self.folder, epoch), int(epoch) + 1, 0)

    def save(self, path, epoch, nbatch):
        """Have the servers write the checkpoint ``path`` with where training stands; then prune old ones."""
        record = {"epoch": epoch, "nbatch": nbatch, "step": self.step, "steps_per_epoch": self.steps_per_epoch,
                  "history": self.history()}
        # a folder of that name is from a run this one resumed before (its later steps, or a half-written
        # save): a checkpoint is written whole into an empty folder, never merged with an older one
        shutil.rmtree(path, ignore_errors=True)
        self.kv.save_checkpoint(path, resume=record)
        self.saved.append(path)
        prune(self.folder, warned=self._warned)


class SkippedIter(DataIter):
    """``data`` fast-forwarded past its first ``steps`` batches (over as many epochs as they span), read the way
    training read them, so the shuffles of later epochs are the same as in an uninterrupted run.

    ``begin_epoch`` is the epoch training continues in; the first ``reset()`` keeps the position (FeedForward
    resets at each epoch start), later ones are the wrapped iterator's. Blocks while it reads the skipped
    batches (the first epoch of a Spark partition streams the partition).
    """

    def __init__(self, data, steps):
        super().__init__(data.batch_size)
        self.data, self.begin_epoch, self._ahead = data, 0, None
        self._keep_position = False
        remaining = int(steps)
        while remaining > 0:
            data.reset()
            taken = sum(1 for _ in itertools.islice(data, remaining))
            remaining -= taken
            if remaining > 0 or taken == 0:
                if taken == 0:          # an empty epoch: nothing to skip in it (no data at all)
                    break
                self.begin_epoch += 1
                continue
            self._peek()

    def _peek(self):
        """Look one batch ahead: the epoch may have ended exactly at the skipped step."""
        try:
            self._ahead = self.data.next()
            self._keep_position = True
        except StopIteration:
            self.begin_epoch += 1

    @property
    def provide_data(self):
        return self.data.provide_data

    @property
    def provide_label(self):
        return self.data.provide_label

    def reset(self):
        if self._keep_position:
            self._keep_position = False
            return
        self._ahead = None
        self.data.reset()

    def next(self):
        if self._ahead is not None:
            batch, self._ahead = self._ahead, None
            return batch
        return self.data.next()
