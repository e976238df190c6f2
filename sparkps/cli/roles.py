"""The role commands: ``sparkps scheduler``, ``sparkps server``, ``sparkps status`` and ``sparkps node`` (the role
named by SPARKPS_ROLE, ps-lite style)."""
import json
import os
import sys

import click

from sparkps.cli.options import (
    check_launcher_alive,
    default_status_file,
    make_timeouts,
    node_options,
    read_status_file,
    reports_errors,
    timeout_options,
)
from sparkps.comm import settings


@click.command()
@click.option("-s", "--num-servers", type=click.IntRange(min=1), envvar="SPARKPS_NUM_SERVER", required=True,
              help="Number of servers. [SPARKPS_NUM_SERVER]")
@click.option("-w", "--num-workers", type=click.IntRange(min=1), envvar="SPARKPS_NUM_WORKER", required=True,
              help="Number of workers. [SPARKPS_NUM_WORKER]")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(min=0, max=65535), envvar="SPARKPS_SCHEDULER_PORT", default=0,
              show_default=True, help="Port to bind (0: any free port). [SPARKPS_SCHEDULER_PORT]")
@click.option("--secret", envvar="SPARKPS_SECRET", show_envvar=True,
              help="Job secret (default: a new random one, printed).")
@click.option("--curve/--no-curve", default=None,
              help="Encrypt traffic with CURVE (default: SPARKPS_CURVE, else off).")
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
                      curve=bool(settings.resolve_curve(curve)))
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


@click.command()
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
               timeouts=make_timeouts(kw), curve=bool(settings.resolve_curve(curve)))


@click.command()
@click.option("--scheduler", "scheduler_uri", envvar="SPARKPS_SCHEDULER_URI", show_envvar=True,
              help="Scheduler URI.")
@click.option("--secret", envvar="SPARKPS_SECRET", show_envvar=True, help="Job secret.")
@click.option("--curve/--no-curve", default=None, help="The job uses CURVE (default: SPARKPS_CURVE, else off).")
@click.option("--json", "as_json", is_flag=True, help="Print the raw status as JSON.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0, show_default=True,
              help="Seconds to wait for the scheduler's answer.")
@click.option("--status-file", type=click.Path(dir_okay=False),
              help="The file `sparkps launch` wrote (scheduler address and secret); default: that of the last "
                   "launch when neither --scheduler nor SPARKPS_SCHEDULER_URI is given.")
@reports_errors("status")
def status(scheduler_uri, secret, curve, as_json, timeout, status_file):
    """Print the job's state, nodes, per-worker progress and errors (of a `sparkps launch` job: from its status
    file)."""
    from sparkps.scheduler import fetch_status, format_status
    if status_file or not (scheduler_uri or os.environ.get("SPARKPS_SCHEDULER_PORT")):
        scheduler_uri, secret, curve = read_status_file(status_file or default_status_file())
        check_launcher_alive(status_file or default_status_file())
    result = fetch_status(settings.resolve_scheduler_uri(scheduler_uri), settings.resolve_secret(secret),
                          timeout=timeout, curve=bool(settings.resolve_curve(curve)))
    click.echo(json.dumps(result, indent=2, sort_keys=True) if as_json else format_status(result))


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
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
        from sparkps.cli.training import train
        return ctx.invoke(train, **_parse(train, command[1:]))
    target = ctx.find_root().command.get_command(ctx, role)
    return ctx.invoke(target, **_parse(target, list(command)))


def _parse(command, args):
    sub = command.make_context(command.name, list(args))
    return sub.params
