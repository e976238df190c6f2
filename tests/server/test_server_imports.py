"""What a server role process imports (``python -m sparkps.server``, started beside a Spark worker): the transport,
the tables and the optimizers, never Spark, pandas, plotting or the networks' code, which would add seconds to
every cold start on a loaded machine."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# numba (and the scipy it checks) only for a table past rows.index.SWITCH_AT ids: 1-2 s of CPU at every start otherwise
NEVER = ("pyspark", "pandas", "matplotlib", "pyarrow", "scipy", "numba", "sklearn", "torch", "sparkps.spark",
         "sparkps.symbol",
         "sparkps.nets", "sparkps.train", "sparkps.ctr", "sparkps.worker", "sparkps.scheduler")

# everything the process runs before it serves: the entry point's module, the sparse tables its warm-up thread
# imports (sparkps/server/runner.py, _warm_tables), and a small table's first rows
SERVER = """
import json, sys
import numpy as np
import sparkps.server.runner
from sparkps.server.tables import sparse_served, sparse_checkpoint
from sparkps.rows.table import SparseTable
table = SparseTable("t", dim=4)
assert table.pull(np.arange(1000, dtype=np.uint64)).shape == (1000, 4) and not table.index.compiled
print(json.dumps(sorted(sys.modules)))
"""


def test_the_server_process_imports_no_spark_pandas_plotting_network_code_or_numba_for_small_tables(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", SERVER], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "sparkps.rows.index" in modules and "zmq" in modules
    assert "sparkps.rows.kernels" not in modules
    assert [m for m in modules if m.split(".")[0] in NEVER or ".".join(m.split(".")[:2]) in NEVER] == []
