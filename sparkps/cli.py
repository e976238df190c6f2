"""The ``sparkps`` command: run a scheduler, a server or a training worker, ask for status, or launch a
whole local cluster.  Settings fall back to ps-lite-style environment variables (SPARKPS_ROLE,
SPARKPS_SCHEDULER_URI, SPARKPS_SCHEDULER_PORT, SPARKPS_NUM_SERVER, SPARKPS_NUM_WORKER, SPARKPS_SECRET,
SPARKPS_RANK, SPARKPS_CURVE); the secret is never needed on a command line.
"""
import functools
import json
import logging
import os
import sys

import click
import numpy as np

from sparkps.comm import settings
from sparkps.errors import ConfigError, SparkpsError
from sparkps.kvstore.strategies import OPTION_NAMES, STRATEGIES


def timeout_options(function):
    """Options for the Timeouts of a node (seconds)."""
    options = [
        click.option("--register-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
                     show_default=True, help="Seconds to wait for every node to register."),
        click.option("--request-timeout", type=click.FloatRange(min=0, min_open=True), default=60.0,
                     show_default=True, help="Seconds to wait for a reply."),
        click.option("--heartbeat-interval", type=click.FloatRange(min=0, min_open=True), default=1.0,
                     show_default=True, help="Seconds between heartbeats."),
        click.option("--heartbeat-timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
                     show_default=True, help="A node silent this long is dead (its job fails)."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


def make_timeouts(kw):
    from sparkps.comm.timeouts import Timeouts
    return Timeouts(register=kw.pop("register_timeout"), request=kw.pop("request_timeout"),
                    heartbeat_interval=kw.pop("heartbeat_interval"), heartbeat_timeout=kw.pop("heartbeat_timeout"))


def node_options(function):
    """--scheduler/--secret/--rank/--curve, read from the SPARKPS_* environment when absent."""
    curve_help = "Encrypt traffic with CURVE (every node of the job must agree). [SPARKPS_CURVE]"
    function = click.option("--curve/--no-curve", default=False, envvar="SPARKPS_CURVE", show_default=True,
                            help=curve_help)(function)
    function = click.option("--rank", type=click.IntRange(min=0), envvar="SPARKPS_RANK",
                            help="Rank to ask for (default: the next free one). [SPARKPS_RANK]")(function)
    function = click.option("--secret", envvar="SPARKPS_SECRET", show_envvar=True,
                            help="Job secret (prefer the SPARKPS_SECRET environment variable).")(function)
    function = click.option("--scheduler", "scheduler_uri", envvar="SPARKPS_SCHEDULER_URI", show_envvar=True,
                            help="Scheduler URI, e.g. tcp://127.0.0.1:40213.")(function)
    return function


def reports_errors(command_name):
    """Turn our errors into a one-line message and exit code 1 (2 for bad options), Ctrl-C into 130."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except ConfigError as exc:
                click.echo("sparkps %s: error: %s" % (command_name, exc), err=True)
                sys.exit(2)
            except (SparkpsError, OSError) as exc:
                click.echo("sparkps %s: %s: %s" % (command_name, type(exc).__name__, exc), err=True)
                sys.exit(1)
            except KeyboardInterrupt:
                click.echo("sparkps %s: interrupted" % command_name, err=True)
                sys.exit(130)
        return wrapper
    return decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              show_default=True, envvar="SPARKPS_LOG_LEVEL", help="Logging level of this process.")
def main(log_level):
    """sparkps: a ZeroMQ parameter server (scheduler, servers, workers) for MXNet-style networks.

    Quick start on one machine (2 servers, 2 workers):

        sparkps symbol mlp --layers 64,64,10 -o net.json

        sparkps launch -s 2 -w 2 -- train --symbol net.json --data train.libsvm --num-features 64 --epochs 10
    """
    logging.basicConfig(level=getattr(logging, log_level.upper()),
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    os.environ["SPARKPS_LOG_LEVEL"] = log_level    # roles started by `launch` log at the same level


@main.command()
@click.option("-s", "--num-servers", type=click.IntRange(min=1), envvar="SPARKPS_NUM_SERVER", required=True,
              help="Number of servers. [SPARKPS_NUM_SERVER]")
@click.option("-w", "--num-workers", type=click.IntRange(min=1), envvar="SPARKPS_NUM_WORKER", required=True,
              help="Number of workers. [SPARKPS_NUM_WORKER]")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(min=0, max=65535), envvar="SPARKPS_SCHEDULER_PORT", default=0,
              show_default=True, help="Port to bind (0: any free port). [SPARKPS_SCHEDULER_PORT]")
@click.option("--secret", envvar="SPARKPS_SECRET", show_envvar=True,
              help="Job secret (default: a new random one, printed).")
@click.option("--curve/--no-curve", default=False, envvar="SPARKPS_CURVE", help="Encrypt traffic with CURVE.")
@click.option("--uri-file", type=click.Path(dir_okay=False, writable=True),
              help="Also write the scheduler URI to this file once bound.")
@timeout_options
@reports_errors("scheduler")
def scheduler(num_servers, num_workers, host, port, secret, curve, uri_file, **kw):
    """Run the scheduler until the job ends.

    Prints its URI (and the secret when it made one up), waits for NUM_SERVERS servers and NUM_WORKERS
    workers, and exits 0 when every worker finished or 1 with the error that ended the job.
    """
    from sparkps.scheduler import Scheduler
    sched = Scheduler(num_servers, num_workers, host=host, port=port, secret=secret, timeouts=make_timeouts(kw),
                      curve=curve)
    try:
        sched.start()
        click.echo("SPARKPS_SCHEDULER_URI=%s" % sched.uri)
        if not secret:
            click.echo("SPARKPS_SECRET=%s" % sched.secret)
        sys.stdout.flush()
        if uri_file:
            with open(uri_file + ".tmp", "w", encoding="utf-8") as handle:
                handle.write(sched.uri)
            os.replace(uri_file + ".tmp", uri_file)
        sched.wait()
        click.echo("sparkps scheduler: job finished")
    finally:
        sched.stop()


@main.command()
@node_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@timeout_options
@reports_errors("server")
def server(scheduler_uri, secret, rank, curve, host, **kw):
    """Run one server node until the scheduler ends the job.

    Exits 0 after an orderly end, 1 with a message naming the node at fault when the job fails.
    """
    from sparkps.server import run_server
    run_server(settings.resolve_scheduler_uri(scheduler_uri), settings.resolve_secret(secret), rank=rank, host=host,
               timeouts=make_timeouts(kw), curve=curve)


@main.group()
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
@timeout_options
@reports_errors("worker train")
def train(scheduler_uri, secret, rank, curve, kvstore, kvstore_params, symbol_file, data, data_format, num_features,
          label_column, eval_data, batch_size, epochs, optimizer, lr, momentum, wd, initializer, seed, compression,
          compression_threshold, save_prefix, checkpoint_dir, checkpoint_steps, resume_from, **kw):
    """Train a network as one worker of a job: register, fit on this worker's shard, finish.

    Any failure is reported to the scheduler, which stops the whole job with it.
    """
    from sparkps.kvstore.strategies import check_strategy, parse_options
    from sparkps.worker import command as train_worker
    if compression == "2bit":
        compression = {"type": "2bit", "threshold": compression_threshold}
    strategy = check_strategy(kvstore, parse_options(kvstore_params), compression)
    config = train_worker.TrainConfig(
        symbol=symbol_file, data=data, data_format=data_format, num_features=num_features,
        label_column=label_column, batch_size=batch_size, epochs=epochs, optimizer=optimizer, lr=lr,
        momentum=momentum, wd=wd, initializer=initializer, seed=seed, save_prefix=save_prefix,
        eval_data=eval_data, compression=compression, checkpoint_dir=checkpoint_dir,
        checkpoint_steps=checkpoint_steps, resume_from=resume_from)
    if resume_from:
        from sparkps.runtime.resume import check_resumable
        check_resumable(kvstore)
    train_worker.run(config, kvstore=kvstore, scheduler_uri=settings.resolve_scheduler_uri(scheduler_uri),
                     secret=settings.resolve_secret(secret), rank=rank, timeouts=make_timeouts(kw), curve=curve,
                     kvstore_params=strategy)


@main.command()
@click.option("--scheduler", "scheduler_uri", envvar="SPARKPS_SCHEDULER_URI", show_envvar=True,
              help="Scheduler URI.")
@click.option("--secret", envvar="SPARKPS_SECRET", show_envvar=True, help="Job secret.")
@click.option("--curve/--no-curve", default=False, envvar="SPARKPS_CURVE", help="The job uses CURVE.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw status as JSON.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Seconds to wait for the scheduler's answer.")
@reports_errors("status")
def status(scheduler_uri, secret, curve, as_json, timeout):
    """Print the job's state, nodes, per-worker progress and errors."""
    from sparkps.scheduler import fetch_status, format_status
    result = fetch_status(settings.resolve_scheduler_uri(scheduler_uri), settings.resolve_secret(secret),
                          timeout=timeout, curve=curve)
    click.echo(json.dumps(result, indent=2, sort_keys=True) if as_json else format_status(result))


@main.command("compact-checkpoint")
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


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-s", "--num-servers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of servers.")
@click.option("-w", "--num-workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of workers.")
@click.option("--kvstore", type=click.Choice(STRATEGIES), default="dist_sync", show_default=True,
              help="Distributed strategy; its options go to train (--kvstore-param NAME=VALUE).")
@click.option("--curve/--no-curve", default=False, help="Encrypt traffic with CURVE.")
@click.option("--grace", type=click.FloatRange(min=0), default=5.0, show_default=True,
              help="Seconds between SIGTERM and SIGKILL when stopping the roles.")
@click.option("--checkpoint-dir", type=click.Path(file_okay=False),
              help="Checkpoint folder: worker 0 has the servers save here at each epoch end (and every "
                   "--checkpoint-steps); a job whose role dies restarts from the newest checkpoint.")
@click.option("--checkpoint-steps", type=click.IntRange(min=1), help="Also checkpoint every N steps.")
@click.option("--resume", is_flag=True, help="Continue a stopped job from the newest checkpoint in --checkpoint-dir.")
@click.option("--max-restarts", type=click.IntRange(min=0), default=2, show_default=True,
              help="With --checkpoint-dir: restarts of the whole cluster after a role dies.")
@timeout_options
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
@reports_errors("launch")
def launch(num_servers, num_workers, kvstore, curve, grace, checkpoint_dir, checkpoint_steps, resume, max_restarts,
           command, **kw):
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
    from sparkps.kvstore.strategies import check_strategy, parse_options
    check_strategy(kvstore, parse_options(train_context.params["kvstore_params"]), train_context.params["compression"])
    cluster = LocalCluster(num_servers, num_workers, list(command), kvstore=kvstore, curve=curve,
                           timeouts=make_timeouts(kw), grace=grace)
    if checkpoint_dir or resume:
        cluster.set_checkpoints(checkpoint_dir, checkpoint_steps, resume, max_restarts)
    cluster.pids_file = os.environ.get("SPARKPS_LAUNCH_PIDS_FILE")
    sys.exit(cluster.run())


@main.group()
def symbol():
    """Write network definitions (symbol JSON files)."""


@symbol.command()
@click.option("--layers", required=True, help="Comma-separated layer sizes, input first: 784,128,64,10.")
@click.option("--act", type=click.Choice(["relu", "sigmoid", "tanh", "softrelu"]), default="relu",
              show_default=True, help="Activation between hidden layers.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), required=True,
              help="Where to write the JSON.")
@reports_errors("symbol mlp")
def mlp(layers, act, output):
    """A multilayer perceptron with a softmax output (input size is the first of --layers)."""
    from sparkps.nets.mlp import mlp_symbol, parse_layers
    sizes = parse_layers(layers)
    net = mlp_symbol(sizes, act)
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(net.tojson())
    click.echo("wrote %s (%s)" % (output, " -> ".join(map(str, sizes))))


@main.command()
@click.option("--model", "model_prefix", metavar="PREFIX",
              help="Checkpoint PREFIX-symbol.json + PREFIX-NNNN.params, sparkps's or MXNet's (told apart by content).")
@click.option("--from-mxnet", "mxnet_prefix", metavar="PREFIX",
              help="MXNet checkpoint (mx.model.save_checkpoint): PREFIX-symbol.json + PREFIX-NNNN.params; "
                   "params in any other format are refused.")
@click.option("--epoch", type=click.IntRange(min=0), required=True, help="Epoch NNNN of the params file.")
@click.option("--data", type=click.Path(exists=True, dir_okay=False), required=True,
              help="Rows to predict (libsvm or CSV; the label column is copied to the output).")
@click.option("--format", "data_format", type=click.Choice(["auto", "libsvm", "csv"]), default="auto",
              show_default=True, help="Data format (auto: from the content).")
@click.option("--num-features", type=click.IntRange(min=1), help="LibSVM feature count (default: largest index).")
@click.option("--label-column", type=int, default=0, show_default=True, help="CSV column holding the label.")
@click.option("--no-label", is_flag=True, help="The CSV rows hold features only.")
@click.option("--input-shape", help="Shape of one row as the network's data input takes it, e.g. 1,8,8 "
                                    "(default: the flat row).")
@click.option("--batch-size", type=click.IntRange(min=1), default=128, show_default=True, help="Rows per forward.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True),
              help="CSV file to write (default: standard output).")
@reports_errors("predict")
def predict(model_prefix, mxnet_prefix, epoch, data, data_format, num_features, label_column, no_label,
            input_shape, batch_size, output):
    """Predict with a trained model: one CSV line per input row, `label,prediction,output_0,...`
    (prediction: the arg-max of the first output).

    Example: sparkps predict --from-mxnet resnet --epoch 10 --data test.csv --input-shape 3,32,32 -o out.csv
    """
    from sparkps.train.feedforward import FeedForward
    if (model_prefix is None) == (mxnet_prefix is None):
        raise ConfigError("give exactly one of --model PREFIX and --from-mxnet PREFIX")
    X, y = _read_rows(data, data_format, num_features, None if no_label else label_column)
    if input_shape:
        X = X.reshape((len(X),) + _row_shape(input_shape, X.shape[1]))
    model = FeedForward.load(model_prefix or mxnet_prefix, epoch, from_mxnet=mxnet_prefix is not None,
                             numpy_batch_size=batch_size)
    outputs = model.predict(X)
    outputs = (outputs[0] if isinstance(outputs, list) else outputs).reshape(len(X), -1)
    lines = ["label,prediction," + ",".join("output_%d" % k for k in range(outputs.shape[1]))]
    for k, row in enumerate(outputs):
        label = "" if y is None else "%.10g" % y[k]
        lines.append("%s,%d,%s" % (label, int(row.argmax()), ",".join("%.8g" % v for v in row)))
    text = "\n".join(lines) + "\n"
    if output:
        with open(output, "w", encoding="utf-8") as handle:
            handle.write(text)
        click.echo("sparkps predict: wrote %d predictions to %s" % (len(X), output), err=True)
    else:
        click.echo(text, nl=False)


def _read_rows(path, data_format, num_features, label_column):
    from sparkps.io.formats import detect_format
    from sparkps.io.readers import read_csv, read_libsvm
    kind = detect_format(path, data_format)
    if kind == "csv":
        return read_csv(path, label_column=label_column)
    if kind == "libsvm":
        return read_libsvm(path, num_features=num_features)
    raise ConfigError("--data %s is %s; predict reads libsvm and CSV files" % (path, kind))


def _row_shape(text, width):
    try:
        shape = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise ConfigError("--input-shape %r is not a comma-separated list of sizes" % text) from None
    if int(np.prod(shape)) != width:
        raise ConfigError("--input-shape %s holds %d values but the rows have %d features"
                          % (text, int(np.prod(shape)), width))
    return shape


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def node(ctx, command):
    """Run the role named by SPARKPS_ROLE (scheduler, server or worker), ps-lite style.

    Every other setting comes from the SPARKPS_* environment; a worker runs COMMAND (`train ...`).
    """
    role = os.environ.get("SPARKPS_ROLE")
    if role not in ("scheduler", "server", "worker"):
        raise click.UsageError("SPARKPS_ROLE must be scheduler, server or worker, got %r" % role)
    if role == "worker":
        if not command or command[0] != "train":
            raise click.UsageError("a worker node needs a command: sparkps node train ...")
        return ctx.invoke(worker.get_command(ctx, "train"), **_parse(worker.get_command(ctx, "train"), command[1:]))
    target = main.get_command(ctx, role)
    return ctx.invoke(target, **_parse(target, list(command)))


def _parse(command, args):
    sub = command.make_context(command.name, list(args))
    return sub.params


if __name__ == "__main__":
    main(prog_name="sparkps")
