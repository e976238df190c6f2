"""The life of one training worker, shared by ``sparkps worker train`` and the Spark task:
register -> fit -> report -> close.

:func:`run_worker` registers (the caller's ``register`` returns a dist kvstore, blocking until the cluster
formed), runs ``fit(kv)``, and on any failure reports it to the scheduler, so every node of the job stops at
once with that message, before re-raising it. The kvstore is closed on every path.

>>> # result = run_worker(lambda: kvstore.create('dist_sync', scheduler_uri=uri, secret=secret),
>>> #                     lambda kv: model.fit(X, y, kvstore=kv))
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


def run_worker(register, fit, explain=failure_text):
    """Register, fit, report and close one worker; returns ``fit(kv)``'s result.

    ``register()`` returns the worker's dist kvstore (blocking until registered, up to its register timeout);
    ``fit(kv)`` trains. Any exception is reported to the scheduler as ``explain(exc)`` and re-raised. The
    kvstore is closed (blocks at most its request timeout) whether fit succeeded or not.
    """
    kv = None
    try:
        kv = register()
        result = fit(kv)
        kv.close()
        return result
    except BaseException as exc:
        report_failure(kv, explain(exc))
        raise
    finally:
        if kv is not None:
            with contextlib.suppress(Exception):
                kv.close()
