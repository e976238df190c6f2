"""MXNet 1.9.1 unittest/test_kvstore.py::test_invalid_pull, key-type half: a store keyed by ints refuses string keys
and a store keyed by strings refuses ints, on init, push, pull and pushpull. (The half about row_sparse outputs of
a dense pull has no counterpart: sparkps's pull fills dense arrays.) Row-sparse tables are exempt (docs/mxnet.md)."""
import numpy as np
import pytest

from sparkps import kvstore
from sparkps.errors import ConfigError
from sparkps.rows.values import RowSparse

SHAPE = (4, 4)
KEYS = [5, 7, 11]
STR_KEYS = ['b', 'c', 'd']


def init_kv(keys):
    kv = kvstore.create('local')
    kv.init(3 if keys is KEYS else 'a', np.zeros(SHAPE))
    kv.init(keys, [np.zeros(SHAPE)] * len(keys))
    return kv


def check_invalid_key_types_single(kv, key):
    value = np.ones(SHAPE) * 2
    for call in (lambda: kv.init(key, value), lambda: kv.push(key, value), lambda: kv.pull(key, out=value),
                 lambda: kv.pushpull(key, value, out=value)):
        with pytest.raises(ConfigError, match=repr(key)):
            call()


def check_invalid_key_types_list(kv, keys):
    values = [np.ones(SHAPE) * 2 for _ in keys]
    for call in (lambda: kv.init(keys, values), lambda: kv.push(keys, values), lambda: kv.pull(keys, out=values),
                 lambda: kv.pushpull(keys, values, out=values)):
        with pytest.raises(ConfigError, match="keyed by"):
            call()


@pytest.mark.parametrize('own, other', [(KEYS, STR_KEYS), (STR_KEYS, KEYS)], ids=['int_keys', 'str_keys'])
def test_invalid_pull(own, other):
    # MXNet: test_invalid_pull
    kv = init_kv(own)
    check_invalid_key_types_single(kv, other[0])
    check_invalid_key_types_list(kv, other)
    out = np.ones(SHAPE)
    kv.pull(own[0], out=out)                           # its own keys still work, unchanged by the refusals
    np.testing.assert_array_equal(out, 0)


def test_a_store_of_int_keys_keeps_its_string_named_row_sparse_tables():
    kv = init_kv(KEYS)
    kv.init('emb', RowSparse.from_dense(np.arange(12.0).reshape(6, 2)))
    rows = np.zeros((2, 2))
    kv.row_sparse_pull('emb', out=rows, row_ids=np.array([4, 1]))
    np.testing.assert_array_equal(rows, [[8, 9], [2, 3]])


def test_a_dist_store_refuses_the_other_key_type(ps_cluster):
    def work(kv):
        kv.init([0, 1], [np.zeros(SHAPE), np.zeros(SHAPE)])
        with pytest.raises(ConfigError, match="'w' is a string but this store is keyed by ints"):
            kv.pull('w', out=np.zeros(SHAPE))
        with pytest.raises(ConfigError, match="keyed by ints"):
            kv.push(['w'], [np.zeros(SHAPE)])
        out = np.ones(SHAPE)
        kv.pull(0, out=out)
        kv.end_training()
        return out
    with ps_cluster(num_servers=1, num_workers=1) as cluster:
        (out,) = cluster.run_workers(work)
    np.testing.assert_array_equal(out, 0)
