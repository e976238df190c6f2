"""``sparkps plan``: print the sizing model's figures for a cluster before starting one.

The click command object is :data:`plan`; the ``sparkps`` group registers it (``cli.add_command(plan)``)::

    sparkps plan --workers 100 --servers 10 --rows 1e9 --dim 16 --batch 4096 --fields 26 --zipf 1.1 \\
        --optimizer adagrad --bandwidth 10Gbit
    sparkps plan --workers 8 --servers 2 --rows 50M --model out/model    # its optimizer and embedding width

``--optimizer`` defaults to the one the CTR estimator trains with (Adam), or a saved model's (``--model``).

Quantities take units: bandwidths in bits per second (``10Gbit``, ``100Mbit``, ``1e10``), sizes in bytes
(``64GiB``, ``500MB``), times in seconds (``20us``, ``3.5e-6``). ``--json`` prints the figures as JSON.
"""
import json
import re

import click

from sparkps.nets.ctr_defaults import CTR_DEFAULTS
from sparkps.plan import constants
from sparkps.plan.figures import estimate
from sparkps.plan.model import KVSTORES
from sparkps.plan.saved_settings import saved_settings

_NUMBER = r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$"
_BITS = {'': 1, 'bit': 1, 'bps': 1, 'kbit': 1e3, 'mbit': 1e6, 'gbit': 1e9, 'tbit': 1e12}
_BYTES = {'': 1, 'b': 1, 'kb': 1e3, 'mb': 1e6, 'gb': 1e9, 'tb': 1e12, 'kib': 2**10, 'mib': 2**20, 'gib': 2**30,
          'tib': 2**40}
_SECONDS = {'': 1, 's': 1, 'ms': 1e-3, 'us': 1e-6, 'ns': 1e-9}


class Quantity(click.ParamType):
    """A number with an optional unit from ``units`` (case-insensitive; a trailing ``/s`` is ignored)."""

    def __init__(self, name, units):
        self.name, self.units = name, units

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)):
            return float(value)
        match = re.match(_NUMBER, str(value))
        unit = match.group(2).lower().removesuffix('/s') if match else None
        if match is None or unit not in self.units:
            self.fail(f"{value!r} is not a {self.name} (a number with one of the units "
                      f"{', '.join(u for u in self.units if u)})", param, ctx)
        return float(match.group(1)) * self.units[unit]


BANDWIDTH = Quantity('bandwidth', _BITS)
SIZE = Quantity('size', _BYTES)
SECONDS = Quantity('time', _SECONDS)
COUNT = Quantity('count', {'': 1, 'k': 1e3, 'm': 1e6, 'g': 1e9, 'b': 1e9})


@click.command('plan')
@click.option('--workers', type=click.IntRange(min=1), required=True, help="Worker nodes.")
@click.option('--servers', type=click.IntRange(min=1), required=True, help="Server nodes.")
@click.option('--rows', type=COUNT, required=True, help="Rows of the sparse table, all servers together (1e9, 33M).")
@click.option('--dim', type=click.IntRange(min=1), default=16, show_default=True, help="Row width.")
@click.option('--batch', type=click.IntRange(min=1), default=4096, show_default=True, help="Samples per worker step.")
@click.option('--fields', type=click.IntRange(min=1), default=26, show_default=True, help="Ids per sample.")
@click.option('--zipf', type=click.FloatRange(min=0, min_open=True), default=1.1, show_default=True,
              help="Zipf exponent of the id frequencies.")
@click.option('--id-space', type=COUNT, default=None, help="Distinct ids the data names (default: --rows).")
@click.option('--optimizer', type=click.Choice(sorted(constants.STATES)), default=None,
              help="The servers' optimizer, whose state each row keeps (default: --model's, else %s, what "
                   "SparkpsCTRClassifier and jobs/train_ctr.py train with)." % CTR_DEFAULTS["optimizer"])
@click.option('--model', 'saved', default=None, metavar='PATH',
              help="A saved CTR model or estimator (write().save(PATH), or a train_ctr output folder): its optimizer "
                   "and embedding width, unless --optimizer or --dim is given.")
@click.option('--dense', type=COUNT, default=0, show_default=True, help="Dense parameters (elements).")
@click.option('--codec', type=click.Choice(sorted(constants.CODEC_BITS)), default='none', show_default=True,
              help="Dense gradient codec.")
@click.option('--min-count', type=click.IntRange(min=1), default=1, show_default=True,
              help="Admission by count (> 1 keeps a sketch per server).")
@click.option('--kvstore', type=click.Choice(KVSTORES), default='dist_sync', show_default=True)
@click.option('--bandwidth', type=BANDWIDTH, default='10Gbit', show_default=True, help="Each node's network link.")
@click.option('--compute-per-sample', type=SECONDS, default='20us', show_default=True,
              help="Measured forward+backward time per sample on a worker.")
@click.option('--server-row-seconds', type=SECONDS, default='3.5us', show_default=True,
              help="Server time per row pulled and pushed.")
@click.option('--latency', type=SECONDS, default='100us', show_default=True, help="A request's round trip.")
@click.option('--disk-bandwidth', type=SIZE, default='500MB', show_default=True, help="Checkpoint bytes/s per server.")
@click.option('--row-arrival', type=COUNT, default=None,
              help="New rows a server's table gets at a time (a load, a first epoch of new ids); default: a few "
                   "per step. The table's arrays grow differently.")
@click.option('--linear', is_flag=True, default=None,
              help="A CTR model's first-order table (width 1, the same ids) beside the rows (fm, deepfm, wide&deep).")
@click.option('--write-tables', is_flag=True, default=None,
              help="The fit ends with each server writing its shard of the tables (a Spark fit's does).")
@click.option('--server-memory', type=SIZE, default=None, help="Memory a server may use (checked when given).")
@click.option('--json', 'as_json', is_flag=True, help="Print the figures as JSON.")
@click.pass_context
def plan(ctx, workers, servers, rows, as_json, saved, **options):
    """Size a cluster: memory per server, bytes per step, step time, scheduler load, checkpoints, the bottleneck."""
    options = {k: v for k, v in options.items() if v is not None}
    try:
        given = {name for name in ("optimizer", "dim")
                 if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE}
        if saved:
            options.update({k: v for k, v in saved_settings(saved).items() if k not in given})
        options.setdefault("optimizer", CTR_DEFAULTS["optimizer"])
        result = estimate(workers, servers, rows, **options)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.as_dict(), indent=1, default=str))
    else:
        click.echo(result.table())
