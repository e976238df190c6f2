"""Spark's Python workers must be able to import sparkps; on local masters the driver checks that before
launching and says which interpreter to set."""
import subprocess
import sys

import pytest

from sparkps.errors import ConfigError
from sparkps.spark.driver.checks import check_worker_python


def test_an_interpreter_without_sparkps_is_refused_with_advice(tmp_path):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    bare = str(tmp_path / "bare" / "bin" / "python")
    with pytest.raises(ConfigError, match=r"cannot import sparkps: ModuleNotFoundError: .*Set PYSPARK_PYTHON="):
        check_worker_python(bare, "local[2]")


def test_the_driver_interpreter_and_remote_masters_pass_without_a_probe(monkeypatch):
    from sparkps.spark.common import worker_python
    probed = []
    monkeypatch.setattr(worker_python, "import_problem", lambda python: probed.append(python) or "")
    assert check_worker_python(sys.executable, "local[2]") is None
    assert check_worker_python("/no/such/python", "spark://cluster:7077") is None   # executors elsewhere
    assert probed == []
    check_worker_python("/no/such/python", "local[2]")     # another interpreter on a local master: probed
    assert probed == ["/no/such/python"]
