"""Checkpoints of sparse tables that any server count can load: per-server files, generations, re-routing.

Each server writes its rows of a table into one file per save (:func:`save_table`); the answers of all
servers become one *generation* of the table in the checkpoint manifest
(:func:`sparkps.ps.manifest.add_table_generation`), under ``manifest["tables"][name]``::

    {"options": table.options(), "generations": [
        {"generation": 0, "delta": false, "files": ["sparse-user-g0-s0.npz", "sparse-user-g0-s1.npz"]},
        {"generation": 1, "delta": true,  "files": ["sparse-user-g1-s0.npz", "sparse-user-g1-s1.npz"]}]}

Generation 0 is a full save (a *base*); a *delta* holds only the rows changed since the previous save and the
ids evicted since then. On load (:func:`load_table`) every server reads the generations in order and keeps
the rows whose shard, ``mix64(id) % num_servers``, is its own rank, so a checkpoint written by 2 servers loads
onto 3 with rows, optimizer state and counters exactly as saved. :func:`compact` merges a base and its deltas
into one new base. Files are ``.npz`` read with ``allow_pickle=False``; nothing is unpickled.
"""
import os

import numpy as np

from sparkps.errors import DataError
from sparkps.ps.manifest import add_table_generation
from sparkps.ps.rows import shard_of
from sparkps.ps.server.tables.sparse import SparseTable

_ROW_FIELDS = ('ids', 'values', 'updates', 'seen', 'last_seen')


def table_file(name, generation, rank):
    """File name of server ``rank``'s rows of table ``name`` in ``generation``."""
    return f'sparse-{name}-g{int(generation)}-s{int(rank)}.npz'


def _write(directory, name, arrays):
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, name + '.tmp.npz')
    np.savez(tmp, **arrays)
    os.replace(tmp, os.path.join(directory, name))


def save_table(directory, table, rank, generation, delta=False):
    """Write server ``rank``'s rows of ``table`` (all, or with ``delta`` those changed since the last save)
    as ``generation``; returns the description ``add_table_generation`` merges. Blocks on file I/O only."""
    arrays = table.export_rows(changed_only=delta)
    if table.sketch is not None:
        arrays['sketch'] = table.sketch.total(with_base=rank == 0)
    name = table_file(table.name, generation, rank)
    _write(directory, name, arrays)
    table.mark_saved()
    return {'table': table.name, 'generation': int(generation), 'delta': bool(delta), 'file': name,
            'rows': int(arrays['ids'].size), 'removed': int(arrays['removed'].size), 'options': table.options()}


def _read(directory, name, table):
    path = os.path.join(directory, os.path.basename(name))
    try:
        with np.load(path, allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise DataError(f"table {table!r}: cannot read checkpoint file {path}: {exc}") from None


def _entry(manifest, name):
    entry = manifest.get('tables', {}).get(name)
    if entry is None or not entry.get('generations'):
        raise DataError(f"checkpoint has no table {name!r} (tables: {sorted(manifest.get('tables', {}))})")
    return entry


def load_table(directory, manifest, name, rank, num_servers, table_class=SparseTable):
    """Build table ``name`` (a ``table_class``) as server ``rank`` of ``num_servers`` holds it: the rows
    routed to ``rank``, with their optimizer state and counters, replaying the base and then each delta.
    Blocks on file I/O."""
    entry = _entry(manifest, name)
    table = table_class.from_options(entry['options'])
    sketch, step, updates = None, 0, 0
    for gen in entry['generations']:
        sketches = []
        for file_name in gen['files']:
            arrays = _read(directory, file_name, name)
            removed = arrays['removed']
            table.drop(removed[shard_of(removed, num_servers) == rank])
            rows = {k: v for k, v in arrays.items() if k in _ROW_FIELDS or k.startswith('state')}
            mine = shard_of(arrays['ids'], num_servers) == rank
            table.load_rows(rows if mine.all() else {k: v[mine] for k, v in rows.items()})
            step, updates = max(step, int(arrays['step'])), max(updates, int(arrays['optimizer_updates']))
            if 'sketch' in arrays:
                sketches.append(arrays['sketch'])
        sketch = np.sum(sketches, axis=0, dtype=np.uint32) if sketches else sketch
    table.step = step
    table.optimizer.optimizer.num_update = updates
    table.optimizer.optimizer.index_update_count[0] = updates
    if sketch is not None and table.sketch is not None:
        table.sketch.base = sketch
    table.mark_saved()
    return table


def compact(directory, manifest, name, num_files=1):
    """Merge the base and deltas of table ``name`` into one new base generation of ``num_files`` files
    (rows split by shard over ``num_files``), delete the files it replaces and update ``manifest`` in
    place (returned). The result loads to the same rows as the generations it replaces."""
    entry = _entry(manifest, name)
    old_files = [f for gen in entry['generations'] for f in gen['files']]
    generation = entry['generations'][-1]['generation'] + 1
    described = []
    for part in range(num_files):
        table = load_table(directory, manifest, name, part, num_files)
        described.append(save_table(directory, table, part, generation))
    add_table_generation(manifest, described)
    for file_name in old_files:
        path = os.path.join(directory, file_name)
        if os.path.exists(path):
            os.remove(path)
    return manifest
