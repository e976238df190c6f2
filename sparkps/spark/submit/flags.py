"""The strategy and checkpoint flags of the spark-submit jobs (jobs/train_classifier.py, jobs/train_ctr.py), named
as on ``sparkps launch`` / ``sparkps worker train``, and what they become for SparkTrainer or an estimator.

    add_strategy_flags(parser)
    SparkTrainer(..., **trainer_settings(args))          # or SparkpsCTRClassifier(..., **estimator_settings(args))

An unknown strategy option or a value of the wrong kind is one ConfigError naming it (from ``check_strategy``),
before Spark starts any job.
"""
from sparkps.kvstore.strategies import OPTION_NAMES, STRATEGIES, check_strategy, parse_options


def add_strategy_flags(parser):
    """``--kvstore``, ``--kvstore-param NAME=VALUE`` (repeatable), ``--compression``, ``--compression-threshold``,
    ``--checkpoint-dir``, ``--checkpoint-steps``, ``--max-restarts`` and ``--curve/--no-curve`` on an argparse
    parser."""
    parser.add_argument("--kvstore", default="dist_sync", choices=STRATEGIES, help="distributed strategy")
    parser.add_argument("--kvstore-param", dest="kvstore_params", action="append", default=[], metavar="NAME=VALUE",
                        help="a strategy option: %s (repeatable)" % ", ".join(OPTION_NAMES))
    parser.add_argument("--compression", choices=["fp16", "2bit"], help="compress pushed gradients")
    parser.add_argument("--compression-threshold", type=float, default=0.5, help="2bit: the threshold t")
    parser.add_argument("--checkpoint-dir", help="folder every server can write: checkpoints after each epoch; a fit "
                                                 "whose task or server dies restarts from the newest one")
    parser.add_argument("--checkpoint-steps", type=int, help="also checkpoint every N steps")
    parser.add_argument("--max-restarts", type=int, default=2, help="restarts before the fit fails (default 2)")
    parser.add_argument("--curve", dest="curve", action="store_true", default=None,
                        help="encrypt the parameter-server traffic with CURVE (default: on whenever the roles bind "
                             "an address other than loopback, as on a cluster)")
    parser.add_argument("--no-curve", dest="curve", action="store_false", help="never encrypt it")


def _compression(args):
    if not args.compression:
        return None
    return {"type": "2bit", "threshold": args.compression_threshold} if args.compression == "2bit" \
        else {"type": args.compression}


def trainer_settings(args):
    """SparkTrainer's keyword arguments of the flags, the strategy checked first."""
    compression = _compression(args)
    options = check_strategy(args.kvstore, parse_options(args.kvstore_params), compression)
    return {"kvstore": args.kvstore, "kvstore_params": options, "gradient_compression": compression,
            "checkpoint_dir": args.checkpoint_dir, "checkpoint_steps": args.checkpoint_steps,
            "max_restarts": args.max_restarts, **curve_settings(args)}


def estimator_settings(args):
    """The estimators' params of the flags (``kvstore``, ``kvstoreParams``, ... ``maxRestarts``), checked."""
    trainer_settings(args)
    return {"kvstore": args.kvstore, "kvstoreParams": list(args.kvstore_params),
            "gradientCompression": args.compression or "", "compressionThreshold": args.compression_threshold,
            "checkpointDir": args.checkpoint_dir or "", "checkpointSteps": args.checkpoint_steps or 0,
            "maxRestarts": args.max_restarts, **estimator_curve(args)}


def curve_settings(args):
    """SparkTrainer's ``curve`` of ``--curve`` / ``--no-curve`` (``{}`` without either: decided by the bind
    address)."""
    curve = getattr(args, "curve", None)
    return {} if curve is None else {"curve": curve}


def estimator_curve(args):
    """The estimators' ``curve`` param of ``--curve`` / ``--no-curve``, for ``estimator.setParams(**...)``:
    ``{"curve": "on" | "off"}``, ``{}`` without either (the param's default, auto)."""
    curve = getattr(args, "curve", None)
    return {} if curve is None else {"curve": "on" if curve else "off"}
