"""The CTR estimator reads its input once before the training stage: one aggregation gives the training rows'
statistics and the labels of both sides of the held-out split; the only other job collects the held-out rows.
A bad label on either side is still named with its row in the input."""
import itertools

import pytest

from sparkps.errors import DataError

pytestmark = pytest.mark.spark

GROUPS = itertools.count()


class Stopped(Exception):
    """Raised in place of the training stage: the fit ends where the stage would start."""


def jobs_of(sc, action):
    """The number of Spark jobs ``action()`` runs (all of them finished when it returns)."""
    group = "counted-%d" % next(GROUPS)
    sc.setJobGroup(group, "counted")
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    sc._jsc.sc().listenerBus().waitUntilEmpty()      # the status store has seen every job it ran
    return len(sc.statusTracker().getJobIdsForGroup(group))


def classifier(**params):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    return SparkpsCTRClassifier(**dict(dict(labelCol="click", categoricalCols=["site"], numericCols=["n"],
                                            model="lr", numEpochs=1, batchSize=8, numWorkers=2, numServers=1,
                                            validationFraction=0.25, seed=3), **params))


def clicks(spark, bad_row=None, bad_label=2.0):
    rows = [(float(i % 2), "s%d" % (i % 7), float(i % 5)) for i in range(80)]
    if bad_row is not None:
        rows[bad_row] = (bad_label,) + rows[bad_row][1:]
    return spark.createDataFrame(rows, "click double, site string, n double").coalesce(1).cache()


def test_statistics_and_both_sides_labels_are_one_aggregation(spark, monkeypatch):
    """Jobs before the stage: one aggregation (as many jobs as a plain ``agg`` of the same frame) and the held-out
    rows' collect; before, the held-out labels had an aggregation of their own."""
    from pyspark.sql import functions as F

    import sparkps.spark.driver.trainer as trainer_module
    from sparkps.spark.driver.input_rows import held_out

    def stage(*args, **kwargs):
        raise Stopped()
    monkeypatch.setattr(trainer_module, "run_watched", stage)
    frame = clicks(spark)
    frame.count()
    sc = spark.sparkContext

    def fit():
        with pytest.raises(Stopped):
            classifier().fit(frame)
    before_stage = jobs_of(sc, fit)
    aggregation = jobs_of(sc, lambda: frame.agg(F.count(F.lit(1)), F.sum("n")).collect())
    collect = jobs_of(sc, lambda: held_out(frame, 0.25, seed=3)[1].select("site", "n", "click").toArrow())
    assert before_stage == aggregation + collect


def test_the_one_pass_gives_each_sides_facts(spark):
    from sparkps.spark.driver.input_rows import held_out, held_out_rows
    from sparkps.spark.ml.ctr_features import CTRFeaturizer
    frame = clicks(spark, bad_row=5, bad_label=None)
    featurizer = CTRFeaturizer(["site"], ["n"])
    train, validation = held_out(frame, 0.25, seed=3)
    stats = featurizer.fit_stats(frame, "click", held_out_rows(frame, 0.25, seed=3))
    alone = featurizer.fit_stats(train, "click")
    assert stats.to_dict() == alone.to_dict() and stats.label_facts == alone.label_facts
    assert stats.validation_facts == featurizer.fit_stats(validation, "click").label_facts
    assert stats.label_facts["rows"] + stats.validation_facts["rows"] == 80
    assert stats.label_facts["nulls"] + stats.validation_facts["nulls"] == 1
    assert featurizer.fit_stats(frame, "click").validation_facts is None


@pytest.mark.parametrize("bad_row", range(6))
def test_a_bad_label_on_either_side_is_named_with_its_input_row(spark, bad_row):
    """Rows 0..5 fall on both sides of the seed-3 split; each error names the row in the input."""
    with pytest.raises(DataError) as caught:
        classifier().fit(clicks(spark, bad_row=bad_row))
    assert str(caught.value) == ("row %d: label 2.0 in column 'click' is not 0 or 1 (1 such labels): a click label "
                                 "is 0 or 1" % bad_row)


def test_a_split_that_holds_out_no_row_says_so(spark):
    """Eight equal rows fall on one side of the draw: the training side here, so nothing is held out."""
    from sparkps.spark.driver.input_rows import held_out
    frame = spark.createDataFrame([(1.0, "a", 1.0)] * 4 + [(0.0, "b", 2.0)] * 4, "click double, site string, n double")
    assert held_out(frame, 0.25, seed=3)[1].count() == 0
    with pytest.raises(DataError, match=r"^validationFraction=0.25 held out none of the 8 rows: the draw hashes each "
                                        r"row's values, and rows equal in every column fall on the same side; set "
                                        r"validationFraction=0 \(nothing held out\) or give more distinct rows$"):
        classifier().fit(frame)


@pytest.mark.parametrize("label", [0.0, 1.0])
def test_a_training_label_of_one_class_is_refused_before_the_stage(spark, monkeypatch, label):
    """Nothing can be learned from one class and no AUC exists: one line naming the column, the class and the rows,
    before any training stage starts."""
    import sparkps.spark.driver.trainer as trainer_module

    def stage(*args, **kwargs):
        raise AssertionError("the training stage started")
    monkeypatch.setattr(trainer_module, "run_watched", stage)
    from pyspark.sql import functions as F
    frame = clicks(spark).withColumn("click", F.lit(label))
    with pytest.raises(DataError) as caught:
        classifier(validationFraction=0.0).fit(frame)
    assert str(caught.value) == ("every training label of column 'click' is %d (80 rows): a click model needs rows "
                                 "of both classes (nothing can be learned and no AUC exists)" % label)
