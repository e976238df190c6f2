"""The README's classic examples run as written, each a program of its own, in a fresh process as a user runs them:
the venv's Python by its path, with no PYSPARK_PYTHON / PYSPARK_DRIVER_PYTHON, no activated virtualenv (neither
VIRTUAL_ENV nor the venv's bin/ on PATH) and none of the Makefile's environment. Spark's Python workers would
otherwise run a ``python3`` that cannot import sparkps: the taste fits, and the second program scores the saved
pipeline with no fit before it (the worker Python settled by ``transform`` of a freshly loaded model), and both
reach 0.95 test accuracy on the same shuffled split with the estimator's defaults."""
import re
import subprocess

import pytest

from spark_env import readme_blocks, user_env, user_python

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.timeout(900)   # separate JVMs start slowly on a loaded machine
def test_the_classic_examples_run_as_written_in_fresh_processes(tmp_path):
    taste, reload = readme_blocks("## A taste", 2)
    outputs = []
    for name, code in (("taste.py", taste), ("reload.py", reload)):
        (tmp_path / name).write_text(code)
        run = subprocess.run([user_python(), name], env=user_env(), capture_output=True, text=True, timeout=500,
                             cwd=str(tmp_path))
        assert run.returncode == 0, name + "\n" + run.stdout[-2000:] + run.stderr[-3000:]
        outputs.append(run.stdout)
    # the estimator's defaults (20 epochs) on a shuffled split of the digits
    accuracy = float(re.search(r"test accuracy (\d\.\d+)", outputs[0]).group(1))
    assert accuracy >= 0.95
    assert float(re.search(r"reloaded test accuracy (\d\.\d+)", outputs[1]).group(1)) == accuracy
