"""Parts of jobs/train_classifier.py on the shared session: the worker count never changes the master, epochs
counted from 1 everywhere, rows named by their file line."""
import importlib.util
import logging
import os
from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.spark

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


@pytest.fixture(scope="module")
def job():
    spec = importlib.util.spec_from_file_location("train_classifier", os.path.join(ROOT, "jobs",
                                                                                   "train_classifier.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_more_workers_than_slots_trains_fewer_workers_on_the_same_master(spark, job, caplog):
    with caplog.at_level(logging.WARNING, logger="train_classifier"):
        assert job.fit_workers(spark, 3, 3) == (2, 2)
        assert job.fit_workers(spark, 2, 1) == (2, 1)
    assert "--num-workers 3 but the master local[2] has 2 task slots: training with 2 workers" in caplog.text
    assert spark.sparkContext.master == "local[2]"


def test_epochs_count_from_one_and_the_plot_shows_test_accuracy(job, tmp_path):
    history = job.numbered_from_one([{"epoch": 0, "accuracy": 0.5, "cross-entropy": 1.0},
                                     {"epoch": 1, "accuracy": 0.8, "cross-entropy": 0.5}])
    assert [h["epoch"] for h in history] == [1, 2]
    import matplotlib.pyplot as plt
    saved = {}
    original = plt.Figure.savefig

    def keep(fig, path, **kw):
        fig.canvas.draw()
        saved["ticks"] = [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes]
        saved["legend"] = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
        return original(fig, path, **kw)

    plt.Figure.savefig = keep
    try:
        job.plot_curve(history, str(tmp_path / "curve.png"), test_accuracy=0.9)
    finally:
        plt.Figure.savefig = original
    for labels in saved["ticks"]:                                   # whole epochs (it showed 1.0, 1.2, ...)
        assert {"1", "2"} <= set(labels) and all(label.isdigit() for label in labels), labels
    assert saved["legend"] == ["training", "test 0.900"]
    assert (tmp_path / "curve.png").stat().st_size > 1000


def test_a_row_is_named_by_its_line_of_a_single_text_file(job, tmp_path):
    data = tmp_path / "train.libsvm"
    data.write_text("# digits\n1 1:0.5\n\n0 2:0.5\n3 1:1\n")
    args = SimpleNamespace(train=str(data), input_table=None, format="auto")
    assert job.with_input_line("row 2: label 3 is outside [0, 2)", args) == \
        "%s:5: row 2: label 3 is outside [0, 2)" % data
    assert job.with_input_line("the training data has no rows", args) == "the training data has no rows"
