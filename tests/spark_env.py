"""The environment of the Spark processes a test starts (a module of its own: a test module imports it by name,
which a conftest.py cannot offer once a test folder has a conftest.py of its own)."""
import os
import sys


def pyspark_home():
    """pyspark's package dir: it ships the jars and bin/ that SPARK_HOME must point to."""
    import pyspark
    return os.path.dirname(os.path.abspath(pyspark.__file__))


def spark_env():
    """Environment for Spark processes: our venv's python for executors, loopback only, few BLAS threads."""
    env = dict(os.environ)
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_HOME=os.environ.get("SPARK_HOME") or pyspark_home(), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    return env
