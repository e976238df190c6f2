"""SparkTrainer: fit a Symbol on an RDD or DataFrame with the parameter server inside one Spark job.

    trainer = SparkTrainer(net, input_shape=(64,), batch_size=64, num_epoch=10,
                           num_workers=2, num_servers=1, optimizer='sgd',
                           optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    model = trainer.fit(rdd)              # rdd of (features, label) or LabeledPoint; or a DataFrame
    model.transform(test_df).show()

The driver starts the scheduler (port 0), then one barrier stage of ``num_workers`` tasks trains; tasks
0..num_servers-1 also run a server process each.  So the job needs exactly ``num_workers`` task slots.
"""
import contextlib
import re

import numpy as np

from sparkps.errors import ClusterError, ConfigError
from sparkps.kvstore.strategies import check_strategy
from sparkps.optimizer import create as create_optimizer
from sparkps.spark.common.result_chunks import CHUNK_BYTES
from sparkps.spark.common.row_places import in_input
from sparkps.spark.common.session import is_connect, is_frame
from sparkps.spark.common.typed_inputs import TypedInputs
from sparkps.spark.driver import checks
from sparkps.spark.driver.arguments import (
    argument_names,
    check_network,
    checked_restarts,
    message_limit,
    network_name,
)
from sparkps.spark.driver.console import spark_progress_paused
from sparkps.spark.driver.data_checks import check_training_data
from sparkps.spark.driver.placement import check_placement as checks_placement
from sparkps.spark.driver.placement import (
    choose_placement,
    cluster_facts,
    connect_host,
    needs_probe,
    tasks_reach,
)
from sparkps.spark.driver.progress import ProgressView
from sparkps.spark.driver.results import (
    check_stop_metric,
    fit_timings,
    log_early_stop,
    merge_histories,
    role_hosts,
    trained_model,
)
from sparkps.spark.driver.stage import FrameStage, RddStage, StageFailed, run_watched, same_machine
from sparkps.spark.driver.table_staging import remove as remove_staged
from sparkps.spark.driver.table_staging import staging_folder
from sparkps.spark.driver.tracking import log_fit
from sparkps.spark.driver.training_input import (
    as_rdd,
    frame_input,
    partitioned,
    session_for,
    validation_arrays,
    wide_rows,
)
from sparkps.spark.model.table_rows import INLINE_TABLE_BYTES
from sparkps.spark.task.barrier_task import make_frame_task, make_train_task

REGISTER_SECONDS = 600.0


class SparkTrainer:
    """Distributed training of one network on Spark data.

    ``data_name`` and ``label_name`` are the symbol's input names.  ``timeout`` bounds the whole ``fit``
    (None: no limit); ``timeouts`` (dict of
    ``sparkps.comm.timeouts.Timeouts`` fields: register, request, barrier, heartbeat_interval,
    heartbeat_timeout) bounds each wait of the parameter-server nodes.  ``progress``: True for a bar,
    False for log lines, None to pick a bar on a terminal.  ``checkpoint_dir`` (a path every server can
    write, e.g. a shared mount) gets the servers' weights, optimizer state, sparse tables and each worker's
    position in its data after every epoch and every ``checkpoint_steps`` steps (None: epoch ends only); with
    it, a fit whose worker task or server process dies restarts the stage from the newest complete checkpoint,
    up to ``max_restarts`` times (:mod:`sparkps.spark.driver.restarts`, :mod:`sparkps.runtime.resume`).
    ``kvstore`` is a strategy of :mod:`sparkps.kvstore.strategies` and ``kvstore_params`` its options
    (``{'replicas_to_aggregate': 1}``; an unknown one is a ConfigError naming it); ``gradient_compression``
    is MXNet's ``{'type': '2bit', 'threshold': 0.5}`` or ``{'type': 'fp16'}``.

    ``inputs``: named, typed inputs (a TypedInputs or its ``[(name, columns, 'ids'|'float')]`` parts) instead of one
    data input of ``input_shape`` (None then): ids travel as 64-bit integers, numbers as float32, never packed.
    ``scheduler``: where the scheduler runs: 'driver', 'stage' (rank 0's task hosts it; its address reaches the
    others through ``allGather``) or 'auto' (the driver on classic sessions and on Spark Connect beside a local
    master, else the stage). ``chunk_bytes``: the largest piece of a task's result in a DataFrame stage's output
    (32 MiB: within Spark Connect's message limits).

    With ``inputs`` and sparse tables, the servers write the trained tables at the end of the fit into a staging
    folder (:mod:`sparkps.spark.driver.table_staging`) and the driver receives their manifest, never their rows;
    the model holds them inline when their rows take at most ``inline_table_bytes`` (rows x dim x 4 bytes over
    every table; None: always), else as shard files (docs/tables.md). ``forget_steps`` (None: off, the default): the
    written tables leave out the ids unseen for more than that many steps (a row's last-seen step carries over from
    the model a fit starts from, so an id unseen for several daily fits goes); the model records how many ids were
    added, kept and dropped against its initial model (``SparkModel.table_ids``, docs/warm_start.md).
    """

    def __init__(self, symbol, input_shape, batch_size=128, num_epoch=10, num_workers=2, num_servers=1,
                 kvstore="dist_sync", optimizer="sgd", optimizer_params=None, initializer=None, ctx="cpu",
                 label_name="softmax_label", eval_metric="acc", checkpoint_dir=None, timeout=None,
                 timeouts=None, progress=None, seed=0, blas_threads=1, data_name="data", name=None, patience=2,
                 kvstore_params=None, gradient_compression=None, checkpoint_steps=None, max_restarts=2,
                 inputs=None, curve=None, stop_metric=None, scheduler="auto", chunk_bytes=CHUNK_BYTES,
                 inline_table_bytes=INLINE_TABLE_BYTES, forget_steps=None):
        from sparkps.comm.codec import create_codec
        self.kvstore_params = check_strategy(kvstore, kvstore_params, gradient_compression)
        create_codec(gradient_compression)    # an unknown codec or option fails here, not in a task
        self.gradient_compression = gradient_compression
        checks.check_roles(num_workers, num_servers)
        if int(batch_size) < 1 or int(num_epoch) < 1:
            raise ConfigError("batch_size and num_epoch must be >= 1, got %r and %r" % (batch_size, num_epoch))
        self.symbol_json = symbol if isinstance(symbol, str) else symbol.tojson()
        # named, typed inputs (sparkps.spark.common.typed_inputs): each input a DataFrame column of that name
        # (ids array<bigint>, numbers array<float>), e.g. a CTR network's ids beside its numeric columns
        self.inputs = inputs if inputs is None or isinstance(inputs, TypedInputs) else TypedInputs(inputs)
        if input_shape is None and self.inputs is not None:
            input_shape = (self.inputs.columns,)
        if input_shape is None:
            raise ConfigError("SparkTrainer needs input_shape (e.g. (784,)) or inputs (named, typed inputs)")
        self.input_shape = tuple(int(d) for d in (input_shape if hasattr(input_shape, "__len__")
                                                  else (input_shape,)))
        self.scheduler_placement = checks_placement(scheduler)
        self.chunk_bytes = int(chunk_bytes)
        # a network with sparse tables fed through an input layout (CTR): the servers write the tables at the end;
        # the model holds them inline when their rows take at most this many bytes (rows x dim x 4; None: always),
        # else as shard files (spark/model/table_rows.py)
        self.inline_table_bytes = None if inline_table_bytes is None else int(inline_table_bytes)
        if self.inline_table_bytes is not None and self.inline_table_bytes < 0:
            raise ConfigError("inline_table_bytes must be >= 0 (0: tables always stay shard files), got %r"
                              % (inline_table_bytes,))
        if forget_steps is not None and (isinstance(forget_steps, bool) or int(forget_steps) < 1):
            raise ConfigError("forget_steps must be a whole number of steps >= 1 (None: keep every id), got %r"
                              % (forget_steps,))
        self.forget_steps = None if forget_steps is None else int(forget_steps)
        if self.chunk_bytes < 1:
            raise ConfigError("chunk_bytes must be >= 1, got %r" % (chunk_bytes,))
        self.batch_size, self.num_epoch = int(batch_size), int(num_epoch)
        self.num_workers, self.num_servers = int(num_workers), int(num_servers)
        self.kvstore, self.optimizer = kvstore, optimizer
        self.optimizer_params = dict(optimizer_params or {})
        # unknown names / keys fail here, not in a task; lr/wd multipliers may name the network's parameters
        names = dict(enumerate(argument_names(self.symbol_json)))
        create_optimizer(optimizer, **{"param_idx2name": names, **self.optimizer_params})
        self.initializer, self.ctx, self.label_name, self.data_name = initializer, ctx, label_name, data_name
        self.eval_metric, self.checkpoint_dir = eval_metric, checkpoint_dir
        self.checkpoint_steps, self.max_restarts = checked_restarts(checkpoint_steps, max_restarts)
        self.fault = None             # a test hook: plan["fault"] of sparkps.spark.task.barrier_task.fault_hook
        self.timeout, self.timeouts = timeout, dict(timeouts or {})
        # the barrier stage may queue behind the stages that read and shuffle its input (and executors start
        # Python workers first): registration waits that long; a failed task still ends the fit at once
        self.timeouts.setdefault("register", REGISTER_SECONDS)
        self.progress, self.seed, self.blas_threads = progress, int(seed), blas_threads
        self.patience = int(patience)
        # a network fed through an input layout (CTR) stops early only when given the validation metric to watch
        # ('auc' or 'logloss'); without it its validation rows are scored and recorded, never stopping training
        self.stop_metric = check_stop_metric(stop_metric, self.patience)
        self.curve = None if curve is None else bool(curve)   # None: on when the roles bind beyond loopback
        self.num_classes, self.data_dtype = check_network(self)     # a network that cannot train fails here
        self.model_name = name or network_name(self.symbol_json)
        self.scheduler_uri = None     # the last fit's scheduler address (its nodes name it; None: in the stage)
        self.last_placement = self.last_fit_id = None    # where the last fit's scheduler ran ('driver', 'stage')
        self.last_fit = None          # the last fit's rows per worker and seconds spent in training
        self._local_master = True     # set by fit from the master; a plan made before any fit binds no host
        self._scheduler = None
        self._checkpoints = None                    # a fit's CheckpointFolder (checkpoint_store)
        self._checkpoint_folder = checkpoint_dir    # the local folder its servers checkpoint into

    def fit(self, data, features_col="features", label_col="label", validation=None, weight_col=None,
            resume=False, reader=None, known_rows=None, initial_model=None):
        """Train on ``data`` and return a SparkModel holding the servers' final weights.

        ``data``: an RDD of ``(features, label)`` / LabeledPoint / ``(X_block, y_block)``, or a DataFrame
        (``features_col``, ``label_col``).  ``validation`` (same kind, small: it is collected and shipped to
        every task) turns on early stopping: every worker scores it after each epoch and training stops once
        the validation cross-entropy has not improved for ``patience`` epochs; the model holds the weights
        of the best epoch (``model.best_epoch``), not the last.  ``weight_col`` (a DataFrame's column of
        positive row weights, checked and normalised to mean 1 by the caller, see sparkps.spark.driver.input_rows)
        scales each row's gradient by its weight (sparkps.spark.task.row_weights).  ``resume``: continue a stopped
        job from the newest complete checkpoint in ``checkpoint_dir`` (ConfigError when there is none).

        ``initial_model`` (a SparkModel, or the path of a saved SparkModel or pyspark.ml model) starts the fit from
        that model's weights instead of the initializer's (MXNet's ``arg_params``, xgboost.spark's ``xgb_model``):
        its dense parameters, and every sparse table's rows loaded by the servers from the model's shard files, each
        server reading the rows the current split gives it (another number of servers than the model was trained on
        works), with their occurrence counts and last-seen steps; the optimizer state starts fresh. A model of
        another network (a parameter or table missing or extra, another shape or embedding width) is one
        ConfigError naming it before any Spark job (:mod:`sparkps.spark.driver.initial_model`, docs/warm_start.md).

        A DataFrame (classic or Spark Connect session) trains in one ``mapInArrow(..., barrier=True)`` stage: its
        features column (Vector or array; ``array<bigint>`` for the ids of a hashed table) or, with ``inputs``, one
        column per named input, read as Arrow record batches straight into the batch arrays; ``reader`` (a plain
        object with ``read(record_batch, start) -> (X, y)``, see sparkps.spark.common.arrow_inputs) reads a frame
        whose columns it knows instead (the CTR estimator's featurizer), with ``known_rows`` its row count when the
        caller has checked its labels already. An RDD trains in the RDD barrier stage on a classic session; a Spark
        Connect session has no RDDs (ConfigError saying how to pass a DataFrame).

        Before any task starts it checks the data on the driver (see ``data_checks.check_training_data``: one
        aggregation over a DataFrame's label column) and raises ConfigError / DataError naming the column or input
        row.  Blocks until training ends, a role fails or ``timeout`` passes; raises ConfigError before launching
        when the cluster cannot run the barrier tasks, and ClusterError naming the failed role otherwise (after
        every server process of a local master has ended).  With ``checkpoint_dir``, a dead task or server process
        restarts the stage from the newest checkpoint (shown in the progress, listed in ``last_fit['restarts']`` and
        marked ``restarts`` in the history) up to ``max_restarts`` times; then one ClusterError naming it.
        A ``checkpoint_dir`` on a store (a Spark URI) is written through Spark's Hadoop file systems when the fit
        ends, and refused on a master with executors on other machines (sparkps.spark.driver.checkpoint_store).
        """
        from sparkps.spark.driver.checkpoint_store import CheckpointFolder
        from sparkps.spark.model.storage import is_uri
        session = session_for(data) if is_uri(self.checkpoint_dir or "") else None
        master = cluster_facts(session)[0] if session is not None else None
        with CheckpointFolder(self.checkpoint_dir, session, master, resume) as folder:
            self._checkpoints, self._checkpoint_folder = folder, folder.local
            return self._fit(data, features_col, label_col, validation, weight_col, resume, reader, known_rows,
                             initial_model)

    def _fit(self, data, features_col, label_col, validation, weight_col, resume, reader, known_rows, initial_model):
        """``fit`` with the checkpoints in ``self._checkpoint_folder``, a local folder."""
        from sparkps.runtime.resume import RESUMABLE, check_resumable, latest_checkpoint
        from sparkps.spark.driver.restarts import ProgressLog, Restarts
        if resume:
            check_resumable(self.kvstore)
        point = self._resume_point(resume)
        start = None
        if initial_model is not None:      # checked against the network before any Spark job
            from sparkps.spark.driver.initial_model import StartModel
            start = StartModel.of(initial_model, session_for(data))
            start.check(self)
        # a kvstore type that keeps no weights on the servers cannot continue from their checkpoint
        restartable = self._checkpoint_folder and self.kvstore in RESUMABLE
        session = session_for(data)
        frame = is_frame(data)
        if weight_col and not frame:
            raise ConfigError("weight_col needs a DataFrame; an RDD's rows carry no weight column")
        if reader is not None and not frame:
            raise ConfigError("a reader reads the record batches of a DataFrame; fit got %s" % type(data).__name__)
        if not is_connect(session):
            checks.choose_worker_python(session.sparkContext)
        num_features = int(np.prod(self.input_shape))
        workers, servers = check_training_data(data, features_col, label_col, self.num_workers, self.num_servers,
                                               self.num_classes, num_features, known_rows=known_rows,
                                               typed=reader is not None or self.inputs is not None)
        master, conf, parallelism = cluster_facts(session)
        checks.check_cluster(master, conf, parallelism or workers, workers)
        self._local_master = checks.is_local(master)
        if frame and wide_rows(data, reader or self.inputs, num_features + bool(weight_col)):
            frame = False      # features too wide for dense Arrow batches: rows, densified a mini-batch at a time
        if frame:
            # on a cluster a shuffle's blocks arrive in a varying order: the tasks read dealt rows in a seeded one
            stage = frame_input(data, workers, features_col, label_col, weight_col, reader, *self._input_facts(),
                                order_seed=None if self._local_master else self.seed)
            places = None
        else:
            rdd, places = partitioned(as_rdd(data, features_col, label_col, num_features, weight_col), workers,
                                      tag=not is_frame(data))
            stage = (session.sparkContext, rdd)
        extra = {"row_places": places, "row_weights": bool(weight_col)}
        if weight_col:
            from sparkps.spark.task.row_weights import weighted_symbol
            weighted_symbol(self.symbol_json)     # a head that cannot take weights fails here, not in a task
        if validation is not None:
            extra["validation"] = validation_arrays(validation, features_col, label_col, reader, *self._input_facts())
        if start is not None:       # the dense weights, and the folder of the tables' shard files
            extra["initial"] = start.plan(session, master, servers)
        if self.inputs is not None and self._has_tables():   # the servers write the tables there at the end
            try:
                extra["tables_dir"] = staging_folder(session, master)
            except BaseException:
                if start is not None:
                    start.close()
                raise
        view = ProgressView(self.num_epoch, workers, bar=self.progress, num_servers=servers)
        restarts = Restarts(self.max_restarts if restartable else 0)
        progress = ProgressLog(view, restarts)
        results = None
        try:          # the placement probe is a Spark job of its own: a failure there leaves no staging folder
            reached = tasks_reach(session, checks.scheduler_host(master, conf)) \
                if needs_probe(self.scheduler_placement, is_connect(session), master) else None
            placement = choose_placement(self.scheduler_placement, is_connect(session), master,
                                         connect_host(session) if is_connect(session) else None, reached)
        except BaseException:
            view.close(finished=False)
            remove_staged(extra.get("tables_dir"))
            if start is not None:
                start.close()
            raise
        self.last_placement = placement
        paused = spark_progress_paused(session.sparkContext) if placement == "driver" and not is_connect(session) \
            else contextlib.nullcontext()     # with the scheduler in the stage, Spark's stage progress shows
        try:
            with paused:       # one progress display at a time: ours
                while results is None:
                    try:
                        results = self._run_once(session, stage, workers, servers, dict(extra, resume=point),
                                                 progress, restarts, placement, master, conf)
                    except ClusterError as exc:
                        if not restarts.allowed(exc):
                            self.last_fit = {"restarts": restarts.entries}
                            if not restarts.count:
                                _raise_in_input(exc, data, places)
                                _raise_without_checkpoints(exc, self._checkpoint_folder)
                            raise restarts.give_up(exc) from exc
                        point = latest_checkpoint(self._checkpoint_folder)
                        entry = restarts.record(exc, point, progress)
                        entry["checkpoint"] = self._checkpoints.stored(entry["checkpoint"])   # named as the user did
                        view.note(restarts.describe(entry))
                        progress.forget()
        finally:
            view.close(finished=results is not None)
            self._scheduler = None
            if start is not None:       # an inline initial model's tables, staged as shard files
                start.close()
            if results is None:
                remove_staged(extra.get("tables_dir"))
        if placement == "stage":     # no live progress: the per-epoch history, now
            view.history(merge_histories(results))
        self.last_fit = dict(fit_timings(results, self.batch_size), restarts=restarts.entries, placement=placement,
                             roles=role_hosts(results, placement, checks.scheduler_host(master, conf)))
        try:
            model = trained_model(self, results, point, restarts.entries, extra.get("tables_dir"))
            model.initial_model = None if start is None else start.source
        except BaseException:
            remove_staged(extra.get("tables_dir"))
            raise
        log_early_stop(results)
        log_fit(self.tracked_params(workers, servers), model.history)
        return model

    def _has_tables(self):
        """Whether the network has sparse embedding tables."""
        from sparkps.symbol import load_json
        from sparkps.symbol.ops.embedding import sparse_tables
        return bool(sparse_tables(load_json(self.symbol_json)))

    def _input_facts(self):
        """``(inputs, ids, num_features)``: how the tasks read a DataFrame (see training_input.frame_input)."""
        return self.inputs, self.data_dtype == "int64", int(np.prod(self.input_shape))

    def _resume_point(self, resume):
        """The checkpoint ``fit(resume=True)`` continues from (None without ``resume``)."""
        if not resume:
            return None
        from sparkps.runtime.resume import latest_checkpoint
        if not self.checkpoint_dir:
            raise ConfigError("fit(resume=True) needs checkpoint_dir (the folder of the stopped job's checkpoints)")
        point = latest_checkpoint(self._checkpoint_folder)
        if point is None:
            raise ConfigError("fit(resume=True): no complete checkpoint in %s to resume from" % self.checkpoint_dir)
        return point

    def _run_once(self, session, stage, workers, servers, extra, progress, restarts, placement, master, conf):
        """One attempt: a new scheduler (on the driver, or in the stage by ``placement``) and barrier stage
        (loading ``extra['resume']``, a ResumePoint or None), its status shown through ``progress`` (a
        ProgressLog); returns the tasks' results or raises as ``run_watched`` does. ``stage``: ``(sc, rdd)`` of an
        RDD input, or ``(df, reader)`` of a DataFrame."""
        import uuid

        from sparkps.comm.message import generate_secret
        from sparkps.comm.timeouts import Timeouts
        from sparkps.scheduler import Scheduler
        from sparkps.spark.driver.encryption import fit_curve, warn_unprotected_rpc
        host = checks.scheduler_host(master, conf)
        warn_unprotected_rpc(master, conf)
        curve = fit_curve(self.curve, host if placement == "driver" else
                          ("127.0.0.1" if checks.is_local(master) else "0.0.0.0"))
        scheduler = None
        if placement == "driver":
            scheduler = Scheduler(servers, workers, host=host, timeouts=Timeouts(**self.timeouts), curve=curve)
            scheduler.start()
            self.scheduler_uri, self._scheduler = scheduler.uri, scheduler
            uri, secret = scheduler.uri, scheduler.secret
        else:      # rank 0's task starts it; the secret is made here and travels in the plan
            self.scheduler_uri, uri, secret = None, None, generate_secret()
        fit_id = self.last_fit_id = uuid.uuid4().hex     # in the servers' environment (found after a failure)
        try:
            plan = dict(self._plan(uri, secret, workers, servers), curve=curve, fit_id=fit_id)
            point = extra.pop("resume", None)
            plan.update(extra, resume=point.as_plan() if point else None, attempt=restarts.count)
            if is_frame(stage[0]):
                action = FrameStage(session, stage[0], make_frame_task(plan, stage[1]),
                                    self.describe(workers, servers))
            else:
                action = RddStage(stage[0], stage[1], make_train_task(plan), self.describe(workers, servers))
        except BaseException:
            if scheduler is not None:
                scheduler.stop()
            raise
        progress.view.stage_started()
        return run_watched(action, scheduler, progress, self.timeout, local=same_machine(master), fit_id=fit_id)

    def tracked_params(self, workers, servers):
        """The settings of a fit as MLflow params."""
        return dict({"model": self.model_name, "input_shape": self.input_shape, "batch_size": self.batch_size,
                     "num_epoch": self.num_epoch, "num_workers": workers, "num_servers": servers,
                     "kvstore": self.kvstore, "optimizer": self.optimizer}, **self.optimizer_params)

    def status(self):
        """The running fit's ``scheduler.status()`` (nodes, progress, errors), or None between fits.

        For another thread of the driver; never blocks."""
        scheduler = self._scheduler
        return scheduler.status() if scheduler is not None else None

    def describe(self, workers, servers):
        """The Spark job description of a fit (shown in the Spark UI): model, epochs and roles."""
        return "sparkps: training %s for %d epochs (%d workers, %d servers)" % (
            self.model_name, self.num_epoch, workers, servers)

    def _plan(self, scheduler_uri, secret, num_workers, num_servers):
        """Everything a task needs, as plain values (captured by the task closure instead of ``self``)."""
        return {"scheduler_uri": scheduler_uri, "secret": secret, "num_servers": num_servers,
                "num_workers": num_workers, "kvstore": self.kvstore, "symbol": self.symbol_json,
                "kvstore_params": dict(self.kvstore_params), "compression": self.gradient_compression,
                "input_shape": list(self.input_shape), "num_features": int(np.prod(self.input_shape)),
                "batch_size": self.batch_size, "num_epoch": self.num_epoch, "optimizer": self.optimizer,
                "optimizer_params": dict(self.optimizer_params), "initializer": self.initializer,
                "ctx": self.ctx, "label_name": self.label_name, "data_name": self.data_name,
                "eval_metric": self.eval_metric, "data_dtype": self.data_dtype,
                "checkpoint_dir": self._checkpoint_folder, "timeouts": dict(self.timeouts) or None,
                "checkpoint_steps": self.checkpoint_steps, "fault": self.fault,
                "seed": self.seed, "blas_threads": self.blas_threads, "patience": self.patience,
                "stop_metric": self.stop_metric, "forget_steps": self.forget_steps,
                "inputs": None if self.inputs is None else self.inputs.to_list(), "chunk_bytes": self.chunk_bytes,
                "max_message_bytes": message_limit(self, num_servers),
                "bind_executor_host": not self._local_master}


def _raise_without_checkpoints(exc, checkpoint_dir):
    """A lost executor or a dead role process, in a fit without checkpoints (a restart could have got past it):
    the same error, saying what to set."""
    from sparkps.errors import NodeDied
    from sparkps.spark.driver.restarts import restartable
    lost = isinstance(exc, NodeDied) or re.search(r"executor \S+ was lost|killed by SIG|exited with code", str(exc))
    if checkpoint_dir or not lost or not restartable(exc):    # restartable: a ClusterError, so it has a node
        return
    raise type(exc)("%s; without checkpoints the fit cannot restart from one: set checkpoint_dir (the jobs' "
                    "--checkpoint-dir DIR with --max-restarts N, the estimators' checkpointDir and maxRestarts) to a "
                    "folder every executor can write" % exc, node=exc.node) from exc


def _raise_in_input(exc, data, places):
    """Raise ``exc``; a failed stage that names a row of one input partition is raised naming the row of the
    whole input instead (see sparkps.spark.common.row_places)."""
    if isinstance(exc, StageFailed) and places:
        message = in_input(str(exc), data)
        if message != str(exc):
            raise StageFailed(message, node=exc.node) from None
    raise exc
