"""The CTR fit's input path: Arrow columns to the network's typed inputs with no Python object per row
(sparkps.spark.task.ctr_columns), equal, id for id, to hashing the values one by one; and, in a real local[2] Spark, the
typed rows the fit's reader makes of ``CTRFeaturizer.training_input`` equal to hashing the rows in this process, with
labels checked in the statistics' own aggregation."""
import numpy as np
import pyarrow as pa
import pytest

import sparkps.nets as nets
from sparkps.ctr.hashing import hash_column, hash_fields, hash_value
from sparkps.ctr.numeric import NumericStats
from sparkps.errors import DataError
from sparkps.spark.task.ctr_columns import ColumnFeaturizer, hashed


@pytest.mark.parametrize("values", [["68fd1e64", None, "", "68fd1e64", "7"], [7, None, 3, 7, -2],
                                    [7.0, float("nan"), None, 2.5, 7.0], [True, False, None, True]])
def test_arrow_ids_equal_the_ids_of_each_value(values):
    column = pa.array(values)
    expected = np.array([hash_value("C1", v) for v in values], np.uint64)
    assert (hashed("C1", column) == expected).all()
    assert (hashed("C1", pa.chunked_array([column[:2], column[2:]])) == expected).all()


def test_ids_kept_between_batches_are_the_ids_of_each_batch():
    known = {}
    first, second = pa.array(["a", "b", None, "a"]), pa.array(["c", "a", "", None, "c"])
    for column in (first, second, first):
        assert (hashed("site", column, known) == hash_column("site", column.to_pylist())).all()
    assert set(known) == {"a", "b", "c", ""}      # a null is the missing value, never looked up
    assert hashed("site", pa.array([7]))[0] == hashed("site", pa.array(["7"]))[0]      # the text decides


def test_typed_inputs_equal_the_numpy_path_with_multi_valued_columns():
    rng = np.random.default_rng(3)
    cats = rng.choice(["x", "y", "z", None], size=(50, 2))
    counts = np.where(rng.random((50, 1)) < 0.2, np.nan, rng.integers(0, 9, (50, 1)).astype(float))
    tags = [["t1", "t2"], [], None, ["t3"]] * 12 + [["t1"], ["t2", "t2", "t4"]]
    joined = [",".join(t) if t else ("" if t == [] else None) for t in tags]
    stats = NumericStats.fit(counts, ["I1"], log=True)
    spec = nets.FeatureSpec(categorical=["C1", "C2"], numeric=["I1"], multi_valued={"tags": 3, "joined": 3},
                            embedding_dim=4)
    columns = ColumnFeaturizer(["C1", "C2"], ["tags", "joined"], 1, stats.to_dict(), spec)
    inputs = columns.inputs([pa.array(cats[:, 0]), pa.array(cats[:, 1]), pa.array(tags, pa.list_(pa.string())),
                           pa.array(joined), pa.array(counts[:, 0])])
    from sparkps.ctr.features import pad_lists
    from sparkps.ctr.hashing import split_multi
    lists = {}
    for name, cells in (("tags", tags), ("joined", joined)):
        flat, offsets = split_multi(cells, ",")
        lists[name] = pad_lists(hash_column(name, flat), offsets, 3)
    ids = hash_fields(["C1", "C2"], [cats[:, 0], cats[:, 1]])
    expected = spec.inputs(ids, stats.transform(counts), multi=lists)
    assert sorted(inputs) == sorted(expected) == ["dense", "ids", "ids_joined", "ids_tags"]
    for name in expected:
        assert inputs[name].dtype == expected[name].dtype
        np.testing.assert_array_equal(inputs[name], expected[name])


def test_feature_indices_out_of_range_name_the_column():
    spec = nets.FeatureSpec(categorical=["f0"], num_buckets=10)
    columns = ColumnFeaturizer(["f0"], [], 0, NumericStats([], [], [], [], True).to_dict(), spec, hash_ids=False,
                               index_range=10)
    assert columns.inputs([pa.array([0, 9, 3])])["ids"].shape == (3, 1)
    with pytest.raises(DataError, match=r"column 'f0' must hold feature indices in \[0, 10\)"):
        columns.inputs([pa.array([0, 10])])
    with pytest.raises(DataError, match=r"column 'f0' must hold feature indices"):
        columns.inputs([pa.array(["a"])])


@pytest.mark.spark
def test_the_typed_training_rows_equal_the_hashed_rows_and_labels_are_checked(spark):
    from sparkps.spark.ml.ctr_features import CTRFeaturizer
    rows = [(float(i % 2), "s%d" % (i % 7), i % 5 if i % 11 else None, float(i % 13) if i % 3 else None)
            for i in range(300)]
    frame = spark.createDataFrame(rows, "click double, site string, hour int, count double").repartition(2)
    featurizer = CTRFeaturizer(["site", "hour"], ["count"])
    stats = featurizer.fit_stats(frame, "click")
    assert stats.label_facts == {"rows": 300, "nulls": 0, "non_finite": 0, "not_binary": 0, "clicks": 150}
    assert featurizer.check_labels(frame, "click", stats.label_facts) == 300
    selected, reader = featurizer.training_input(frame, stats, "click")

    def read(batches):       # the fit's tasks read their record batches so (sparkps.spark.common.arrow_inputs)
        for batch in batches:
            X, y = reader.read(batch)
            inputs = reader.typed.split(X)
            yield pa.RecordBatch.from_arrays([pa.array(list(inputs["ids"].view(np.int64))),
                                              pa.array(list(inputs["dense"])), pa.array(y)],
                                             names=["ids", "dense", "y"])

    read_rows = selected.mapInArrow(read, "ids array<long>, dense array<float>, y float").collect()
    got = sorted((tuple(np.array(r.ids, np.int64).view(np.uint64).tolist()), tuple(r.dense), r.y)
                 for r in read_rows)
    sites, hours = [r[1] for r in rows], [r[2] for r in rows]
    ids = np.stack([hash_column("site", sites), hash_column("hour", hours)], axis=1)
    dense = stats.transform(np.array([[np.nan if r[3] is None else r[3]] for r in rows])).astype(np.float32)
    expected = sorted((tuple(i.tolist()), tuple(d.tolist()), r[0]) for i, d, r in zip(ids, dense, rows))
    assert len(got) == 300 and got == expected
    bad = spark.createDataFrame([(1.0, "a"), (None, "b")], "click double, site string")
    with pytest.raises(DataError, match=r"row 1: label None is null"):
        CTRFeaturizer(["site"]).check_labels(bad, "click", CTRFeaturizer(["site"]).fit_stats(bad, "click")
                                             .label_facts)
    infinite = spark.createDataFrame([(1.0, "a", 2.0), (0.0, "b", float("inf"))], "click double, site string, n double")
    with pytest.raises(DataError, match=r"numeric column\(s\) \['n'\] hold an infinite value"):
        CTRFeaturizer(["site"], ["n"]).fit_stats(infinite, "click")
