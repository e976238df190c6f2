"""Checkpoints of sparse tables that any server count can load: per-server files, generations, re-routing.

Each server writes its rows of a table into one file per save (:func:`save_table`); the answers of all
servers become one *generation* of the table in the checkpoint manifest
(:func:`sparkps.comm.manifest.add_table_generation`), under ``manifest["tables"][name]``::

    {"options": table.options(), "generations": [
        {"generation": 0, "delta": false, "files": ["sparse-user-g0-s0.npz", "sparse-user-g0-s1.npz"]},
        {"generation": 1, "delta": true,  "files": ["sparse-user-g1-s0.npz", "sparse-user-g1-s1.npz"]}]}

Generation 0 is a full save (a *base*); a *delta* holds only the rows changed since the previous save and the
ids evicted since then. On load (:func:`load_table`) every server reads the generations in order and keeps
the rows whose shard, ``mix64(id) % num_servers``, is its own rank, so a checkpoint written by 2 servers loads
onto 3 with rows, optimizer state and counters exactly as saved. Files are ``.npz`` read with
``allow_pickle=False``; nothing is unpickled. Each file records the table it holds (array ``table``), so a file
of another table named by a manifest is refused naming the file.

Compaction merges a base and its deltas into one new base generation: :func:`merge_generations` writes the new
files and updates a manifest; :func:`compact_checkpoint` does it for a checkpoint directory (`sparkps
compact-checkpoint DIR`): new files, then the manifest (atomically replaced), then the replaced files removed,
so a crash at any point leaves a manifest whose files all exist. The servers compact their own shards the same
way on a COMMAND ``compact`` (:meth:`ServedTable.compact
<sparkps.server.tables.sparse_served.ServedTable.compact>`, asked by ``DistKVStore.compact_checkpoint``).
"""
import os

import numpy as np

from sparkps.comm.manifest import MANIFEST, add_table_generation, file_digest, read_manifest, read_piece, save_manifest
from sparkps.errors import DataError
from sparkps.rows.ids import shard_of
from sparkps.rows.table import SparseTable

_ROW_FIELDS = ('ids', 'values', 'updates', 'seen', 'last_seen')


def table_file(name, generation, rank):
    """File name of server ``rank``'s rows of table ``name`` in ``generation``."""
    return f'sparse-{name}-g{int(generation)}-s{int(rank)}.npz'


def _write(directory, name, arrays):
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, name + '.tmp.npz')
    np.savez(tmp, **arrays)
    digest = file_digest(tmp)
    os.replace(tmp, os.path.join(directory, name))
    return digest


def save_table(directory, table, rank, generation, delta=False):
    """Write server ``rank``'s rows of ``table`` (all, or with ``delta`` those changed since the last save)
    as ``generation``; returns the description ``add_table_generation`` merges. Blocks on file I/O only."""
    arrays = table.export_rows(changed_only=delta)
    arrays['table'] = np.array(table.name)
    if table.sketch is not None:
        arrays['sketch'] = table.sketch.total(with_base=rank == 0)
    name = table_file(table.name, generation, rank)
    digest = _write(directory, name, arrays)
    table.mark_saved()
    return {'table': table.name, 'generation': int(generation), 'delta': bool(delta), 'file': name, 'digest': digest,
            'rows': int(arrays['ids'].size), 'removed': int(arrays['removed'].size), 'options': table.options()}


_NEEDED = ('ids', 'values', 'updates', 'seen', 'last_seen', 'removed', 'step', 'optimizer_updates')


def _read(directory, name, table, digest=None):
    path = os.path.join(directory, os.path.basename(name))
    try:
        arrays = read_piece(directory, name, digest)
    except DataError as exc:
        raise DataError(f"table {table!r}: {exc}") from None
    held = str(arrays['table']) if 'table' in arrays else table     # files of older saves do not record it
    if held != table:
        raise DataError(f"table {table!r}: checkpoint file {path} holds rows of table {held!r}")
    missing = [k for k in _NEEDED if k not in arrays]
    if missing:
        raise DataError(f"table {table!r}: checkpoint file {path} is not a sparse table file (no {missing})")
    return arrays


def _entry(manifest, name, directory=None):
    entry = manifest.get('tables', {}).get(name)
    if entry is None or not entry.get('generations'):
        where = os.path.join(directory, MANIFEST) if directory is not None else 'checkpoint'
        raise DataError(f"{where} has no table {name!r} (tables: {sorted(manifest.get('tables', {}))})")
    return entry


def load_table(directory, manifest, name, rank, num_servers, table_class=SparseTable):
    """Build table ``name`` (a ``table_class``) as server ``rank`` of ``num_servers`` holds it: the rows
    routed to ``rank``, with their optimizer state and counters, replaying the base and then each delta.
    Blocks on file I/O."""
    entry = _entry(manifest, name, directory)
    table = table_class.from_options(entry['options'])
    sketch, step, updates = None, 0, 0
    for gen in entry['generations']:
        sketches = []
        for file_name in gen['files']:
            arrays = _read(directory, file_name, name, (gen.get('digests') or {}).get(file_name))
            removed = arrays['removed']
            table.drop(removed[shard_of(removed, num_servers) == rank])
            rows = {k: v for k, v in arrays.items() if k in _ROW_FIELDS or k.startswith('state')}
            mine = shard_of(arrays['ids'], num_servers) == rank
            try:
                table.load_rows(rows if mine.all() else {k: v[mine] for k, v in rows.items()})
            except (DataError, ValueError, IndexError) as exc:
                path = os.path.join(directory, os.path.basename(file_name))
                raise DataError(f"table {name!r}: checkpoint file {path} does not fit the table's options in "
                                f"the manifest: {exc}") from None
            step, updates = max(step, int(arrays['step'])), max(updates, int(arrays['optimizer_updates']))
            if 'sketch' in arrays:
                sketches.append(arrays['sketch'])
        sketch = np.sum(sketches, axis=0, dtype=np.uint32) if sketches else sketch
    table.step = step
    table.optimizer.optimizer.num_update = updates
    table.optimizer.optimizer.index_update_count[table.optimizer.index] = updates
    if sketch is not None and table.sketch is not None:
        table.sketch.base = sketch
    table.mark_saved()
    return table


def merge_generations(directory, manifest, name, num_files=1):
    """Write the base and deltas of table ``name`` as one new base generation of ``num_files`` files (rows split
    by shard over ``num_files``) and make it the table's only generation in ``manifest`` (in place). Returns the
    names of the files it replaced; they are not removed. The new base loads to the same rows, state and
    counters as the generations it replaces. Blocks on file I/O."""
    entry = _entry(manifest, name, directory)
    old_files = [f for gen in entry['generations'] for f in gen['files']]
    generation = entry['generations'][-1]['generation'] + 1
    described = [save_table(directory, load_table(directory, manifest, name, part, num_files), part, generation)
                 for part in range(num_files)]
    add_table_generation(manifest, described)
    return old_files


def remove_files(directory, names):
    """Remove the checkpoint files ``names`` of ``directory`` (those still there)."""
    for file_name in names:
        path = os.path.join(directory, os.path.basename(file_name))
        if os.path.exists(path):
            os.remove(path)


def compact(directory, manifest, name, num_files=1):
    """:func:`merge_generations`, then remove the files it replaced; ``manifest`` is updated in place (returned)
    and not written (:func:`compact_checkpoint` writes it before removing anything)."""
    remove_files(directory, merge_generations(directory, manifest, name, num_files))
    return manifest


def compact_checkpoint(directory, tables=None, num_files=None):
    """Compact the sparse tables of the checkpoint in ``directory`` (all, or those named in ``tables``): each
    table's base and deltas become one base of ``num_files`` files (default: as many as its latest generation
    has, i.e. the server count that saved it). A table already held as one base of that many files is left as
    it is. Writes the manifest, then removes the replaced files. Returns ``{table: {"generations": merged,
    "rows": rows, "files": new files}}`` of the tables compacted.

    Raises DataError naming the file at fault: no manifest or a foreign one, a table the manifest does not
    hold, a missing or unreadable delta, a file of another table. Blocks on file I/O."""
    directory = str(directory)
    manifest = read_manifest(directory)
    held = sorted(manifest.get('tables', {}))
    names = held if tables is None else list(tables)
    if not names:
        raise DataError(f"{os.path.join(directory, MANIFEST)} has no sparse tables to compact")
    plans = {}
    for name in names:
        generations = _entry(manifest, name, directory)['generations']
        files = num_files or len(generations[-1]['files'])
        if len(generations) > 1 or len(generations[0]['files']) != files:
            plans[name] = (len(generations), files)
    replaced, report = [], {}
    for name, (merged, files) in plans.items():
        replaced.extend(merge_generations(directory, manifest, name, files))
        gen, = manifest['tables'][name]['generations']
        report[name] = {'generations': merged, 'rows': gen['rows'], 'files': gen['files']}
    if plans:
        save_manifest(directory, manifest)
        remove_files(directory, replaced)
    return report
