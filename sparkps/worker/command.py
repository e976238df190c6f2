"""What ``sparkps worker train`` runs: one worker of a distributed job, living the life of
:mod:`sparkps.worker.lifecycle` (register -> resume from checkpoint -> fit -> report -> close) on a data file.

It registers with the scheduler (through ``sparkps.kvstore.create('dist_sync'|'dist_async')``), reads
shard ``rank`` of ``num_workers`` of a LibSVM or CSV file, trains the symbol with
``FeedForward.fit(..., kvstore=kv)`` and, with ``save_prefix``, rank 0 writes ``PREFIX-symbol.json`` and
``PREFIX-%04d.params`` holding the final weights pulled from the servers (``FeedForward.load(PREFIX, E)``).
"""
import logging
import os
from dataclasses import dataclass, field

from sparkps.errors import ConfigError, DataError
from sparkps.worker.lifecycle import Checkpoints, default_initializer, run_worker

log = logging.getLogger(__name__)
INITIALIZERS = ("xavier", "uniform", "normal")


@dataclass
class TrainConfig:
    """Everything one training worker needs; the CLI fills it from its options."""

    symbol: str
    data: str
    data_format: str = "auto"
    num_features: int = None
    label_column: int = 0
    batch_size: int = 64
    epochs: int = 10
    optimizer: str = "sgd"
    lr: float = 0.1
    momentum: float = None
    wd: float = None
    initializer: str = "xavier"
    seed: int = None
    save_prefix: str = None
    eval_data: str = None
    compression: object = None   # None, 'fp16' or {'type': '2bit', 'threshold': t}
    optimizer_params: dict = field(default_factory=dict)
    checkpoint_dir: str = None   # worker 0 has the servers save here (sparkps.runtime.resume)
    checkpoint_steps: int = None  # every N steps too (None: at epoch ends only)
    resume_from: str = None      # a checkpoint folder to continue from (every worker gets the same)
    initial_model: str = None    # a saved model to start from (docs/warm_start.md): its weights, its tables' rows

    def format_of(self, path):
        """The format of ``path`` by the rule the Spark job uses too (sparkps.io.formats); the CLI
        reads files line by line, so only libsvm and CSV."""
        from sparkps.io.formats import detect_format
        kind = detect_format(path, self.data_format)
        if kind not in ("libsvm", "csv"):
            raise DataError("%s is %s; the CLI reads libsvm and CSV files (the Spark job, "
                            "jobs/train_classifier.py, reads %s too)" % (path, kind, kind))
        return kind


def read_shard(config, path, part_index, num_parts):
    """(X, y) of shard ``part_index`` of ``num_parts`` of ``path``; an empty shard is a DataError."""
    from sparkps.io.readers import read_csv, read_libsvm
    if not os.path.exists(path):
        raise DataError("data file %s does not exist" % path)
    if config.format_of(path) == "csv":
        X, y = read_csv(path, label_column=config.label_column, part_index=part_index, num_parts=num_parts)
    else:
        X, y = read_libsvm(path, num_features=config.num_features, part_index=part_index, num_parts=num_parts)
    if len(y) == 0:
        raise DataError("%s: shard %d of %d holds no rows" % (path, part_index, num_parts))
    return X, y


def load_symbol(path):
    """The network saved as JSON at ``path``."""
    from sparkps.symbol import load_json
    try:
        with open(path, encoding="utf-8") as handle:
            return load_json(handle.read())
    except OSError as exc:
        raise ConfigError("cannot read the symbol file %s: %s" % (path, exc)) from None


def make_initializer(name, seed):
    from sparkps import initializer
    if name not in INITIALIZERS:
        raise ConfigError("unknown initializer %r (use %s)" % (name, ", ".join(INITIALIZERS)))
    if name == "xavier":
        return default_initializer()
    return initializer.Uniform(0.07) if name == "uniform" else initializer.Normal(0.01)


def build_model(config, symbol):
    from sparkps.train.feedforward import FeedForward
    params = dict(config.optimizer_params, learning_rate=config.lr)
    if config.momentum is not None:
        params["momentum"] = config.momentum
    if config.wd is not None:
        params["wd"] = config.wd
    return FeedForward(symbol, num_epoch=config.epochs, optimizer=config.optimizer, numpy_batch_size=config.batch_size,
                       initializer=make_initializer(config.initializer, config.seed), seed=config.seed, **params)


def start_from_model(config, model, symbol, kv, start, num_features):
    """Start ``model`` (a FeedForward of ``symbol``) from the saved model ``config.initial_model``: its dense weights
    (worker 0's initialise the servers), and, when its tables are shard files, the servers load their rows (the
    launcher started them with ``SPARKPS_START_TABLES``) once the optimizer is set, unless a checkpoint is resumed.
    ConfigError naming the parameter or table that does not fit ``symbol`` fed ``num_features`` columns, or the
    model when its tables are inline (a distributed table starts from shard files only)."""
    from sparkps.rows.values import RowSparse
    from sparkps.train.start_model import check_start, read_start_model
    initial = read_start_model(config.initial_model)
    what = "initial model %s" % config.initial_model
    labels = [name for name in symbol.list_arguments() if name.endswith("label")]
    check_start(what, initial.symbol, initial.arg_params, initial.aux_params, symbol,
                {"data": (config.batch_size, int(num_features))}, labels)
    inline = sorted(n for n, v in initial.arg_params.items() if isinstance(v, RowSparse))
    if inline:
        raise ConfigError("%s holds its tables %s inline; the servers load a table from shard files: save it with "
                          "SparkModel.with_sharded_tables(path) and start from that path" % (what, inline))
    model.arg_params, model.aux_params = dict(initial.arg_params), dict(initial.aux_params)
    if initial.tables and not start.resuming:
        kv.start_from_tables()


def epoch_logger(rank):
    """The logger ``fit`` reports epochs on: worker 0's lines (metrics, samples/s) reach stderr even at the
    default log level, so a launched job shows its progress; other workers follow the root level."""
    logger = logging.getLogger("sparkps.train.worker%d" % rank)
    if rank == 0 and not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
        logger.setLevel(min(logging.INFO, logging.getLogger().getEffectiveLevel()))
        logger.propagate = False
    return logger


def train(config, kv, start):
    """Train on ``kv``'s shard of the data from ``start`` (a lifecycle.Start); returns the fitted model.  Blocks
    on the kvstore's waits."""
    symbol = load_symbol(config.symbol)
    X, y = read_shard(config, config.data, kv.rank, kv.num_workers)
    eval_data = None
    if config.eval_data:
        eval_data = read_shard(config, config.eval_data, 0, 1)
    log.info("worker %d: %d rows of %s (shard %d of %d)", kv.rank, len(y), config.data, kv.rank, kv.num_workers)
    model = build_model(config, symbol)
    if config.initial_model:
        start_from_model(config, model, symbol, kv, start, X.shape[1])
    if start.resuming:      # the rows as FeedForward.fit iterates numpy rows, fast-forwarded past the trained steps
        from sparkps.io import NDArrayIter
        X, y = start.skip(NDArrayIter(X, y, min(len(y), config.batch_size), shuffle=True,
                                      last_batch_handle="roll_over", seed=config.seed)), None
        model.begin_epoch = start.begin_epoch
    try:
        model.fit(X, y, eval_data=eval_data, kvstore=kv, logger=epoch_logger(kv.rank), **start.callbacks())
    except DataError as exc:        # a bad label of this shard: named by its file line
        from sparkps.io.readers import with_file_line
        raise with_file_line(exc, config.data, kv.rank, kv.num_workers, config.format_of(config.data) == "csv") \
            from None
    if config.save_prefix and kv.rank == 0:
        directory = os.path.dirname(os.path.abspath(config.save_prefix))
        os.makedirs(directory, exist_ok=True)
        model.save(config.save_prefix, config.epochs)
        log.info("worker 0: saved %s-symbol.json and %s-%04d.params", config.save_prefix, config.save_prefix,
                 config.epochs)
    return model


def checkpoints(config):
    """The worker's lifecycle.Checkpoints: ``resume_from`` (a checkpoint folder, read once registered) and
    ``checkpoint_dir`` / ``checkpoint_steps`` (worker 0 saves every N steps and at each epoch end)."""
    return Checkpoints(config.resume_from or None, config.checkpoint_dir, config.checkpoint_steps)


def run(config, kvstore="dist_sync", scheduler_uri=None, secret=None, rank=None, timeouts=None, curve=False,
        kvstore_params=None):
    """Register, train and finish one worker (:func:`sparkps.worker.lifecycle.run_worker`).  Any error is
    reported to the scheduler (so the whole job stops at once with it) and re-raised.  Blocks at most the
    registration timeout to register.  ``kvstore`` is a strategy of :mod:`sparkps.kvstore.strategies`,
    ``kvstore_params`` its options."""
    from sparkps import kvstore as kvstore_mod
    from sparkps.kvstore.strategies import check_strategy
    strategy = check_strategy(kvstore, kvstore_params, config.compression)

    def register():
        return kvstore_mod.create(kvstore, scheduler_uri=scheduler_uri, secret=secret, rank=rank, timeouts=timeouts,
                                  compression=config.compression, curve=curve, **strategy)
    return run_worker(register, lambda kv, start: train(config, kv, start), checkpoints=checkpoints(config))
