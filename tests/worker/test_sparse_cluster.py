"""Sparse rows over real ZeroMQ: 2 workers and 2 servers in dist_sync, requests as a worker sends them.

The worker side here is the bare wire form (protocol.Init/Pull/Push with ``rows``), one request per server
per step, ids split by ``sparkps.rows.ids.split_by_server``; the result must equal one in-process table
receiving the same rounds (the workers' gradients summed per id and applied once per round).
"""
import numpy as np

from cluster import PSCluster
from sparkps.comm import protocol
from sparkps.rows.ids import row_ids, split_by_server
from sparkps.rows.table import SparseTable
from sparkps.rows.values import RowSparse

OPTIONS = {'dim': 4, 'optimizer': {'name': 'adagrad', 'params': {'learning_rate': 0.5}}}
ROUNDS = 3


def batch(worker, round_):
    """The ids of one worker's batch: overlapping between workers, repeated within one, 64-bit wide."""
    rng = np.random.default_rng(100 * worker + round_)
    return row_ids([int(v) * 0x9E3779B97F4A7C15 % 2 ** 64 for v in rng.integers(0, 12, size=10)])


def gradient(rows):
    return (rows * 3.0 + 1.0).astype(np.float32)


def send_all(po, requests, arrays):
    rids = [po.request(po.server_ids[s], cmd, meta, arr) for s, (cmd, meta), arr in zip(range(len(arrays)),
                                                                                         requests, arrays)]
    return [po.wait(rid) for rid in rids]


def worker_steps(kv):
    po = kv.worker.postoffice
    servers = po.num_servers
    inits = [('INIT', protocol.Init([], [], sync=True, table='user', kind='sparse',
                                    options={**OPTIONS, 'shard': [s, servers]}).meta()) for s in range(servers)]
    send_all(po, inits, [[] for _ in range(servers)])
    po.barrier('workers')
    for round_ in range(1, ROUNDS + 1):
        ids = np.unique(batch(kv.rank, round_))
        order, bounds = split_by_server(ids, servers)
        parts = [ids[order[bounds[s]:bounds[s + 1]]] for s in range(servers)]
        pulls = [('PULL', protocol.Pull([], round_ - 1, 'user', ids=p).meta()) for p in parts]
        replies = send_all(po, pulls, [[p] for p in parts])
        grads = [gradient(np.asarray(r.arrays[0]).reshape(-1, 4)) for r in replies]
        pushes = [('PUSH', protocol.Push([], round_, 'user', ids=p).meta()) for p in parts]
        send_all(po, pushes, [[p, g.reshape(-1)] for p, g in zip(parts, grads)])
    every = np.unique(np.concatenate([batch(w, r) for w in range(2) for r in range(1, ROUNDS + 1)]))
    order, bounds = split_by_server(every, servers)
    parts = [every[order[bounds[s]:bounds[s + 1]]] for s in range(servers)]
    replies = send_all(po, [('PULL', protocol.Pull([], ROUNDS, 'user', ids=p).meta()) for p in parts],
                       [[p] for p in parts])
    rows = np.concatenate([np.asarray(r.arrays[0]).reshape(-1, 4) for r in replies])
    return dict(zip(np.concatenate(parts).tolist(), rows.tolist()))


def reference():
    table = SparseTable.from_init('user', OPTIONS)
    for round_ in range(1, ROUNDS + 1):
        updates = []
        for worker in range(2):
            ids = np.unique(batch(worker, round_))
            updates.append(RowSparse(ids, gradient(table.read_rows(ids)), (None, OPTIONS['dim'])))
        table.apply(updates[0].add(updates[1]))
    every = np.unique(np.concatenate([batch(w, r) for w in range(2) for r in range(1, ROUNDS + 1)]))
    return dict(zip(every.tolist(), table.read_rows(every).tolist()))


def test_dist_sync_rows_on_two_servers_equal_one_table():
    with PSCluster(num_servers=2, num_workers=2, kvtype='dist_sync', transport='tcp') as cluster:
        results = cluster.run_workers(worker_steps)
        held = [s.tables['user'].stats()['rows'] for s in cluster.servers.values()]
        stats = cluster.kvstores[0].table_stats()['user']
    expected = reference()
    assert results[0] == results[1]
    assert set(results[0]) == set(expected)
    for rid, row in expected.items():
        np.testing.assert_allclose(results[0][rid], row, rtol=1e-6, atol=1e-7)
    assert sum(held) == len(expected) and min(held) > 0
    assert stats['rows'] == stats['admitted'] == len(expected) and stats['evicted'] == 0
    assert stats['step'] == ROUNDS and stats['bytes'] > 0
