"""A worker task that started a server process notices at once when that process dies before the cluster
formed: registration fails with the exit code instead of waiting out the registration timeout."""
import subprocess
import sys
import time

import pytest

from cluster import cluster_timeouts
from sparkps.comm import Postoffice
from sparkps.errors import ClusterError
from sparkps.scheduler import Scheduler
from sparkps.spark.task.barrier_task import watch_server_exit


def test_a_server_process_dying_at_start_fails_registration_with_its_exit_code():
    sched = Scheduler(1, 1, timeouts=cluster_timeouts(register=30)).start()
    worker = Postoffice("worker", sched.uri, sched.secret, rank=0, timeouts=sched.timeouts)
    server = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    started = time.monotonic()
    try:
        with watch_server_exit(server, {"scheduler_uri": sched.uri, "secret": sched.secret}, 0):
            with pytest.raises(ClusterError, match=r"server 0 failed before registering: .*exited with code 3"):
                worker.start()
        assert time.monotonic() - started < 10
    finally:
        server.wait(10)
        worker.stop()
        sched.stop()
