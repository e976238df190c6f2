"""The model's bytes per step equal a measured step's: 2 workers, 2 servers, in-process, over tcp on 127.0.0.1.

Each worker takes the same batch three times, so every step PUSHPULL pushes and pulls the same distinct ids; the
frames every node encodes are counted (benchmarks/bench_scale.py's WireMeter) and compared, server by server, with
``plan.model.step_request_bytes`` / ``step_reply_bytes`` of that server's share of the ids.
"""
import numpy as np

from benchmarks.bench_scale import DENSE, DIM, WireMeter, worker_steps
from cluster import PSCluster
from sparkps.plan import constants, model
from sparkps.rows.ids import mix64, shard_of

SERVERS, WORKERS, STEPS = 2, 2, 3


def test_model_bytes_per_step_equal_a_measured_step():
    rng = np.random.default_rng(5)
    batches = [mix64(rng.integers(0, 50_000, 3000).astype(np.uint64)) for _ in range(WORKERS)]
    with WireMeter() as meter, PSCluster(SERVERS, WORKERS, kvtype='dist_sync', transport='tcp') as cluster:
        cluster.start_workers()
        nodes = {kv.rank: kv.postoffice.node_id for kv in cluster.kvstores}
        cluster.run_workers(lambda kv: worker_steps(kv, [batches[kv.rank]] * STEPS))
        served = [dict(server.served) for server in cluster.servers.values()]
    for rank, node in nodes.items():
        per_server = np.bincount(shard_of(np.unique(batches[rank]), SERVERS), minlength=SERVERS)
        out = sum(model.step_request_bytes(DENSE / SERVERS, u, DIM) for u in per_server) * (STEPS - 1)
        messages, sent = meter.total('PUSHPULL', False, {node})
        assert messages == SERVERS * (STEPS - 1)                      # one request per server per step
        assert all(by_server[('PUSHPULL', node)] == STEPS - 1 for by_server in served)
        # the arrays are exact; each header frame differs from the model's by a few bytes of msgpack
        payload = out - messages * constants.STEP_HEADER_BYTES
        assert sent - meter.headers('PUSHPULL', False, {node}) == payload
        assert abs(sent - out) <= 8 * messages, (sent, out)
    replies, received = meter.total('PUSHPULL', True)
    expected = (STEPS - 1) * sum(sum(model.step_reply_bytes(DENSE / SERVERS, u, DIM) for u in
                                     np.bincount(shard_of(np.unique(b), SERVERS), minlength=SERVERS)) for b in batches)
    assert replies == WORKERS * SERVERS * (STEPS - 1)
    assert received - meter.headers('PUSHPULL', True) == expected - replies * constants.REPLY_HEADER_BYTES
    assert abs(received - expected) <= 8 * replies
