"""The ``sparkps`` command: run a scheduler, a server or a training worker, ask for status, or launch a
whole local cluster.  Settings fall back to ps-lite-style environment variables (SPARKPS_ROLE,
SPARKPS_SCHEDULER_URI, SPARKPS_SCHEDULER_PORT, SPARKPS_NUM_SERVER, SPARKPS_NUM_WORKER, SPARKPS_SECRET,
SPARKPS_RANK, SPARKPS_CURVE); the secret is never needed on a command line.

The commands by group: ``roles.py`` (scheduler, server, status, node), ``training.py`` (worker train, launch,
compact-checkpoint), ``models.py`` (symbol mlp, predict), ``sparkps.plan.command`` (plan: size a cluster);
``options.py`` holds the options they share.
``main`` is the ``sparkps`` entry point; ``python -m sparkps.cli`` runs it too.
"""
import logging
import os

import click

from sparkps import __version__
from sparkps.cli import models, roles, training
from sparkps.cli.checkpoints import verify_checkpoint_command
from sparkps.plan.command import plan


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="sparkps", message="%(prog)s %(version)s")
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


for _command in (roles.scheduler, roles.server, training.worker, roles.status, training.compact_checkpoint,
                 training.launch, models.symbol, models.predict, roles.node, plan, verify_checkpoint_command):
    main.add_command(_command)

__all__ = ["main"]
