"""``sparkps verify-checkpoint DIR``: check every piece of a kvstore checkpoint against its manifest."""
import os

import click

from sparkps.comm.manifest import pieces, read_manifest, verify_checkpoint
from sparkps.errors import DataError


@click.command("verify-checkpoint")
@click.argument("directory", type=click.Path(file_okay=False))
def verify_checkpoint_command(directory):
    """Check every piece of the checkpoint in DIRECTORY (manifest.json and its files).

    Prints one line per damaged piece (missing, truncated, altered or replaced by another file: each piece's
    BLAKE2b digest and size are in the manifest; a version 1 manifest has none, and its pieces are read whole)
    and exits 1 when there is one, 0 when every piece is intact.  Blocks while it reads every piece.
    """
    try:
        manifest = read_manifest(directory)
        damaged = verify_checkpoint(directory, manifest)
    except DataError as exc:
        click.echo("%s: %s" % (directory, exc), err=True)
        raise SystemExit(1) from None
    for name, why in damaged:
        click.echo("%s: %s" % (os.path.join(directory, os.path.basename(name)), why))
    total = len(pieces(manifest))
    if damaged:
        click.echo("%s: %d of %d pieces damaged" % (directory, len(damaged), total), err=True)
        raise SystemExit(1)
    click.echo("%s: all %d pieces intact" % (directory, total))
