"""The jobs' settings checked before Spark starts or reads any data, and the exit code of a failure.

    check_ctr_settings(args)             # model name, network file, numbers, roles: ConfigError naming the flag
    args.num_workers, args.num_servers = checks.workers_for_slots(master_of(args.master), ...)   # driver.checks
    ...
    except SparkpsError as exc:
        return exit_code(exc)            # 2: bad input or usage; 1: a failure while training

Nothing here starts a JVM: the master is the one spark-submit gave (read through its gateway, already running) or
``--master``; task slots are counted only for local masters, whose brackets say them.
"""
import os

from sparkps.errors import ConfigError, DataError, ShapeError

BAD_INPUT = 2        # bad input data, a bad flag or setting: the same command will fail again
TRAINING_FAILED = 1  # a failure while training (a role died, a timeout): a retry may succeed


def exit_code(exc):
    """2 for bad input or usage (ConfigError, DataError, ShapeError, a missing file), 1 for anything else."""
    return BAD_INPUT if isinstance(exc, (ConfigError, DataError, ShapeError, FileNotFoundError)) \
        else TRAINING_FAILED


def master_of(flag, default="local[2]", remote=None):
    """The master the job will run on: ``remote`` (a Spark Connect URL: its server's master, not known here),
    else spark-submit's (when it started this driver) else ``flag`` or ``default``.  Blocks only for a query to
    spark-submit's running JVM, never to start one."""
    if remote:
        return remote
    if os.environ.get("PYSPARK_GATEWAY_PORT"):
        from sparkps.spark.submit.session import submitted_conf
        submitted = submitted_conf().get("spark.master")
        if submitted:
            return submitted
    return flag or default


def positive(args, *names):
    """ConfigError naming the flag whose value is set and not > 0."""
    for name in names:
        value = getattr(args, name.replace("-", "_"))
        if value is not None and not value > 0:
            raise ConfigError("--%s must be > 0, got %r" % (name, value))


def check_ctr_settings(args):
    """train_ctr's settings, before Spark: the zoo model or the Angel network file (loaded and checked), the
    numbers, the hidden units and the held-out fraction.  ConfigError naming the flag."""
    from sparkps.nets import zoo
    positive(args, "epochs", "batch-size", "lr", "embedding-dim", "num-workers", "num-servers")
    if args.network:
        from sparkps.nets import angel_json
        if not os.path.isfile(args.network):
            raise ConfigError("--network %s: no such file" % args.network)
        angel_json.load(args.network)      # validated whole: sections, layers, wiring, widths
        if args.numeric_cols:
            raise ConfigError("--network %s: Angel networks read feature indices only; drop --numeric-cols %s"
                              % (args.network, args.numeric_cols))
    elif str(args.model).lower() not in zoo.names():
        raise ConfigError("--model %r is not a zoo model; known: %s (or --network FILE.json)"
                          % (args.model, ", ".join(zoo.names())))
    try:
        units = [int(h) for h in args.hidden_units.split(",") if h.strip()]
    except ValueError:
        raise ConfigError("--hidden-units must be comma-separated integers, got %r" % args.hidden_units) from None
    if any(u < 1 for u in units):
        raise ConfigError("--hidden-units must be positive, got %r" % args.hidden_units)
    if not 0.0 <= args.validation_fraction < 1.0:
        raise ConfigError("--validation-fraction must be in [0, 1), got %r" % args.validation_fraction)
    check_regularisation_flags(args)


def check_regularisation_flags(args):
    """--early-stopping-patience (needs --validation-fraction), --embedding-l2 and --dropout (zoo models only):
    ConfigError naming the flag. Flags a job does not have are skipped."""
    patience = getattr(args, "early_stopping_patience", 0) or 0
    if patience < 0:
        raise ConfigError("--early-stopping-patience must be >= 0 (0: off), got %r" % patience)
    if patience and not args.validation_fraction:
        raise ConfigError("--early-stopping-patience %d needs held-out rows to score: give --validation-fraction "
                          "(e.g. 0.1)" % patience)
    l2, dropout = getattr(args, "embedding_l2", 0.0) or 0.0, getattr(args, "dropout", 0.0) or 0.0
    if not l2 >= 0.0:
        raise ConfigError("--embedding-l2 must be >= 0, got %r" % l2)
    if not 0.0 <= dropout < 1.0:
        raise ConfigError("--dropout must be in [0, 1), got %r" % dropout)
    if args.network and (l2 or dropout):
        raise ConfigError("--network %s: --embedding-l2 and --dropout apply to zoo models; an Angel network sets its "
                          "own regularisation (each layer's reg2)" % args.network)


def check_input_paths(**paths):
    """DataError naming the flag whose local input (no ``scheme://``) does not exist; ``paths`` maps flag names
    (``train``, ``test``) to paths, None where not given."""
    for flag, path in paths.items():
        if not path:
            continue
        local = path[len("file:"):] if path.startswith("file:") else path
        if "://" in path and not path.startswith("file:"):
            continue
        if not os.path.exists(local):
            raise DataError("--%s %s: no such file or folder" % (flag.replace("_", "-"), path))


def read_symbol_file(path, flag="--symbol"):
    """The text of a symbol JSON file, checked: ConfigError naming ``flag`` and the file when it is missing or
    not a sparkps/MXNet symbol document (say, an Angel network), saying what was expected."""
    from sparkps.symbol import load_json
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise ConfigError("%s %s: %s" % (flag, path, exc.strerror or exc)) from None
    try:
        load_json(text)
    except ConfigError as exc:
        raise ConfigError("%s %s: expected a symbol JSON document (an object with 'nodes' and 'heads', as "
                          "`sparkps symbol mlp` writes); %s" % (flag, path, exc)) from None
    return text
