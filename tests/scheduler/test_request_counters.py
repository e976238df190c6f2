"""The request counters in the scheduler's STATUS: every server counts the requests it served by command and worker
(reported every heartbeat interval, and by worker 0 once more after the workers' last barrier), every worker its
steps and the requests they sent, and the scheduler the messages it received. N steps of W workers over S servers
show as exactly N PUSHPULLs per server per worker."""
import time

import numpy as np
import pytest

from cluster import run_in_threads
from sparkps.optimizer import SGD
from sparkps.scheduler import format_status

STEPS = 3


def steps(kv):
    """Declare one dense key spread over every server and take STEPS push+pull steps (one PUSHPULL per server)."""
    kv.init(0, np.zeros((8, 4), np.float32))
    kv.set_optimizer(SGD(learning_rate=0.1))
    weight = np.zeros((8, 4), np.float32)
    for _ in range(STEPS):
        kv.push(0, np.ones((8, 4), np.float32))
        kv.pull(0, out=weight)
    return kv.rank


def served_pushpulls(status):
    return {rank: server["served"].get("PUSHPULL", {}) for rank, server in status["requests"]["servers"].items()}


@pytest.mark.parametrize("kvtype", ["dist_sync", "dist_async"])
def test_n_steps_show_as_n_requests_per_server_per_worker(ps_cluster, kvtype):
    c = ps_cluster(num_servers=2, num_workers=2, kvtype=kvtype)
    c.run_workers(steps)
    expected = {str(s): {"worker 0": STEPS, "worker 1": STEPS} for s in range(2)}
    deadline = time.monotonic() + 10      # the servers' own reports, every heartbeat interval, while the job runs
    while served_pushpulls(c.scheduler.status()) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert served_pushpulls(c.scheduler.status()) == expected
    c.run_workers(lambda kv: kv.end_training())
    run_in_threads([kv.close for kv in c.kvstores], 10)
    c.scheduler.wait(10)
    status = c.scheduler.status()
    assert served_pushpulls(status) == expected
    for rank in ("0", "1"):
        assert status["requests"]["workers"][rank]["steps"] == STEPS
        assert status["requests"]["workers"][rank]["step_requests"] == 2 * STEPS
        assert status["requests"]["workers"][rank]["sent"]["PUSHPULL"] == 2 * STEPS
    received = status["requests"]["scheduler"]["received"]
    assert received["REGISTER"] == 8 and received["FINISH"] == 2 and received["HEARTBEAT"] > 0
    assert received["BARRIER"] >= 2 * 2 and status["requests"]["scheduler"]["span_s"] > 0
    shown = format_status(status)     # what `sparkps status` prints
    assert "server 1 served: " in shown and "PUSHPULL %d" % (2 * STEPS) in shown
    assert "worker 1 sent: %d steps, %d step requests" % (STEPS, 2 * STEPS) in shown
