"""One row initialiser: the local kvstore, a server's table and prediction give a new row the same first value for
the same (table, id), and that value is the formula sparkps/rows/init.py states."""
import hashlib

import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps import kvstore
from sparkps.errors import ConfigError
from sparkps.rows.config import TableConfig, table_attr
from sparkps.rows.ids import table_seed
from sparkps.rows.init import RowInitializer, initial_rows
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse
from sparkps.train.feedforward import FeedForward

DIM = 4
IDS = np.array([3, -1, 2 ** 40, 77, 3], np.int64)
MASK = (1 << 64) - 1


def empty():
    return RowSparse(np.empty(0, np.int64), np.empty((0, DIM), np.float32), (None, DIM))


def local_rows(config):
    kv = kvstore.create('local')
    kv.init_table(config.name, empty(), config)
    rows = np.empty((IDS.size, DIM), np.float32)
    kv.row_sparse_pull(config.name, out=rows, row_ids=IDS)
    return rows


def server_rows(config, servers=2):
    """The rows as ``servers`` servers create them, each holding its shard (the INIT's options: ``to_dict``)."""
    from sparkps.rows.ids import row_ids, shard_of
    ids = row_ids(IDS, config.name)
    rows = np.empty((IDS.size, DIM), np.float32)
    shards = shard_of(ids, servers)
    for s in range(servers):
        table = SparseTable.from_init(config.name, config.to_dict())
        rows[shards == s] = table.pull(ids[shards == s])
    return rows


def predicted_rows(config):
    """What FeedForward's prediction reads for ids no trained row holds (a frozen local store)."""
    weight = sym.Variable(config.name, attr=table_attr(**config.options) if config.options else None)
    net = sym.contrib.HashEmbedding(sym.Variable('ids'), weight=weight, output_dim=DIM, name='emb')
    model = FeedForward(net, arg_params={config.name: empty()}, numpy_batch_size=IDS.size)
    return np.asarray(model.predict({'ids': IDS}), np.float32)


@pytest.mark.parametrize('init', [None, {'kind': 'uniform', 'scale': 0.5}, {'kind': 'normal', 'sigma': 0.3},
                                  {'kind': 'constant', 'value': 0.25}])
def test_local_store_server_table_and_prediction_give_the_same_initial_row(init):
    config = TableConfig('user', dim=DIM, init=init)
    expected = RowInitializer.from_config(init).rows('user', IDS.view(np.uint64), DIM)
    for rows in (local_rows(config), server_rows(config), server_rows(config, servers=3), predicted_rows(config)):
        np.testing.assert_array_equal(rows, expected)
    np.testing.assert_array_equal(expected[0], expected[-1])              # the same id, the same row
    if init is None:
        np.testing.assert_array_equal(expected, initial_rows('user', IDS, DIM))


def _mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def test_the_docstring_formula_is_what_the_code_computes():
    seed = int.from_bytes(hashlib.blake2b(b'user', digest_size=8).digest(), 'little')
    assert table_seed('user') == seed
    scale, golden = 0.5, 0x9E3779B97F4A7C15
    rows = RowInitializer('uniform', scale=scale).rows('user', IDS.view(np.uint64), DIM, np.float64)
    for i, raw in enumerate(IDS.tolist()):
        for c in range(DIM):
            bits = _mix((_mix(_mix((raw & MASK) ^ seed) + 0) + (c + 1) * golden) & MASK)
            u = (bits >> 11) * 2.0 ** -53
            assert rows[i, c] == (2 * u - 1) * scale


def test_table_config_travels_as_a_plain_map():
    config = TableConfig.from_options('user', {'min_count': 2, 'on_full': 'lru', 'init_scale': 0.1,
                                               'optimizer': 'adagrad'}, dim=DIM, input_dim=100)
    assert config.on_full == 'evict' and config.init == {'kind': 'uniform', 'scale': 0.1}
    assert TableConfig.from_dict(config.to_dict()) == config
    assert set(config.options) == {'min_count', 'init', 'optimizer'}
    assert TableConfig('plain', dim=DIM).options == {}
    with pytest.raises(ConfigError, match=r"table 'user': unknown option\(s\) \['colour'\]"):
        TableConfig.from_dict({**config.to_dict(), 'colour': 'red'})
    with pytest.raises(ConfigError, match=r"table 'user': unknown table option\(s\) \['colour'\]"):
        TableConfig.from_options('user', {'colour': 'red'})
    with pytest.raises(ConfigError, match=r"table 'user': option 'ttl' must be a positive integer"):
        TableConfig('user', dim=DIM, ttl=0)
