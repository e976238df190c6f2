"""Which Python Spark's Python workers run, settled at every entry point that hands Spark a Python function: a
fit, ``transform`` of a model (fresh from ``load`` or not), ``predict`` on an RDD, the CTR featurisation, MLflow's
pyfunc and the jobs all call ``settle_worker_python`` before they wrap a function, so a program run as
``.venv/bin/python script.py`` works with PYSPARK_PYTHON unset and no virtualenv activated.

- A classic session on a local master (every Python worker on this machine) with neither PYSPARK_PYTHON nor
  ``spark.pyspark.python`` set: a worker Python (``sc.pythonExec``, default ``python3``) that cannot import
  sparkps is replaced by this interpreter.  Spark reads ``sc.pythonExec`` when a function is wrapped.
- A classic session otherwise: the chosen Python is probed on local masters (ConfigError with the fix when it
  lacks sparkps); executors elsewhere are their cluster's to configure.
- A Spark Connect session: the server runs the Python workers with the Python of ITS environment:
  PYSPARK_PYTHON, else PYSPARK_DRIVER_PYTHON, else ``python3`` (the server reads no ``spark.pyspark.python``).
  Nothing can be changed from the client; ``SparkSession.builder.remote("local[N]")`` starts its server in a
  JVM of this process, which inherits this process's environment when it starts (set PYSPARK_PYTHON first).
"""
import functools
import os
import re
import shutil
import subprocess
import sys

from sparkps.errors import ConfigError

LOCAL = re.compile(r"^local(?:\[(\*|\d+)(?:,\s*\d+)?\])?$")
LOCAL_CLUSTER = re.compile(r"^local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]$")


def on_this_machine(master):
    """True for local and local-cluster masters: every Python worker runs on this machine."""
    return bool(LOCAL.match(master) or LOCAL_CLUSTER.match(master))


def settle_worker_python(where):
    """Make Spark's Python workers able to import sparkps before a Python function is wrapped (see the module's
    docstring).  ``where`` is a SparkSession, a SparkContext, a DataFrame or an RDD, of either session kind.
    Returns the Python the workers will run (None on Spark Connect: the server's environment decides).  Blocks
    for one short interpreter start the first time a Python is probed (at most 60 s), never again for it."""
    from sparkps.spark.common.session import is_connect
    if is_connect(where):
        return None
    sc = _spark_context(where)
    conf = dict(sc.getConf().getAll())
    chosen = os.environ.get("PYSPARK_PYTHON") or conf.get("spark.pyspark.python")
    if not chosen and on_this_machine(sc.master):
        resolved = shutil.which(sc.pythonExec) or sc.pythonExec
        if os.path.abspath(resolved) != os.path.abspath(sys.executable) and import_problem(resolved):
            sc.pythonExec = sys.executable
        return sc.pythonExec
    check_worker_python(sc.pythonExec, sc.master)
    return sc.pythonExec


def _spark_context(where):
    """The SparkContext behind a classic SparkSession, DataFrame, RDD or SparkContext."""
    session = getattr(where, "sparkSession", None)       # a DataFrame
    if session is not None:
        return session.sparkContext
    if hasattr(where, "sparkContext"):                   # a SparkSession
        return where.sparkContext
    return getattr(where, "context", where)              # an RDD, else the SparkContext itself


def check_worker_python(python_exec, master):
    """On masters whose executors run on this machine (local, local-cluster), make sure Spark's Python
    workers (``python_exec``, from PYSPARK_PYTHON) can import sparkps; raise ConfigError saying how to fix it
    otherwise.  Blocks for one short interpreter start (at most 60 s), once per interpreter."""
    if not on_this_machine(master):
        return
    resolved = shutil.which(python_exec) or python_exec
    if os.path.abspath(resolved) == os.path.abspath(sys.executable):   # not realpath: venvs link the base
        return
    problem = import_problem(resolved)
    if problem:
        raise ConfigError(
            "Spark's Python workers run %r (PYSPARK_PYTHON), which cannot import sparkps: %s. Set "
            "PYSPARK_PYTHON=%s (the Python that has sparkps installed) before the SparkSession is created"
            % (python_exec, problem, sys.executable))


@functools.lru_cache(maxsize=8)
def import_problem(python_exec):
    """The last line of the error ``python_exec`` gives when importing what a Python worker of sparkps imports
    (sparkps's dependencies, pyarrow for the UDFs), or ''."""
    probe = "import numpy, zmq, msgpack, pyarrow, sparkps.train.feedforward, sparkps.worker"
    try:
        done = subprocess.run([python_exec, "-c", probe], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    lines = done.stderr.strip().splitlines()
    return (lines[-1] if lines else "exit code %d" % done.returncode) if done.returncode else ""
