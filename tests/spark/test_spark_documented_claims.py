"""Documented behaviour of the Spark side that no other test reaches: partition copies spill to a memory map
under SPARK_LOCAL_DIRS, and fit(df) trains from features too wide for dense Arrow batches (row by row)."""
import os

import numpy as np
import pytest

from sparkps.spark.common.feature_blocks import blocks_fit
from sparkps.spark.task.local_copy import LocalCopy

WIDE = 4096   # 10000 Arrow rows x 4096 float32 features = 164 MB > the 128 MB dense-batch limit


def test_a_partition_copy_spills_to_a_memmap_under_spark_local_dirs(tmp_path, monkeypatch, digits):
    X, y = digits[0][:300], digits[1][:300]
    first, second = tmp_path / "local-a", tmp_path / "local-b"
    first.mkdir()
    second.mkdir()
    monkeypatch.setenv("SPARK_LOCAL_DIRS", f"{first},{second}")
    copy = LocalCopy(64, spill_bytes=4096)
    for start in range(0, len(X), 50):
        copy.append(X[start:start + 50], y[start:start + 50])
    assert copy.spilled
    got_X, got_y = copy.finish()
    assert isinstance(got_X, np.memmap) and isinstance(got_y, np.memmap)
    folder = os.path.dirname(got_X.filename)
    assert os.path.dirname(folder) == str(first), folder       # the first local dir, as Spark lists them
    np.testing.assert_array_equal(got_X, X)
    np.testing.assert_array_equal(got_y, y)
    copy.close()
    assert os.listdir(first) == [] and os.listdir(second) == []


def test_a_small_copy_stays_in_memory(monkeypatch, tmp_path, digits):
    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(tmp_path))
    copy = LocalCopy(64)
    copy.append(digits[0][:100], digits[1][:100])
    got_X, _ = copy.finish()
    assert not copy.spilled and not isinstance(got_X, np.memmap) and os.listdir(tmp_path) == []


def wide_rows(X, y):
    """The digits' 64 pixels spread over WIDE sparse features (pixel j at index 64 * j)."""
    from pyspark.ml.linalg import Vectors
    rows = []
    for x, label in zip(X, y):
        nonzero = np.flatnonzero(x)
        rows.append((Vectors.sparse(WIDE, (64 * nonzero).tolist(), x[nonzero].tolist()), float(label)))
    return rows


@pytest.mark.spark
def test_fit_on_a_dataframe_too_wide_for_dense_batches_trains_row_by_row(spark, digits):
    from sparkps.spark import SparkTrainer, mlp_symbol
    X_train, y_train, X_test, y_test = digits
    df = spark.createDataFrame(wide_rows(X_train, y_train), ["features", "label"]).repartition(2)
    assert not blocks_fit(df, WIDE)                              # so fit must take the row path
    trainer = SparkTrainer(mlp_symbol([WIDE, 32, 10]), (WIDE,), batch_size=32, num_epoch=3, num_workers=2,
                           num_servers=1, optimizer_params={"learning_rate": 0.2, "momentum": 0.9},
                           progress=False, timeout=240)
    model = trainer.fit(df)
    assert [h["epoch"] for h in model.history] == list(range(3))
    wide_test = np.zeros((len(X_test), WIDE), np.float32)
    wide_test[:, ::64] = X_test
    accuracy = np.mean(np.argmax(model.predict_numpy(wide_test), axis=1) == y_test)
    assert accuracy >= 0.9, accuracy
