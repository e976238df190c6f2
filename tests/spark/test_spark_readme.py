"""The README's "A taste" runs as written from the venv's Python, with PYSPARK_PYTHON unset (Spark's Python
workers would otherwise run a `python3` that cannot import sparkps)."""
import os
import re
import subprocess
import sys

import pytest

from spark_env import spark_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def taste():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text[text.index("## A taste"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.timeout(600)   # separate JVMs start slowly on a loaded machine
def test_the_taste_runs_as_written_without_pyspark_python(tmp_path):
    script = tmp_path / "taste.py"
    script.write_text(taste())
    env = spark_env()
    env.pop("PYSPARK_PYTHON", None)
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    run = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=500,
                         cwd=str(tmp_path))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    accuracy = float(re.search(r"test accuracy (\d\.\d+)", run.stdout).group(1))
    assert accuracy >= 0.85
