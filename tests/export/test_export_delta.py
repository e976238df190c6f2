"""The rows of a checkpoint folder as a delta export compares them (base, then deltas: rows overwritten, evicted ids
dropped) and which of a model's rows changed since: no Spark, checkpoint files written here."""
import numpy as np
import pytest

from sparkps.comm.manifest import save_manifest
from sparkps.errors import DataError
from sparkps.rows.values import RowSparse
from sparkps.spark.model.export_delta import changed_rows, checkpoint_tables


def write_generation(folder, table, generation, ids, values, removed=()):
    name = "sparse-%s-g%d-s0.npz" % (table, generation)
    np.savez(folder / name, table=np.array(table), ids=np.array(ids, np.uint64), values=np.array(values, np.float32),
             removed=np.array(removed, np.uint64))
    return {"generation": generation, "delta": generation > 0, "files": [name], "rows": len(ids)}


def checkpoint(folder, dim=2, dense_shape=(3,)):
    generations = [write_generation(folder, "user", 0, [1, 2, 3], [[1, 1], [2, 2], [3, 3]]),
                   write_generation(folder, "user", 1, [2, 4], [[20, 20], [4, 4]], removed=[3])]
    save_manifest(folder, {"format": "sparkps-kvstore", "keys": {"0": {"shape": list(dense_shape), "count": 1,
                                                                      "pieces": []}},
                           "optimizer": {"name": "sgd", "params": {"param_idx2name": {"0": "bias"}}},
                           "tables": {"user": {"options": {"name": "user", "dim": dim},
                                               "generations": generations}}})


def test_generations_are_replayed_and_changes_found_bit_for_bit(tmp_path):
    checkpoint(tmp_path)
    model = {"bias": np.zeros(3, np.float32),
             "user": RowSparse([1, 2, 4, 5], np.array([[1, 1], [20, 20.5], [4, 4], [5, 5]], np.float32), (None, 2))}
    held = checkpoint_tables(tmp_path, model)
    np.testing.assert_array_equal(held["user"][0], [1, 2, 4])
    np.testing.assert_array_equal(held["user"][1], [[1, 1], [20, 20], [4, 4]])
    changed, removed = changed_rows(model["user"], held["user"])
    assert changed.tolist() == [False, True, False, True] and removed.tolist() == []
    smaller = RowSparse([2], np.array([[20, 20]], np.float32), (None, 2))
    changed, removed = changed_rows(smaller, held["user"])
    assert changed.tolist() == [False] and removed.tolist() == [1, 4]


def test_another_models_dense_parameters_are_named(tmp_path):
    checkpoint(tmp_path, dense_shape=(5,))
    model = {"bias": np.zeros(3, np.float32), "user": RowSparse([1], np.ones((1, 2), np.float32), (None, 2))}
    with pytest.raises(DataError, match=r"is a checkpoint of another model: it holds dense parameters bias \[5\]; "
                                        r"the exported model has bias \[3\]"):
        checkpoint_tables(tmp_path, model)
