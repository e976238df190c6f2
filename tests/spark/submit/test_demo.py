"""`make demo` end to end: the Makefile's own demo command, shrunk to 3 epochs, on a fresh local Spark."""
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from spark_env import spark_env

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def demo_command():
    """The recipe of the Makefile's ``demo`` target, with ``$(PY)`` as this interpreter."""
    makefile = open(os.path.join(ROOT, "Makefile"), encoding="utf-8").read()
    recipe = re.search(r"^demo:.*\n\t(.+)$", makefile, re.M).group(1)
    return [sys.executable if word == "$(PY)" else word for word in shlex.split(recipe)]


def test_make_demo_trains_saves_scores_and_plots(tmp_path):
    command = demo_command()
    assert "--demo" in command and "--output" in command
    command[command.index("--output") + 1] = str(tmp_path / "demo-output")
    run = subprocess.run(command + ["--epochs", "3", "--master", "local[2]"], env=spark_env(), cwd=ROOT,
                         capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    output = tmp_path / "demo-output"
    summary = json.loads((output / "summary.json").read_text())
    assert summary["epochs"] == 3
    assert [h["epoch"] for h in summary["history"]] == [1, 2, 3]        # as the progress lines count
    assert summary["validation_accuracy"] >= 0.9, summary
    assert re.search(r"^test accuracy: 0\.9\d+$", run.stdout, re.M), run.stdout
    assert (output / "model" / "model-0003.params").exists() and (output / "model" / "model-symbol.json").exists()
    assert (output / "training-curve.png").stat().st_size > 1000
    rows = "".join(p.read_text() for p in sorted((output / "predictions").glob("part-*.csv"))).splitlines()
    assert len([r for r in rows if not r.startswith("label")]) == 360
