"""The task of the single barrier stage: one per partition, each a worker; the first ``num_servers`` tasks
also start a parameter server beside them as a subprocess.

Each task lives the worker life of :mod:`sparkps.worker.lifecycle` (register -> resume from checkpoint -> fit ->
report -> close), the one ``sparkps worker train`` lives too: its data is the task's partition and its settings
the plan.

The closure captures one plain dict (the plan) and nothing of the driver.  A task returns one small dict:
its rank, rows and per-epoch metrics; rank 0 adds the final dense weights (pulled from the servers) as .npz bytes
and, for a network with sparse tables fed through an input layout, the manifest of the tables' shard files the
servers wrote into the plan's ``tables_dir`` (never their rows).
"""
import contextlib
import os
import sys
import time

from sparkps.errors import SparkpsError
from sparkps.spark.common.row_places import RowPlaces
from sparkps.spark.common.typed_inputs import TypedInputs
from sparkps.spark.task.early_stopping import EarlyStopping, epoch_end_callback
from sparkps.spark.task.local_copy import PartitionBatches, read_ahead
from sparkps.spark.task.partition_iter import PartitionIter
from sparkps.spark.task.row_weights import ROW_WEIGHT, OriginalNetwork, weighted_symbol

SERVER_EXIT_SECONDS = 30
REACH_SECONDS = 10       # a worker's first connection to a scheduler hosted in the stage


class WorkerFailed(SparkpsError, RuntimeError):
    """Raised by a training task; its message starts with ``sparkps worker N failed:`` for the driver."""


def make_train_task(plan):
    """The function given to ``rdd.barrier().mapPartitions`` (an RDD input on a classic session); ``plan`` is a
    dict of plain values. Yields the task's result dict."""
    def train_partition(rows):
        from pyspark import BarrierTaskContext
        yield train_in_stage(plan, BarrierTaskContext.get(), rows)
    return train_partition


def make_frame_task(plan, reader):
    """The function given to ``df.mapInArrow(..., barrier=True)`` (a DataFrame input, classic or Spark Connect):
    the task reads its record batches through ``reader`` (:mod:`sparkps.spark.common.arrow_inputs`: typed arrays,
    no Python object per row) and yields its result as Arrow record batches of
    :data:`sparkps.spark.common.result_chunks.OUTPUT_SCHEMA`, cut every ``plan['chunk_bytes']``."""
    def train_batches(batches):
        from pyspark import BarrierTaskContext

        from sparkps.spark.common.arrow_inputs import read_blocks
        from sparkps.spark.common.result_chunks import result_batches
        context = BarrierTaskContext.get()
        result = train_in_stage(plan, context, read_blocks(reader, batches))
        yield from result_batches(context.partitionId(), result, plan.get("chunk_bytes"))
    return train_batches


def train_in_stage(plan, context, rows):
    """One barrier task of either stage: worker ``context.partitionId()`` trains on ``rows``; without a
    scheduler address in the plan, rank 0 hosts the scheduler for the stage (:func:`stage_scheduler`)."""
    rank = context.partitionId()
    host = task_host(context) if plan.get("bind_executor_host") else "127.0.0.1"
    with stage_scheduler(plan, context, host) as placed:
        return run_task(placed, rank, rows, task_device(plan.get("ctx", "cpu"), context), host)


@contextlib.contextmanager
def stage_scheduler(plan, context, host):
    """The plan with its scheduler's address. When the driver hosts the scheduler (``plan['scheduler_uri']``) the
    plan as it is; otherwise (scheduler placement 'stage') rank 0 starts one (port 0, the plan's secret) in this
    process and every task learns its address through ``allGather`` before registering. Rank 0 stops it once every
    task has trained (a last ``barrier``), or when its own task fails, which fails the fit. Blocks on the
    ``allGather`` and the last barrier (Spark's barrier timeout)."""
    if plan.get("scheduler_uri"):
        yield plan
        return
    scheduler = None
    try:
        if context.partitionId() == 0:
            from sparkps.comm.timeouts import Timeouts
            from sparkps.scheduler import Scheduler
            timeouts = Timeouts(**plan["timeouts"]) if plan.get("timeouts") else Timeouts()
            scheduler = Scheduler(plan["num_servers"], plan["num_workers"], host=host, secret=plan["secret"],
                                  timeouts=timeouts, curve=bool(plan.get("curve"))).start()
        uris = [u for u in context.allGather(scheduler.uri if scheduler is not None else "") if u]
        if scheduler is None:
            check_reachable(uris[0], "worker %d" % context.partitionId())
        yield dict(plan, scheduler_uri=uris[0])
        context.barrier()          # every worker is done: the scheduler may go
    finally:
        if scheduler is not None:
            scheduler.stop()


def task_host(context):
    """The IP of this task's executor (as Spark's barrier coordinator knows it), for nodes to bind."""
    address = context.getTaskInfos()[context.partitionId()].address
    host = address.rsplit(":", 1)[0].strip("[]")
    import socket
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def task_device(ctx, context):
    """'gpu(N)' from the task's Spark GPU resource when training on GPU; 'cpu' otherwise."""
    if not str(ctx).startswith("gpu"):
        return "cpu"
    resources = context.resources() if hasattr(context, "resources") else {}
    if "gpu" in resources and resources["gpu"].addresses:
        return "gpu(%s)" % resources["gpu"].addresses[0]
    return str(ctx) if "(" in str(ctx) else "gpu(0)"


def check_reachable(uri, who, timeout=REACH_SECONDS):
    """Raise WorkerFailed naming ``uri`` when ``who`` cannot open a TCP connection to it within ``timeout`` s (a
    scheduler in another executor that this one cannot reach: the fit fails now, not after the registration
    timeout). Blocks at most ``timeout`` seconds."""
    import socket
    if not uri.startswith("tcp://"):
        return
    host, _, port = uri[len("tcp://"):].rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise WorkerFailed("sparkps %s failed: cannot reach the scheduler at %s (in rank 0's task): %s; executors "
                           "must reach each other's addresses" % (who, uri, exc)) from None


def run_task(plan, rank, rows, ctx="cpu", host="127.0.0.1"):
    """Train on ``rows`` as worker ``rank`` (starting server ``rank`` first when rank < num_servers): the worker
    life of :func:`sparkps.worker.lifecycle.run_worker`, with the plan's checkpoints.

    Blocks until every worker finished (the servers end then).  Any exception is reported to the
    scheduler and re-raised as WorkerFailed naming this worker; the server process never outlives it.
    """
    from sparkps import kvstore
    from sparkps.runtime.resume import ResumePoint
    from sparkps.worker.lifecycle import Checkpoints, failure_text, run_worker
    server = batches = None
    timeline = {"task_start": time.time()}

    def register():
        kv = kvstore.create(plan["kvstore"], scheduler_uri=plan["scheduler_uri"], secret=plan["secret"],
                            rank=rank, timeouts=plan.get("timeouts"), host=host, curve=bool(plan.get("curve")),
                            compression=plan.get("compression"), max_message_bytes=plan.get("max_message_bytes"),
                            **plan.get("kvstore_params", {}))
        timeline["registered"] = time.time()
        return kv

    def fit(kv, start):
        nonlocal batches
        width = plan["num_features"] + (1 if plan.get("row_weights") else 0)    # weights ride as a last column
        dtype = plan.get("data_dtype", "float32")
        typed = TypedInputs.from_list(plan.get("inputs"))
        if typed is not None:           # named inputs: one structured value a row
            width, dtype = 1, typed.dtype
        batches = PartitionBatches(rows, plan["batch_size"], width, shuffle=True,
                                   seed=plan.get("seed", 0) + rank, places=_row_places(plan, rank), dtype=dtype)
        result = _fit(plan, kv, start, batches, rank, ctx, fault_hook(plan, rank, server))
        timeline["fit_end"] = time.time()
        return result

    def explain(exc):
        message = failure_text(exc)
        if server is not None and server.poll() not in (None, 0):
            message += " (the server %d process beside it exited with code %s)" % (rank, server.returncode)
        return message

    try:
        with _blas_threads(plan.get("blas_threads")):
            if rank < plan["num_servers"]:
                server = _start_server(plan, rank, host)
            rows = read_ahead(rows)      # the first rows are read while the server process starts
            checkpoints = Checkpoints(ResumePoint.from_plan(plan.get("resume")), plan.get("checkpoint_dir"),
                                      plan.get("checkpoint_steps"))
            # a server that dies while this worker registers, trains or closes (after its last step: the final
            # pull, the last checkpoint) fails the job at once, not after the heartbeat timeout
            with watch_server_exit(server, plan, rank, last_words=lambda: last_line(server)):
                result = run_worker(register, fit, explain, checkpoints)
            if server is not None:
                server.wait_exit(SERVER_EXIT_SECONDS)
            timeline["task_end"] = time.time()
            result.update(timeline=timeline, host=host, server=server is not None)    # where the roles ran
            return result
    except BaseException as exc:
        raise WorkerFailed("sparkps worker %d failed: %s" % (rank, explain(exc))) from exc
    finally:
        if server is not None:
            server.stop(5)
        if batches is not None:
            batches.close()


def _fit(plan, kv, start, batches, rank, ctx, fault=None):
    """Train worker ``rank`` on its ``batches`` from ``start`` (a lifecycle.Start); returns the task's result."""
    from sparkps import symbol as sym
    from sparkps.spark.model.predictor import params_to_bytes
    from sparkps.train.feedforward import FeedForward
    from sparkps.worker.lifecycle import default_initializer
    history = EpochHistory(plan["batch_size"])
    initializer = plan.get("initializer") or default_initializer()
    weighted = bool(plan.get("row_weights"))
    data = PartitionIter(batches, plan["input_shape"], plan.get("data_name", "data"), plan["label_name"],
                         weight_name=ROW_WEIGHT if weighted else None,
                         typed=TypedInputs.from_list(plan.get("inputs")))
    train_data = start.skip(data)    # resuming: this worker's place in its data (the kvstore loads the weights)
    network = weighted_symbol(plan["symbol"]) if weighted else sym.load_json(plan["symbol"])
    arg_params, aux_params = initial_params(plan)     # a warm start: the dense weights of the initial model
    model = FeedForward(network, ctx=ctx, num_epoch=plan["num_epoch"],
                        optimizer=plan["optimizer"], initializer=initializer, numpy_batch_size=plan["batch_size"],
                        seed=plan.get("seed", 0), begin_epoch=start.begin_epoch, arg_params=arg_params,
                        aux_params=aux_params, **plan.get("optimizer_params", {}))
    # the sparse tables of a network fed through an input layout (CTR) stay on the servers, which write them into
    # the plan's staging folder at the end (a COMMAND to every server, sent by worker 0); no worker pulls them
    tables_dir = plan.get("tables_dir") if data.typed is not None else None
    model.tables_on_store = tables_dir is not None
    if (plan.get("initial") or {}).get("tables") and not start.resuming:
        kv.start_from_tables()       # the servers load the initial model's rows once the optimizer is set
    stopper = _early_stopping(plan, keep_best=rank == 0, rank=rank)
    if stopper is not None and data.typed is not None:   # CTR validation reads every worker's rows of its ids
        model.keep_rows_for(dict(stopper.inputs))
    snapshots = []       # the tables' manifest of each best epoch's snapshot on the servers (worker 0)
    reading = table_reading(network) if tables_dir is not None else None
    if tables_dir is not None and rank == 0 and stopper is not None and stopper.snapshots_tables:
        stopper.snapshot = lambda: snapshots.append(kv.write_tables(tables_dir, reading, plan.get("forget_steps")))
    scored = OriginalNetwork(model, plan["symbol"]) if weighted else model
    validation = [] if stopper is None else [epoch_end_callback(stopper, scored, data, history)]
    saves = start.callbacks(history=history.epochs)
    on_batch = [history.on_batch] + saves["batch_end_callback"]
    on_epoch = validation + [history.epoch_done(kv, data)] + saves["epoch_end_callback"]
    if fault is not None:
        on_batch.append(fault)
    started = time.perf_counter()
    model.fit(train_data, eval_metric=plan.get("eval_metric", "acc"), kvstore=kv, batch_end_callback=on_batch,
              epoch_end_callback=on_epoch)
    result = {"rank": rank, "rows": batches.num_rows, "history": history.epochs(),
              "stopped_after": None if stopper is None else stopper.stopped_after,
              "best_epoch": None if stopper is None else stopper.best_epoch,
              "stop_reason": None if stopper is None else stopper.reason,
              "fit_seconds": time.perf_counter() - started, "batches": history.batches,
              "first_batch_end": history.first_batch_end, "last_batch_end": history.last_batch_end,
              "first_epoch_end": history.first_epoch_end,
              "validation": validation_seconds(model, stopper, history)}
    best = stopper.best_params if stopper is not None and stopper.best_params is not None else None
    if rank == 0:   # early stopping returns the best epoch's weights, not the last ones
        arg_params, aux_params = best or (model.arg_params, model.aux_params)
        if tables_dir is not None:   # the servers write the tables (or wrote them at the best epoch): a manifest
            result["tables"] = snapshots[-1] if best is not None and snapshots else \
                kv.write_tables(tables_dir, reading, plan.get("forget_steps"))
            arg_params = dense_params(arg_params)
        result["params"] = params_to_bytes(arg_params, aux_params)
    return result


def initial_params(plan):
    """``(arg_params, aux_params)`` of the dense part of the model the fit starts from (``plan["initial"]``, see
    :mod:`sparkps.spark.driver.initial_model`), or ``(None, None)`` for a cold start."""
    initial = plan.get("initial") or {}
    if not initial.get("params"):
        return None, None
    from sparkps.model_files import params_from_bytes
    return params_from_bytes(initial["params"], "the initial model's dense parameters")


def validation_seconds(model, stopper, history):
    """{rows_pull, scoring, snapshot}: the seconds this worker spent at its epoch ends pulling the rows of the
    held-out ids (and the ids of nothing else), scoring the held-out rows, and waiting for the servers to write
    the tables at a new best epoch; all 0 without validation."""
    snapshot = 0.0 if stopper is None else stopper.snapshot_seconds
    return {"rows_pull": model.epoch_end_pull_seconds if stopper is not None else 0.0,
            "scoring": history.validation_seconds - snapshot, "snapshot": snapshot}


def table_reading(network):
    """{table: {"fields", "padding_id", "input_dim"}}: how ``network`` reads each sparse table (what scoring its
    shard files needs beside the options the servers hold)."""
    from sparkps.symbol.ops.embedding import sparse_tables
    return {name: {"fields": list(spec.fields),
                   "padding_id": None if spec.padding_id is None else int(spec.padding_id),
                   "input_dim": None if spec.input_dim is None else int(spec.input_dim)}
            for name, spec in sparse_tables(network).items()}


def dense_params(params):
    """``params`` without its sparse tables' rows (RowSparse values)."""
    from sparkps.rows.values import RowSparse
    return {name: value for name, value in params.items() if not isinstance(value, RowSparse)}


def fault_hook(plan, rank, server):
    """A test hook (``plan["fault"]``): at this worker's step ``at_step`` of the first ``attempts`` runs of the
    stage, SIGKILL the server process beside it (``kill: 'server'``) or this task's own Python process
    (``kill: 'worker'``), as a crash would; with ``record`` (a path) it first appends the wall-clock time of the
    kill there (benchmarks time the restart from it). None when the plan names no fault for this worker."""
    fault = plan.get("fault")
    if not fault or int(fault.get("rank", 0)) != rank or plan.get("attempt", 0) >= int(fault.get("attempts", 1)):
        return None
    import signal
    target = server.pid if fault["kill"] == "server" else os.getpid()
    steps = [0]

    def kill(param):
        steps[0] += 1
        if steps[0] == int(fault["at_step"]):
            if fault.get("record"):
                with open(fault["record"], "a", encoding="utf-8") as handle:
                    handle.write("%.6f\n" % time.time())
            os.kill(target, signal.SIGKILL)
    return kill


def _row_places(plan, rank):
    """Where this task's rows sit in the fit's input (see sparkps.spark.common.row_places), for error messages."""
    kind = plan.get("row_places")
    return RowPlaces(tagged=True) if kind == "tagged" else RowPlaces(rank if kind == "partition" else None)


def _early_stopping(plan, keep_best=False, rank=0):
    """An EarlyStopping over the plan's validation rows, or None when the plan has none. A network fed through an
    input layout (CTR) gets worker 0's exact AUC/logloss/COPC over every validation row instead (validation.py);
    with the plan's ``stop_metric`` and ``patience`` every worker scores them and stops on that metric."""
    if plan.get("validation") is None:
        return None
    X, y = plan["validation"]
    if plan.get("inputs") is not None:
        from sparkps.spark.task.validation import CTRValidation
        metric = plan.get("stop_metric") if plan.get("patience") else None
        if metric is None and rank != 0:      # only worker 0 records the metrics; stopping needs every worker
            return None
        return CTRValidation(X, y, TypedInputs.from_list(plan["inputs"]), metric=metric,
                             patience=plan.get("patience", 0))
    return EarlyStopping(X, y, patience=plan.get("patience", 2), keep_best=keep_best)


class EpochHistory:
    """The last metric values seen in each epoch (FeedForward's metrics accumulate over an epoch)."""

    def __init__(self, batch_size):
        self.batch_size = batch_size
        self._last, self._epoch_batches = {}, {}
        self.batches = 0
        self.first_batch_end = self.last_batch_end = None     # wall-clock times (comparable across tasks)
        self.first_epoch_end = None
        self.validation_seconds = 0.0    # scoring the held-out rows at the epoch ends (with the best-epoch snapshots)

    def on_batch(self, param):
        now = time.time()
        self.first_batch_end = self.first_batch_end or now
        self.last_batch_end, self.batches = now, self.batches + 1
        self._epoch_batches[int(param.epoch)] = int(param.nbatch)
        metric = param.eval_metric          # a BatchEndParam (sparkps.callback)
        if metric is None:
            return
        names, values = metric.get()
        if not isinstance(names, (list, tuple)):
            names, values = [names], [values]
        self._last[int(param.epoch)] = {str(n): float(v) for n, v in zip(names, values)}

    def add(self, epoch, metrics):
        """Record more metrics of ``epoch`` (e.g. validation scores) beside the training ones."""
        self._last.setdefault(int(epoch), {}).update(metrics)

    def epoch_done(self, kv, data=None):
        """Epoch-end callback: report the finished epoch's metrics at once (progress is otherwise sent at
        most once a second, so short epochs would not show on the driver). Once early stopping stopped ``data``
        (a PartitionIter) the epoch it stopped at is reported as ``stopped`` and the empty epochs left are not
        reported, so the driver shows the epoch training ended at, not the last one planned."""
        reported_stop = []

        def report(epoch, *_):
            self.first_epoch_end = self.first_epoch_end or time.time()
            stopped = data is not None and data.stopped
            if reported_stop:
                return
            epoch = int(epoch)
            batches = self._epoch_batches.get(epoch, 0)
            kv.report_progress(force=True, epoch=epoch, nbatch=batches, samples=batches * self.batch_size,
                               metrics=dict(self._last.get(epoch, {})), stopped=stopped)
            if stopped:
                reported_stop.append(epoch)
        return report

    def epochs(self):
        return [dict(values, epoch=epoch) for epoch, values in sorted(self._last.items())]


def _start_server(plan, rank, host):
    from sparkps.comm.timeouts import Timeouts
    from sparkps.runtime.server_node import spawn_server
    env = dict(os.environ)
    threads = str(plan.get("blas_threads") or 1)
    env.update(OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
    if plan.get("fit_id"):                   # the driver finds the servers of a failed fit by it (driver/stage.py)
        env["SPARKPS_FIT"] = str(plan["fit_id"])
    if plan.get("tables_dir"):               # the one folder the servers may write tables below (docs/tables.md)
        env["SPARKPS_TABLES_ROOT"] = str(plan["tables_dir"])
    if (plan.get("initial") or {}).get("tables"):     # the shard files of the model the fit starts from
        env["SPARKPS_START_TABLES"] = str(plan["initial"]["tables"])
    if plan.get("max_message_bytes"):       # the job's largest legitimate frame (driver/arguments.message_limit)
        env["SPARKPS_MAX_MESSAGE_BYTES"] = str(int(plan["max_message_bytes"]))
    timeouts = Timeouts(**plan["timeouts"]) if plan.get("timeouts") else None
    return spawn_server(plan["scheduler_uri"], plan["secret"], rank=rank, env=env, timeouts=timeouts, host=host,
                        curve=bool(plan.get("curve")), relay=sys.stderr)   # the executor's log; its last line kept


def last_line(child, wait=2.0):
    """The last line a relayed child (:class:`~sparkps.runtime.supervisor.Child`) wrote, once its output has been
    read to the end (at most ``wait`` s)."""
    child.join_output(wait)
    return child.last_line


def watch_server_exit(process, plan, rank, last_words=None):
    """For the whole life of this task's worker (register, train, close), watch the server process it started:
    if that process fails (a non-zero exit or a signal; a server the scheduler ended exits 0), tell the scheduler
    at once (ABORT), so every node fails now with the exit code instead of waiting out the registration or
    heartbeat timeout. ``last_words``: a function returning the process's last output line (why it exited), told
    to the scheduler with the exit code."""
    from sparkps.runtime.supervisor import ExitWatch, describe_exit

    def abort(code):
        if code == 0:      # the job ended (TERMINATE): every worker closed, nothing is lost
            return
        from sparkps.scheduler.client import report_abort
        line = last_words() if last_words is not None else ""     # an import error, a traceback's last line
        said = ": %s" % line[-300:] if line else ""
        with contextlib.suppress(SparkpsError):
            report_abort(plan["scheduler_uri"], plan["secret"], "server", rank,
                         "its process (started by worker %d) %s%s" % (rank, "exited with code %s" % code if code >= 0
                                                                      else "was " + describe_exit(code), said),
                         curve=bool(plan.get("curve")))
    return ExitWatch(process, abort)


@contextlib.contextmanager
def _blas_threads(limit):
    """Cap BLAS threads in this Python worker so workers and servers sharing cores do not oversubscribe."""
    if not limit:
        yield
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=int(limit)):
        yield
