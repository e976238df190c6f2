"""MXNet's dist type names on a real cluster: the name asked for is kept, the mode follows it, capabilities tell."""
import numpy as np
import pytest


@pytest.mark.parametrize("kvtype,sync", [("dist_device_sync", True), ("dist_async_device", False)])
def test_dist_type_names_keep_their_name_and_mode(ps_cluster, kvtype, sync):
    with ps_cluster(num_servers=1, num_workers=1, kvtype=kvtype) as cluster:
        def work(kv):
            kv.init(0, np.zeros(3, np.float32))
            kv.pushpull(0, np.ones(3, np.float32), out=np.empty(3, np.float32))
            return kv.type, kv.is_capable("sync"), kv.is_capable("checkpoint"), kv.worker.sync
        (got,) = cluster.run_workers(work)
    assert got == (kvtype, sync, True, sync)
