"""The life of one training worker, the one both ``sparkps worker train`` (:mod:`sparkps.worker.command`) and the
Spark task (:mod:`sparkps.spark.task.barrier_task`) run: register -> resume from checkpoint -> fit -> report ->
close. The two differ only in where their data and settings come from.

:func:`run_worker` registers (the caller's ``register`` returns a dist kvstore, blocking until the cluster
formed), binds the worker's :class:`Checkpoints` to it (a :class:`Start`: the checkpoint it resumes from, which
the kvstore loads once the optimizer is set, the steps of its data it skips, and the checkpoint callbacks it
trains with), runs ``fit(kv, start)``, and on any failure reports it to the scheduler, so every node of the job
stops at once with that message, before re-raising it. The kvstore is closed on every path.

>>> # result = run_worker(lambda: kvstore.create('dist_sync', scheduler_uri=uri, secret=secret),
>>> #                     lambda kv, start: model.fit(start.skip(data), kvstore=kv, **start.callbacks()),
>>> #                     checkpoints=Checkpoints(point, folder='/shared/ckpt', every_steps=100))
"""
import contextlib
import logging
import traceback

log = logging.getLogger(__name__)


def default_initializer():
    """The weight initializer a worker uses unless told otherwise (Xavier, gaussian, fan-in, magnitude 2)."""
    from sparkps.initializer import Xavier
    return Xavier(rnd_type="gaussian", factor_type="in", magnitude=2.0)


def failure_text(exc):
    """``'ExcType: message'`` (or just the type when the message is empty), as the scheduler shows it."""
    return "%s: %s" % (type(exc).__name__, exc) if str(exc) else type(exc).__name__


def report_failure(kv, text):
    """Tell the scheduler this worker failed with ``text`` (unless the cluster already failed, or there is
    no kvstore yet); never raises. Blocks at most one send on the worker's postoffice."""
    if kv is None or kv.postoffice.failure is not None:
        return
    log.debug("worker %s failed:\n%s", kv.rank, traceback.format_exc())
    with contextlib.suppress(Exception):
        kv.postoffice.report_error(text)


class Checkpoints:
    """A worker's checkpoint settings: ``point`` (a :class:`sparkps.runtime.resume.ResumePoint` to continue from,
    the folder of one, read once the worker registered so that a bad one is reported like any failure, or None),
    ``folder`` (worker 0 has the servers save there after each epoch; None: no checkpoints) and
    ``every_steps`` (also every N steps; None: epoch ends only)."""

    def __init__(self, point=None, folder=None, every_steps=None):
        self.point, self.folder, self.every_steps = point, folder, every_steps

    def start(self, kv):
        """The :class:`Start` of the registered worker ``kv``; with a resume point the kvstore is told to load it
        (it does so right after the next ``set_optimizer``)."""
        return Start(self, kv)


class Start:
    """Where one registered worker starts: from scratch, or from its checkpoint's weights and its place in its data.

    ``skip(data)`` fast-forwards a DataIter past the steps the checkpoint holds for this worker (the same shuffles
    as the uninterrupted run when the data is seeded) and sets ``begin_epoch``, the epoch training continues in;
    ``callbacks(history)`` are FeedForward's checkpoint callbacks (worker 0 saves, every worker counts steps).
    """

    def __init__(self, checkpoints, kv):
        self.kv, self.rank, self.checkpoints = kv, kv.rank, checkpoints
        self.point = checkpoints.point
        if isinstance(self.point, str):
            from sparkps.runtime.resume import read_point
            self.point = read_point(self.point)
        self.start_step = self.point.steps_of(self.rank) if self.point is not None else 0
        self.begin_epoch = 0
        if self.point is not None:
            kv.resume_from(self.point.path)

    @property
    def resuming(self):
        return self.point is not None

    def skip(self, data):
        """``data`` past the steps the checkpoint holds for this worker (``data`` itself when not resuming).
        Blocks while it reads the skipped batches."""
        if self.point is None:
            return data
        from sparkps.runtime.resume import SkippedIter
        skipped = SkippedIter(data, self.start_step)
        self.begin_epoch = skipped.begin_epoch
        log.info("worker %d: resuming from %s at step %d (epoch %d)", self.rank, self.point.path, self.start_step,
                 self.begin_epoch)
        return skipped

    def callbacks(self, history=None):
        """``{'batch_end_callback': [...], 'epoch_end_callback': [...]}`` saving checkpoints into the folder (both
        empty without one). ``history`` (a callable) gives this run's per-epoch metrics for the checkpoints' record;
        the checkpoint it resumed from contributes the epochs before this run."""
        if not self.checkpoints.folder:
            return {"batch_end_callback": [], "epoch_end_callback": []}
        from sparkps.runtime.resume import Checkpointer
        record = None if history is None else (lambda: with_earlier(self.point, history()))
        saver = Checkpointer(self.kv, self.checkpoints.folder, self.checkpoints.every_steps, self.rank,
                             start_step=self.start_step, history=record)
        saver.steps_per_epoch = self.point.steps_per_epoch if self.point is not None else None
        return {"batch_end_callback": [saver.on_batch], "epoch_end_callback": [saver.on_epoch]}


def with_earlier(point, epochs):
    """Worker 0's per-epoch metrics: the checkpoint's for the epochs before this run, then this run's."""
    if point is None:
        return epochs
    newer = {int(e["epoch"]) for e in epochs}
    return [e for e in point.history if int(e["epoch"]) not in newer] + epochs


def run_worker(register, fit, explain=failure_text, checkpoints=None):
    """Register, resume, fit, report and close one worker; returns ``fit(kv, start)``'s result.

    ``register()`` returns the worker's dist kvstore (blocking until registered, up to its register timeout);
    ``checkpoints`` (a :class:`Checkpoints`; None: none) is bound to it as ``start`` (a :class:`Start`);
    ``fit(kv, start)`` trains. Any exception is reported to the scheduler as ``explain(exc)`` and re-raised. The
    kvstore is closed (blocks at most its request timeout) whether fit succeeded or not.
    """
    kv = None
    try:
        kv = register()
        start = (checkpoints or Checkpoints()).start(kv)
        result = fit(kv, start)
        kv.close()
        return result
    except BaseException as exc:
        report_failure(kv, explain(exc))
        raise
    finally:
        if kv is not None:
            with contextlib.suppress(Exception):
                kv.close()
