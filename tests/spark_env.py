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


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def user_python():
    """The Python a user runs the README's examples with: the venv's, by its path."""
    return sys.executable


def user_env():
    """A fresh user's environment: no PYSPARK_* variable, no activated virtualenv (no VIRTUAL_ENV, the venv's bin/
    not on PATH), none of the Makefile's settings; only PYTHONPATH naming this checkout, which an installed sparkps
    makes needless (the tests run this tree, not the venv's install), and SPARK_LOCAL_IP: the test machines
    bind Spark to the loopback address."""
    venv_bin = os.path.dirname(os.path.abspath(sys.executable))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYSPARK", "SPARK_", "VIRTUAL_ENV")) and k not in ("PYTHONPATH", "SPARK_HOME")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if p and os.path.abspath(p) != venv_bin)
    env.update(PYTHONPATH=ROOT, SPARK_LOCAL_IP="127.0.0.1", OMP_NUM_THREADS="1")
    return env


def readme_blocks(heading, count):
    """The first ``count`` python code blocks of README.md after ``heading``, as written."""
    import re
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text[text.index(heading):], re.S)[:count]
