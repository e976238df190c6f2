"""``sparkps verify-checkpoint DIR``: check every piece of a kvstore checkpoint against its manifest, or every
shard file of a saved model's sharded tables (``DIR/tables/manifest.json``, or a ``tables`` folder itself)."""
import os

import click

from sparkps.comm.manifest import pieces, read_manifest, verify_checkpoint
from sparkps.errors import DataError


@click.command("verify-checkpoint")
@click.argument("directory", type=click.Path(file_okay=False))
def verify_checkpoint_command(directory):
    """Check every piece of the checkpoint in DIRECTORY (manifest.json and its files), or every shard file of
    a saved model's sharded tables (DIRECTORY holding tables/manifest.json, or that tables folder).

    Prints one line per damaged piece (missing, truncated, altered or replaced by another file: each piece's
    BLAKE2b digest and size are in the manifest; a version 1 manifest has none, and its pieces are read whole;
    a shard's sha256 is in the tables' manifest) and exits 1 when there is one, 0 when every piece is intact.
    Blocks while it reads every piece (a shard file is read in blocks, never whole).
    """
    tables = shard_tables_folder(directory)
    if tables is not None:
        _verify_shards(tables)
        return
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


def shard_tables_folder(directory):
    """The folder of sharded tables that ``directory`` is or holds (``tables/manifest.json`` of a saved model), or
    None for anything else (a kvstore checkpoint)."""
    from sparkps.spark.model.sharded_tables import TABLES_FOLDER
    for folder in (os.path.join(directory, TABLES_FOLDER), directory):
        manifest = os.path.join(folder, "manifest.json")
        if os.path.exists(manifest) and os.path.exists(os.path.join(os.path.dirname(folder), "metadata.json")) \
                and os.path.basename(os.path.normpath(folder)) == TABLES_FOLDER:
            return folder
    return None


def _verify_shards(folder):
    """One line per damaged shard of the tables in ``folder``; exit 1 when there is one."""
    from sparkps.rows.shards import check_shards, read_manifest
    try:
        manifest = read_manifest(folder)
    except DataError as exc:
        click.echo("%s: %s" % (folder, exc), err=True)
        raise SystemExit(1) from None
    damaged, total = 0, 0
    for name, entry in sorted(manifest["tables"].items()):
        for shard in entry["shards"]:
            total += 1
            try:
                check_shards(folder, dict(manifest, tables={name: dict(entry, shards=[shard], rows=shard["rows"])}))
            except DataError as exc:
                damaged += 1
                click.echo("%s: %s" % (os.path.join(folder, shard["path"]), exc))
    for path in _unlisted(folder, manifest):
        click.echo("%s: not listed in the manifest (never read)" % path)
    if damaged:
        click.echo("%s: %d of %d shards damaged" % (folder, damaged, total), err=True)
        raise SystemExit(1)
    click.echo("%s: all %d shards intact" % (folder, total))


def _unlisted(folder, manifest):
    """The files under the tables ``folder`` that its manifest does not list (planted files, killed writes'
    leftovers): no reader opens them."""
    from sparkps.rows.shards import MANIFEST, shard_files
    listed = {os.path.realpath(os.path.join(folder, MANIFEST))}
    for name in manifest["tables"]:
        listed.update(os.path.realpath(p) for p in shard_files(folder, manifest, name))
    found = []
    for parent, _, names in os.walk(folder):
        found.extend(os.path.join(parent, n) for n in sorted(names)
                     if os.path.realpath(os.path.join(parent, n)) not in listed)
    return found
