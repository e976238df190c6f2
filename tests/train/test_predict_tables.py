"""Prediction with sparse tables: a broadcast CTR model builds the lookup store of its tables once and keeps it
for every later call, whatever the calls' sizes; an id no table holds reads the row it would be created with
(``sparkps.rows.values.initial_rows``) without being stored, so scoring a stream of unseen ids keeps the store at the
model's size.

Model and data: ``packed_fm`` (tests/packed_fm.py); the unseen ids are 64-bit values drawn from numpy Generator
seed 9.
"""
import copy

import numpy as np
import pytest

from packed_fm import PACKED, SPEC, TABLES, packed_fm
from sparkps.errors import ConfigError, DataError
from sparkps.rows.values import RowSparse, initial_rows
from sparkps.spark.model.predictor import Predictor
from sparkps.spark.model.spark_model import _predict_rows
from sparkps.train.feedforward import FeedForward


@pytest.fixture(scope="module")
def trained():
    """(SparkModel with the packed layout, packed training rows)."""
    return packed_fm()


def predictor_of(spark_model):
    payload = spark_model.payload(batch_size=64)
    return Predictor(payload["symbol"], payload["params"], payload["input_shape"], payload["batch_size"],
                     payload["label_name"], typed=spark_model.input_layout)


def reference(spark_model, X, extra_ids=None):
    """A fresh FeedForward's prediction, its tables holding ``extra_ids``' initial rows as well when given."""
    params = dict(spark_model.arg_params)
    for name in TABLES if extra_ids is not None else ():
        table = params[name]
        new = np.setdiff1d(extra_ids.view(np.int64), table.ids)
        ids = np.concatenate([table.ids, new])
        rows = np.concatenate([table.rows, initial_rows(name, new, table.dim)])
        order = np.argsort(ids)
        params[name] = RowSparse(ids[order], rows[order], table.shape)
    model = FeedForward(spark_model.symbol, arg_params=params, aux_params=spark_model.aux_params,
                        numpy_batch_size=64)
    return np.asarray(model.predict(PACKED.split(X)), np.float32).reshape(len(X), -1)


def test_the_table_store_is_built_once_for_calls_of_any_size(trained):
    spark_model, X = trained
    predictor = predictor_of(spark_model)
    assert predictor.table_stores_built == 0
    start = 0
    for size in (500, 64, 17, 3, 1, 300):
        rows = X[start:start + size]
        np.testing.assert_allclose(predictor.predict(rows), reference(spark_model, rows), atol=1e-6)
        start += size
    assert predictor.calls == 6 and predictor.table_stores_built == 1


def test_unseen_ids_read_their_initial_rows_without_growing_the_store(trained):
    spark_model, X = trained
    predictor = predictor_of(spark_model)
    predictor.predict(X[:10])
    store = predictor.model._pred_store
    held = {name: len(store._store[name]) for name in TABLES}
    unseen = np.random.default_rng(9).integers(-2 ** 63, 2 ** 63 - 1, size=(400, 3), dtype=np.int64)
    packed = PACKED.pack(SPEC.inputs(unseen.view(np.uint64)))
    np.testing.assert_allclose(predictor.predict(packed), reference(spark_model, packed, unseen), atol=1e-6)
    assert {name: len(store._store[name]) for name in TABLES} == held
    assert predictor.table_stores_built == 1
    with pytest.raises(ConfigError, match="table 'embedding_weight' is read-only"):
        store.push("embedding_weight", RowSparse(unseen[0, :1], np.zeros((1, 4), np.float32), (None, 4)))


def test_typed_rows_and_named_inputs_predict_as_the_packed_rows(trained):
    """The model's one input layout (TypedInputs): its structured rows and a dict of its inputs score what the
    earlier versions' packed rows of the same values score."""
    spark_model, X = trained
    predictor = predictor_of(spark_model)
    inputs = PACKED.split(X[:40])
    typed = spark_model.input_layout.rows(inputs)
    expected = reference(spark_model, X[:40])
    np.testing.assert_allclose(predictor.predict(typed), expected, atol=1e-6)
    np.testing.assert_allclose(predictor.predict(inputs), expected, atol=1e-6)
    with pytest.raises(DataError, match=r"float rows of inputs \['ids'\] must have 9 values"):
        predictor.predict(np.zeros((2, 4), np.float32))


def test_rows_of_a_packed_model_predict_one_by_one(trained):
    """SparkModel.predict's row path (an RDD of feature rows) on a model with an input layout."""
    spark_model, X = trained
    predictor = predictor_of(spark_model)
    out = list(_predict_rows(predictor, [X[i] for i in range(5)], X.shape[1]))
    np.testing.assert_allclose(np.stack(out), reference(spark_model, X[:5]), atol=1e-6)


@pytest.mark.parametrize("bad", [0, -2, 2.5, "5", True, float("nan")])
def test_shrink_names_a_bad_min_count(trained, bad):
    spark_model, _ = trained
    with pytest.raises(ConfigError, match=r"shrink\(min_seen\): min_seen must be a whole number >= 1"):
        spark_model.shrink(bad)


def test_shrink_names_its_threshold_min_seen_and_still_takes_min_count(trained):
    """``min_seen`` (how often training saw an id) is shrink's name; ``min_count``, the table option that admits an
    id on the servers, is still taken as shrink's earlier keyword, and giving both is refused."""
    spark_model = copy.copy(trained[0])
    held = {name: spark_model.arg_params[name].ids for name in TABLES}
    spark_model.table_counts = {name: (ids, np.arange(ids.size) % 5 + 1) for name, ids in held.items()}
    counts = {name: pair[1] for name, pair in spark_model.table_counts.items()}
    threshold = 3
    by_name, by_old_name = spark_model.shrink(min_seen=threshold), spark_model.shrink(min_count=threshold)
    for name in counts:
        kept = by_name.arg_params[name].ids
        assert 0 < kept.size < spark_model.arg_params[name].ids.size
        np.testing.assert_array_equal(kept, by_old_name.arg_params[name].ids)
    with pytest.raises(ConfigError, match="give min_seen or its earlier name min_count, not both"):
        spark_model.shrink(min_seen=threshold, min_count=threshold)
