"""Spark Connect for the tests: a local[2] Connect server in a subprocess, and the environment switch between
Connect and classic programs in one process (see tests/spark/connect/conftest.py, which uses them)."""
import contextlib
import os
import socket
import subprocess
import sys
import time

CONNECT_MODULES = ("grpc", "grpc_status", "google.rpc", "zstandard")
START_SECONDS = 180       # a loaded 2-core machine takes ~40 s to start the server's JVM

SERVER = """
import sys
from pyspark.sql import SparkSession
session = (SparkSession.builder.master("local[2]").appName("sparkps-connect-tests")
           .config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
           .config("spark.connect.grpc.binding.address", "127.0.0.1")
           .config("spark.connect.grpc.binding.port", sys.argv[1])
           .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
           .config("spark.sql.shuffle.partitions", "2").config("spark.default.parallelism", "2")
           .config("spark.driver.memory", "1g").getOrCreate())
session.sparkContext.setLogLevel("ERROR")
print("ready", flush=True)
sys.stdin.read()          # until the test session closes our stdin
session.stop()
"""


def missing_connect_modules():
    """The Spark Connect client modules that do not import here."""
    import importlib
    missing = []
    for name in CONNECT_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


@contextlib.contextmanager
def classic_mode():
    """Run a block as a classic-session program: without SPARK_CONNECT_MODE_ENABLED in the environment."""
    saved = os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["SPARK_CONNECT_MODE_ENABLED"] = saved


@contextlib.contextmanager
def connect_env():
    saved = os.environ.get("SPARK_CONNECT_MODE_ENABLED")
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("SPARK_CONNECT_MODE_ENABLED", None)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]




def start_server(port):
    """A subprocess serving Spark Connect on 127.0.0.1:``port`` (local[2], its Python workers this interpreter with
    this checkout importable); stop it with ``stop_server``. RuntimeError when it is not serving within
    START_SECONDS."""
    import pyspark
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               SPARK_HOME=os.environ.get("SPARK_HOME") or os.path.dirname(os.path.abspath(pyspark.__file__)))
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        env.pop(key, None)
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True)
    server.port = port
    if not _await_ready(server, port):
        stop_server(server)
        raise RuntimeError("the Spark Connect server did not start within %d s" % START_SECONDS)
    return server


def stop_server(server):
    """Stop a server of ``start_server`` (waits up to a minute, then kills it)."""
    try:
        server.stdin.close()
        server.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _await_ready(server, port):
    """True once the server printed 'ready' and its port accepts a connection."""
    line = server.stdout.readline()
    if line.strip() != "ready":
        return False
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
        time.sleep(0.2)
    return False
