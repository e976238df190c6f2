"""What a server role process imports (``python -m sparkps.server``, started beside a Spark worker): the transport,
the tables and the optimizers, never Spark, pandas, plotting or the networks' code, which would add seconds to
every cold start on a loaded machine."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (scipy's package itself is imported by numba, which checks its version when it loads)
NEVER = ("pyspark", "pandas", "matplotlib", "pyarrow", "sklearn", "torch", "sparkps.spark", "sparkps.symbol",
         "sparkps.nets", "sparkps.train", "sparkps.ctr", "sparkps.worker", "sparkps.scheduler")

# everything the process runs before it serves: the entry point's module, and the sparse tables its warm-up thread
# imports (sparkps/server/runner.py, _warm_tables)
SERVER = """
import json, sys
import sparkps.server.runner
from sparkps.server.tables import sparse_served, sparse_checkpoint, row_index
row_index.warm()
print(json.dumps(sorted(sys.modules)))
"""


def test_the_server_process_imports_no_spark_pandas_plotting_or_network_code(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", SERVER], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.strip().splitlines()[-1])
    assert "sparkps.server.tables.row_index" in modules and "zmq" in modules
    assert [m for m in modules if m.split(".")[0] in NEVER or ".".join(m.split(".")[:2]) in NEVER] == []
