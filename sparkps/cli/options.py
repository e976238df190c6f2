"""The options and error handling every ``sparkps`` command shares: a node's timeouts, its scheduler, secret,
rank and CURVE (read from the SPARKPS_* environment when absent), and one-line errors with exit codes."""
import functools
import os
import sys

import click

from sparkps.errors import ConfigError, DataError, SparkpsError


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
    function = click.option("--curve/--no-curve", default=None,
                            help=curve_help)(function)
    function = click.option("--rank", type=click.IntRange(min=0), envvar="SPARKPS_RANK",
                            help="Rank to ask for (default: the next free one). [SPARKPS_RANK]")(function)
    function = click.option("--secret", envvar="SPARKPS_SECRET", show_envvar=True,
                            help="Job secret (prefer the SPARKPS_SECRET environment variable).")(function)
    function = click.option("--scheduler", "scheduler_uri", envvar="SPARKPS_SCHEDULER_URI", show_envvar=True,
                            help="Scheduler URI, e.g. tcp://127.0.0.1:40213.")(function)
    return function


def reports_errors(command_name):
    """Turn our errors into a one-line message and exit code 1 (2 for bad options or
    bad input data), Ctrl-C into 130."""
    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            try:
                return function(*args, **kwargs)
            except (ConfigError, DataError) as exc:       # bad input or usage: 2, as click's own usage errors
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


def default_status_file():
    """Where ``sparkps launch`` writes, and ``sparkps status`` reads, the job's address and secret by default:
    SPARKPS_STATUS_FILE, else ~/.sparkps/launch-status.json."""
    return os.environ.get("SPARKPS_STATUS_FILE") or os.path.join(os.path.expanduser("~"), ".sparkps",
                                                                  "launch-status.json")


def read_status_file(path):
    """(scheduler URI, secret, curve) from a launcher's status file; ConfigError naming the file otherwise."""
    import json
    try:
        with open(path, encoding="utf-8") as handle:
            saved = json.load(handle)
        return saved["scheduler"], saved["secret"], bool(saved.get("curve"))
    except OSError as exc:
        raise ConfigError("status file %s: %s (start the job with `sparkps launch`, or give --scheduler and "
                          "SPARKPS_SECRET)" % (path, exc.strerror or exc)) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError("status file %s: expected JSON with 'scheduler' and 'secret' (as `sparkps launch` "
                          "writes it), got an error at %s" % (path, exc)) from None


def check_launcher_alive(path):
    """ConfigError when the status file ``path`` names a launcher process (``pid``) that no longer runs: its job
    has ended, and no scheduler is left to ask (instead of waiting for one until a timeout)."""
    import json
    try:
        with open(path, encoding="utf-8") as handle:
            pid = json.load(handle).get("pid")
    except (OSError, ValueError, AttributeError):
        return                 # read_status_file names what is wrong with the file
    if not isinstance(pid, int) or pid <= 0:
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        raise ConfigError("the job of status file %s has ended: its launcher (pid %d) is gone, so no scheduler is "
                          "left to ask; the launch command's last lines say how it ended" % (path, pid)) from None
    except PermissionError:    # alive, another user's
        return


def check_symbol_file(path):
    """ConfigError naming ``path`` when it is not a symbol JSON document (say, an Angel network), saying what
    was expected; returns ``path``."""
    from sparkps.symbol import load_json
    try:
        with open(path, encoding="utf-8") as handle:
            load_json(handle.read())
    except OSError as exc:
        raise ConfigError("--symbol %s: %s" % (path, exc.strerror or exc)) from None
    except ConfigError as exc:
        raise ConfigError("--symbol %s: expected a symbol JSON document (an object with 'nodes' and 'heads', as "
                          "`sparkps symbol mlp` writes); %s" % (path, exc)) from None
    return path
