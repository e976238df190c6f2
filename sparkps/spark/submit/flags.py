"""The strategy and checkpoint flags of the spark-submit jobs (jobs/train_classifier.py, jobs/train_ctr.py), named
as on ``sparkps launch`` / ``sparkps worker train``, and what they become for SparkTrainer or an estimator.

    add_strategy_flags(parser)
    SparkTrainer(..., **trainer_settings(args))          # or SparkpsCTRClassifier(..., **estimator_settings(args))

An unknown strategy option or a value of the wrong kind is one ConfigError naming it (from ``check_strategy``),
before Spark starts any job.
"""
import argparse
import re

from sparkps.kvstore.strategies import (  # noqa: F401 (SPARSE_STRATEGIES: train_ctr's, imported from here)
    SPARSE_STRATEGIES,
    STRATEGIES,
    STRATEGY_OPTIONS,
    check_strategy,
    parse_options,
)


class DefaultsOnceFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's ArgumentDefaultsHelpFormatter for the jobs' ``--help``: "(default: X)" is added only to a help text
    that does not say its default already (``default 2``, ``default: adam, or the --network file's own``), so each
    flag shows its default once."""

    def _get_help_string(self, action):
        text = action.help or ""
        if re.search(r"\bdefault\b", text, re.IGNORECASE):
            return text
        return super()._get_help_string(action)


def add_strategy_flags(parser, strategies=STRATEGIES):
    """``--kvstore`` (one of ``strategies``, so ``--help`` lists only those and argparse refuses any other with a
    usage error naming the flag), ``--kvstore-param NAME=VALUE`` (repeatable), ``--compression``,
    ``--compression-threshold``, ``--checkpoint-dir``, ``--checkpoint-steps``, ``--max-restarts`` and
    ``--curve/--no-curve`` on an argparse parser."""
    refused = [name for name in STRATEGIES if name not in strategies]
    note = " (%s train on the workers' own weights and cannot train sparse tables)" % " and ".join(refused) \
        if refused else ""
    parser.add_argument("--kvstore", default="dist_sync", choices=strategies, help="distributed strategy" + note)
    options = [option for name in strategies for option in STRATEGY_OPTIONS[name]]
    parser.add_argument("--kvstore-param", dest="kvstore_params", action="append", default=[], metavar="NAME=VALUE",
                        help="a strategy option: %s (repeatable)" % ", ".join(options))
    parser.add_argument("--compression", choices=["fp16", "2bit"], help="compress pushed gradients")
    parser.add_argument("--compression-threshold", type=float, default=0.5, help="2bit: the threshold t")
    parser.add_argument("--checkpoint-dir", help="folder every server can write: checkpoints after each epoch; a fit "
                                                 "whose task or server dies restarts from the newest one (a store's "
                                                 "URI: copied there when the fit ends, on local masters only)")
    parser.add_argument("--checkpoint-steps", type=int, help="also checkpoint every N steps")
    parser.add_argument("--max-restarts", type=int, default=2, help="restarts before the fit fails (default 2)")
    parser.add_argument("--curve", dest="curve", action="store_true", default=None,
                        help="encrypt the parameter-server traffic with CURVE (default: on whenever the roles bind "
                             "an address other than loopback, as on a cluster)")
    parser.add_argument("--no-curve", dest="curve", action="store_false", default=argparse.SUPPRESS,
                        help="never encrypt it")


def add_session_flags(parser):
    """``--remote sc://HOST:PORT`` (a Spark Connect server to run on; default SPARK_REMOTE) and ``--scheduler
    auto|driver|stage`` (where the fit's scheduler runs) on an argparse parser."""
    parser.add_argument("--remote", default=None, metavar="sc://HOST:PORT",
                        help="run on this Spark Connect server (default: SPARK_REMOTE when set); --master is then "
                             "the server's")
    parser.add_argument("--scheduler", default="auto", choices=["auto", "driver", "stage"],
                        help="where the scheduler runs: auto (on the driver when the tasks can connect back to it, "
                             "else inside the stage), driver or stage (default: %(default)s)")


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
            "max_restarts": args.max_restarts, **curve_settings(args), **scheduler_settings(args)}


def estimator_settings(args):
    """The estimators' params of the flags (``kvstore``, ``kvstoreParams``, ... ``maxRestarts``), checked."""
    trainer_settings(args)
    return {"kvstore": args.kvstore, "kvstoreParams": list(args.kvstore_params),
            "gradientCompression": args.compression or "", "compressionThreshold": args.compression_threshold,
            "checkpointDir": args.checkpoint_dir or "", "checkpointSteps": args.checkpoint_steps or 0,
            "maxRestarts": args.max_restarts, **estimator_curve(args),
            **estimator_placement(args)}


def estimator_placement(args):
    """The estimators' ``schedulerPlacement`` param of ``--scheduler`` (``{}`` for a parser without the flag)."""
    placement = getattr(args, "scheduler", None)
    return {} if placement is None else {"schedulerPlacement": placement}


def scheduler_settings(args):
    """SparkTrainer's ``scheduler`` of ``--scheduler`` (``{}`` for a parser without the flag)."""
    placement = getattr(args, "scheduler", None)
    return {} if placement is None else {"scheduler": placement}


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
