"""One local Spark Connect server per test session, and a client session on it.

The server runs in a subprocess (a classic local[2] SparkSession with Spark Connect's plugin, bound to
127.0.0.1 on a free port, UI off, its Python workers this interpreter with this checkout importable); the tests talk
to it as a user of a remote cluster would, through ``sc://127.0.0.1:PORT``. Why a subprocess: a Connect session
made in this process with ``SparkSession.builder.remote("local[2]")`` shares the JVM of any classic session the
process already has (whose SparkContext then serves without the Connect plugin), and the first remote session sets
SPARK_CONNECT_MODE_ENABLED in the process's environment, after which pyspark's functions build Connect columns for
every session. So each test here runs with that variable set (``connect_mode``), and a test that also uses the
classic ``spark`` fixture steps out of it with ``classic_mode()``.

Skipped, with the reason, when Spark Connect's client packages (grpcio, grpcio-status, googleapis-common-protos,
zstandard: ``pip install 'sparkps[connect]'``) are missing.
"""
import pytest

from connect_session import (
    classic_mode,
    connect_env,
    free_port,
    missing_connect_modules,
    start_server,
    stop_server,
)


@pytest.fixture(scope="session")
def connect_url():
    """``sc://127.0.0.1:PORT`` of a local[2] Spark Connect server started for this test session (stopped at its
    end); skipped when Spark Connect's client packages are missing."""
    missing = missing_connect_modules()
    if missing:
        pytest.skip("Spark Connect's client packages are missing (%s): pip install 'sparkps[connect]'"
                    % ", ".join(missing))
    server = start_server(free_port())
    try:
        yield "sc://127.0.0.1:%d" % server.port
    finally:
        stop_server(server)


@pytest.fixture(scope="session")
def connect(connect_url, request):
    """A Spark Connect SparkSession on the test server (no SparkContext, no RDDs). The classic ``spark`` fixture is
    started first: its JVM is launched by a fork of this process (with a preexec function), which gRPC's fork
    handlers break once a Connect channel is open (the launcher exits before it reports its port)."""
    with classic_mode():
        request.getfixturevalue("spark")
    with connect_env():
        from pyspark.sql.connect.session import SparkSession
        session = SparkSession.builder.remote(connect_url).getOrCreate()
    yield session
    with connect_env():
        session.stop()


@pytest.fixture(autouse=True)
def connect_mode():
    """Every test here runs as a Spark Connect program (see the module docstring)."""
    with connect_env():
        yield


@pytest.fixture
def classic(request):
    """The classic local[2] ``spark`` fixture of tests/conftest.py, made (when first asked for) outside Connect mode;
    use it inside ``classic_mode()``."""
    with classic_mode():
        return request.getfixturevalue("spark")
