"""One flag vocabulary across the two jobs: --num-workers / --num-servers (the old --workers / --servers kept as
aliases), the estimator's multi-value separator, defaults in --help, epochs counted from 1."""
import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def job_module(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, "jobs", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("spelling", ["--num-workers", "--workers"])
def test_both_jobs_take_num_workers_and_the_old_spelling(spelling):
    ctr = job_module("train_ctr").parse_args(["--train", "a", "--test", "b", spelling, "3", "--servers", "2"])
    mlp = job_module("train_classifier").parse_args(["--train", "a", spelling, "3", "--num-servers", "2"])
    assert (ctr.num_workers, ctr.num_servers) == (3, 2) and (mlp.workers, mlp.servers) == (3, 2)


def test_the_jobs_separator_is_the_estimators():
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    default = SparkpsCTRClassifier().getOrDefault("multiValueSeparator")
    assert job_module("train_ctr").parse_args(["--demo"]).separator == default == ","


@pytest.mark.parametrize("name,expected", [("train_ctr", "(default: deepfm)"), ("train_classifier", "(default: sgd)")])
def test_help_shows_the_defaults(name, expected):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", name + ".py"), "--help"], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0 and expected in " ".join(done.stdout.split())
    assert "(default: 2)" in " ".join(done.stdout.split())       # --num-workers


def test_train_ctr_counts_epochs_from_1():
    module = job_module("train_ctr")
    assert [e["epoch"] for e in module.numbered_from_one([{"epoch": 0}, {"epoch": 1}])] == [1, 2]


def test_no_curve_shows_no_default_of_its_own(capsys):
    """--no-curve's help says what it does, not argparse's store_false default (True, which reads as 'on')."""
    with pytest.raises(SystemExit):
        job_module("train_ctr").parse_args(["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--no-curve never encrypt it" in help_text and "(default: True)" not in help_text
    assert [job_module("train_ctr").parse_args(["--demo"] + flag).curve for flag in ([], ["--no-curve"])] == \
        [None, False]
