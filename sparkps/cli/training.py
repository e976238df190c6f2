"""The training commands: ``sparkps worker train`` (one worker of a job, sparkps.worker.command), ``sparkps launch``
(a whole local cluster running ``train`` on its workers) and ``sparkps compact-checkpoint``."""
import os
import sys

import click

from sparkps.cli.options import (
    check_symbol_file,
    default_status_file,
    make_timeouts,
    node_options,
    reports_errors,
    timeout_options,
)
from sparkps.comm import settings
from sparkps.errors import ConfigError
from sparkps.kvstore.strategies import OPTION_NAMES, STRATEGIES


@click.group()
def worker():
    """Worker commands (see `sparkps worker train --help`)."""


@worker.command()
@node_options
@click.option("--kvstore", type=click.Choice(STRATEGIES), default="dist_sync", show_default=True,
              help="Distributed strategy (see sparkps.kvstore.strategies).")
@click.option("--kvstore-param", "kvstore_params", multiple=True, metavar="NAME=VALUE",
              help="A strategy option: %s (repeatable)." % ", ".join(OPTION_NAMES))
@click.option("--symbol", "symbol_file", type=click.Path(exists=True, dir_okay=False), required=True,
              help="Network as symbol JSON (see `sparkps symbol mlp`).")
@click.option("--data", type=click.Path(exists=True, dir_okay=False), required=True,
              help="Training data; each worker reads shard RANK of NUM_WORKERS.")
@click.option("--format", "data_format", type=click.Choice(["auto", "libsvm", "csv"]), default="auto",
              show_default=True, help="Data format (auto: from the content; see sparkps.io.formats).")
@click.option("--num-features", type=click.IntRange(min=1), help="LibSVM feature count (default: largest index).")
@click.option("--label-column", type=int, default=0, show_default=True, help="CSV column holding the label.")
@click.option("--eval-data", type=click.Path(exists=True, dir_okay=False), help="Validation data scored each epoch.")
@click.option("--batch-size", type=click.IntRange(min=1), default=64, show_default=True, help="Rows per step.")
@click.option("--epochs", type=click.IntRange(min=1), default=10, show_default=True, help="Passes over the shard.")
@click.option("--optimizer", default="sgd", show_default=True, help="sgd, nag, adam, adagrad, rmsprop, ...")
@click.option("--lr", type=click.FloatRange(min=0, min_open=True), default=0.1, show_default=True,
              help="Learning rate.")
@click.option("--momentum", type=click.FloatRange(min=0, max=1), help="Momentum (sgd, nag).")
@click.option("--wd", type=click.FloatRange(min=0), help="Weight decay.")
@click.option("--initializer", type=click.Choice(["xavier", "uniform", "normal"]), default="xavier",
              show_default=True, help="Weight initializer.")
@click.option("--seed", type=int, help="Seed of initialisation and shuffling.")
@click.option("--compression", type=click.Choice(["fp16", "2bit"]), help="Compress pushed gradients.")
@click.option("--compression-threshold", type=click.FloatRange(min=0, min_open=True), default=0.5, show_default=True,
              help="2bit: gradients are sent as -T, 0 or +T; the rest is carried to the next push.")
@click.option("--save", "save_prefix", help="Rank 0 writes PREFIX-symbol.json and PREFIX-%04d.params.")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False),
              help="Rank 0 has the servers checkpoint here at each epoch end (weights, optimizer state, positions).")
@click.option("--checkpoint-steps", type=click.IntRange(min=1), help="Also checkpoint every N steps.")
@click.option("--resume-from", type=click.Path(exists=True, file_okay=False),
              help="Continue from this checkpoint folder (what `launch --resume` passes every worker).")
@click.option("--initial-model", help="Start from this saved model: a SparkModel folder or a checkpoint PREFIX "
              "(what --save writes); its weights and tables' rows, fresh optimizer state (docs/warm_start.md).")
@timeout_options
@reports_errors("worker train")
def train(scheduler_uri, secret, rank, curve, kvstore, kvstore_params, symbol_file, data, data_format, num_features,
          label_column, eval_data, batch_size, epochs, optimizer, lr, momentum, wd, initializer, seed, compression,
          compression_threshold, save_prefix, checkpoint_dir, checkpoint_steps, resume_from, initial_model, **kw):
    """Train a network as one worker of a job: register, fit on this worker's shard, finish.

    Any failure is reported to the scheduler, which stops the whole job with it.
    """
    from sparkps.kvstore.strategies import check_strategy, parse_options
    from sparkps.worker import command as train_worker
    check_symbol_file(symbol_file)
    if compression == "2bit":
        compression = {"type": "2bit", "threshold": compression_threshold}
    strategy = check_strategy(kvstore, parse_options(kvstore_params), compression)
    config = train_worker.TrainConfig(
        symbol=symbol_file, data=data, data_format=data_format, num_features=num_features,
        label_column=label_column, batch_size=batch_size, epochs=epochs, optimizer=optimizer, lr=lr,
        momentum=momentum, wd=wd, initializer=initializer, seed=seed, save_prefix=save_prefix,
        eval_data=eval_data, compression=compression, checkpoint_dir=checkpoint_dir,
        checkpoint_steps=checkpoint_steps, resume_from=resume_from, initial_model=initial_model)
    if resume_from:
        from sparkps.runtime.resume import check_resumable
        check_resumable(kvstore)
    train_worker.run(config, kvstore=kvstore, scheduler_uri=settings.resolve_scheduler_uri(scheduler_uri),
                     secret=settings.resolve_secret(secret), rank=rank, timeouts=make_timeouts(kw),
                     curve=bool(settings.resolve_curve(curve)),
                     kvstore_params=strategy)


def launch_frame_limit(train_params, num_servers):
    """The frame limit of a launched job, sized from the network it trains (``worker.frame_limit``) as Spark fits
    are: its symbol fed ``(batch_size, num_features)`` rows; None (the default stays) when
    ``--num-features`` is not given (a libsvm file's width is only known once read) or the shapes do not fit."""
    from sparkps.errors import ShapeError
    from sparkps.worker.frame_limit import symbol_file_message_limit
    if not train_params.get("num_features"):
        return None
    try:
        return symbol_file_message_limit(train_params["symbol_file"], train_params["batch_size"],
                                         train_params["num_features"], num_servers)
    except (ShapeError, ConfigError):
        return None


def start_tables_env(train_params):
    """``{"SPARKPS_START_TABLES": folder}`` for the roles of a launched job whose workers start from a model whose
    tables are shard files (``train --initial-model``; its servers load their rows from that folder), else ``{}``.
    A path that holds no model, or a model that does not fit the network (checked when ``--num-features`` is given),
    is one ConfigError naming it, before any role starts."""
    if not train_params.get("initial_model"):
        return {}
    from sparkps.train.start_model import check_start, read_start_model
    from sparkps.worker.command import load_symbol
    path = train_params["initial_model"]
    start = read_start_model(path)
    if train_params.get("num_features"):
        net = load_symbol(train_params["symbol_file"])
        check_start("initial model %s" % path, start.symbol, start.arg_params, start.aux_params, net,
                    {"data": (train_params["batch_size"], train_params["num_features"])},
                    [name for name in net.list_arguments() if name.endswith("label")])
    return {"SPARKPS_START_TABLES": os.path.abspath(start.tables)} if start.tables else {}


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-s", "--num-servers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of servers.")
@click.option("-w", "--num-workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of workers.")
@click.option("--kvstore", type=click.Choice(STRATEGIES), default="dist_sync", show_default=True,
              help="Distributed strategy; its options go to train (--kvstore-param NAME=VALUE).")
@click.option("--curve/--no-curve", default=None,
              help="Encrypt traffic with CURVE (default: SPARKPS_CURVE, else off).")
@click.option("--grace", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Seconds between SIGTERM and SIGKILL when stopping the roles.")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False),
              help="Checkpoint folder: worker 0 has the servers save here at each epoch end (and every "
                   "--checkpoint-steps); a job whose role dies restarts from the newest checkpoint.")
@click.option("--checkpoint-steps", type=click.IntRange(min=1), help="Also checkpoint every N steps.")
@click.option("--resume", is_flag=True, help="Continue a stopped job from the newest checkpoint in --checkpoint-dir.")
@click.option("--max-restarts", type=click.IntRange(min=0), default=2, show_default=True,
              help="With --checkpoint-dir: restarts of the whole cluster after a role dies.")
@click.option("--status-file", type=click.Path(dir_okay=False),
              help="Where to write the scheduler address and secret (mode 0600) for `sparkps status` "
                   "[default: SPARKPS_STATUS_FILE or ~/.sparkps/launch-status.json].")
@timeout_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@reports_errors("launch")
def launch(num_servers, num_workers, kvstore, curve, grace, checkpoint_dir, checkpoint_steps, resume, max_restarts,
           status_file, command, **kw):
    """Start a scheduler, servers and workers on 127.0.0.1 as subprocesses and run COMMAND on the workers.

    COMMAND is what follows `--`: `train ...` with the options of `sparkps worker train` (each worker
    reads its own shard of the data file).  Exits 0 when every role exited 0; otherwise prints which
    role failed and why and exits 1.  No process is left behind, also on Ctrl-C or SIGTERM.

    Example: sparkps launch -s 2 -w 2 -- train --symbol net.json --data train.libsvm --num-features 64
    """
    from sparkps.runtime.launcher import LocalCluster
    if command[0] != "train":
        raise ConfigError("the launcher runs `train ...` on the workers, got %r" % " ".join(command))
    train_context = train.make_context("sparkps launch -- train", list(command[1:]))  # bad options: fail now
    check_symbol_file(train_context.params["symbol_file"])
    from sparkps.kvstore.strategies import check_strategy, parse_options
    check_strategy(kvstore, parse_options(train_context.params["kvstore_params"]), train_context.params["compression"])
    env, limit = dict(os.environ), launch_frame_limit(train_context.params, num_servers)
    env.update(start_tables_env(train_context.params))
    if limit is not None and not env.get("SPARKPS_MAX_MESSAGE_BYTES"):   # the environment wins
        env["SPARKPS_MAX_MESSAGE_BYTES"] = str(limit)                   # every role's sockets
    cluster = LocalCluster(num_servers, num_workers, list(command), kvstore=kvstore,
                           curve=bool(settings.resolve_curve(curve)), env=env,
                           timeouts=make_timeouts(kw), grace=grace)
    if checkpoint_dir or resume:
        cluster.set_checkpoints(checkpoint_dir, checkpoint_steps, resume, max_restarts)
    cluster.pids_file = os.environ.get("SPARKPS_LAUNCH_PIDS_FILE")
    cluster.status_file = status_file or default_status_file()
    sys.exit(cluster.run())


@click.command("compact-checkpoint")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--table", "tables", multiple=True, metavar="NAME",
              help="Compact only this sparse table (repeatable; default: every table of the checkpoint).")
@click.option("--files", "num_files", type=click.IntRange(min=1),
              help="Files per table in the new base (default: as many as its latest save has).")
@reports_errors("compact-checkpoint")
def compact_checkpoint(directory, tables, num_files):
    """Merge the incremental saves of a checkpoint's sparse tables into one base per table.

    DIRECTORY is a kvstore checkpoint (manifest.json and its files, as `save_checkpoint` writes them).  The
    new base loads onto any number of servers to the same rows, optimizer state and counters as the base and
    deltas it replaces, which are removed once the manifest names the new files.  Run it while no job saves
    into DIRECTORY; a running job can ask its servers instead (DistKVStore.compact_checkpoint).
    """
    from sparkps.server.tables.sparse_checkpoint import compact_checkpoint as compact
    report = compact(directory, tables=list(tables) or None, num_files=num_files)
    if not report:
        click.echo("%s: every table is one base already" % directory)
    for name, done in sorted(report.items()):
        click.echo("table %s: %d generations -> 1 base of %d rows in %d files"
                   % (name, done["generations"], done["rows"], len(done["files"])))
