"""`sparkps status` shows the sparse tables' statistics (rows, bytes, admitted, evicted), summed over the servers,
as worker 0 reports them: a real scheduler and 2 servers over tcp on 127.0.0.1, the command run as a user runs it.

Data: a documented generator — 6 ids (64-bit, some negative) pulled once, 2 of them again, into table 'user' with
``min_count=2``: 2 rows admitted, 4 ids counted but not stored."""
import json

import numpy as np
from click.testing import CliRunner

from cluster import PSCluster, cluster_timeouts
from sparkps.cli import main
from sparkps.rows.values import RowSparse

IDS = np.array([3, -7, 2 ** 62 + 1, 11, 12, 13], np.int64)


def test_sparkps_status_prints_the_tables_of_worker_0():
    def work(kv):
        kv.init_table('user', RowSparse(np.empty(0, np.int64), np.empty((0, 4), np.float32), (None, 4)),
                      {'min_count': 2})
        for ids in (IDS, IDS[:2]):
            kv.row_sparse_pull('user', out=np.empty((ids.size, 4), np.float32), row_ids=ids)
        kv.report_progress(epoch=0, nbatch=2, samples=8, force=True)
        kv.barrier()                          # the progress report was handled before this barrier
        env = {"SPARKPS_SCHEDULER_URI": kv.worker.postoffice.scheduler_uri, "SPARKPS_SECRET": secret}
        shown = CliRunner().invoke(main, ["status"], env=env, catch_exceptions=False)
        raw = CliRunner().invoke(main, ["status", "--json"], env=env, catch_exceptions=False)
        return shown, raw, kv.table_stats()['user']

    with PSCluster(num_servers=2, num_workers=1, kvtype='dist_async', transport='tcp',
                   timeouts=cluster_timeouts(heartbeat_timeout=30.0)) as cluster:
        secret = cluster.secret
        (shown, raw, stats), = cluster.run_workers(work, timeout=60)
    assert shown.exit_code == 0, shown.output
    assert stats['rows'] == stats['admitted'] == 2 and stats['bytes'] > 0
    assert ("worker 0: epoch 0, batch 2, 8 samples\n  table user: 2 rows, %d bytes, 2 admitted, 0 evicted\n"
            % stats['bytes']) in shown.output
    reported = json.loads(raw.output)["progress"]["0"]["tables"]["user"]
    assert {k: reported[k] for k in ('rows', 'bytes', 'admitted', 'evicted')} == {
        'rows': 2, 'bytes': stats['bytes'], 'admitted': 2, 'evicted': 0}
