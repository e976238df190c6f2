"""The README's Spark Connect taste runs as written (a program of its own: it starts its local Connect server with
``SparkSession.builder.remote("local[2]")``), once sparkps estimators fit on Spark Connect."""
import os
import re
import subprocess

import pytest

from spark_env import user_env, user_python

pytestmark = [pytest.mark.spark, pytest.mark.slow]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def connect_taste():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("On a Spark Connect session"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_taste_names_only_what_a_connect_session_has():
    code = connect_taste()
    assert 'remote("local[2]")' in code and "sparkContext" not in code and ".rdd" not in code


@pytest.mark.timeout(600)
def test_the_connect_taste_runs_as_written(tmp_path):
    """In a fresh user's process (spark_env.user_env: no PYSPARK_*, no activated virtualenv): the server's Python
    workers run the Python the example gives them, as the README says they do."""
    script = tmp_path / "taste.py"
    script.write_text(connect_taste())
    run = subprocess.run([user_python(), str(script)], env=user_env(), capture_output=True, text=True, timeout=500,
                         cwd=str(tmp_path))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    # the estimator's defaults (10 epochs) on a shuffled split of the digits
    assert float(re.search(r"test accuracy on Spark Connect (\d\.\d+)", run.stdout).group(1)) >= 0.95
    assert (tmp_path / "digits-model" / "weights").is_dir()
