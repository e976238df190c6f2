"""The CTR estimator's labels, checked on the driver before any training task starts: a column of two strings is
indexed as jobs/train_ctr.py indexes it, any other string column or a label of another type is refused naming the
column; a label other than 0 or 1 is named with its row, once."""
import pytest

from sparkps.errors import ConfigError, DataError

pytestmark = pytest.mark.spark


def classifier():
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    return SparkpsCTRClassifier(labelCol="click", categoricalCols=["site"], model="lr", numEpochs=1, batchSize=8,
                                numWorkers=2, numServers=1)


def test_a_label_of_another_type_is_refused_in_mllibs_words(spark):
    frame = spark.createDataFrame([(["yes"], "a"), (["no"], "b")], ["click", "site"])
    with pytest.raises(DataError, match=r"^Column click must be of type numeric but was actually of type "
                                        r"array<string>\. \(A click label is 0/1, or two strings, indexed as RFormula "
                                        r"does\.\)$"):
        classifier().fit(frame)


def test_a_yes_no_label_is_indexed_as_the_job_indexes_it(spark):
    """Two strings: the more frequent one is 0, as RFormula and jobs/train_ctr.py (``index_string_label``) index
    them; the order is kept in the model's ``labelClasses``."""
    from sparkps.spark.submit.inputs import index_string_label
    rows = [("yes" if i % 3 == 0 else "no", "s%d" % i) for i in range(60)]
    frame = spark.createDataFrame(rows, ["click", "site"])
    model = classifier().fit(frame)
    assert model.getOrDefault("labelClasses") == index_string_label(frame, [], "click")[2] == ["no", "yes"]
    assert classifier().getOrDefault("labelClasses") == []          # a numeric label's


def test_a_string_label_of_three_values_or_a_null_is_one_error(spark):
    three = spark.createDataFrame([("yes", "a"), ("no", "b"), ("maybe", "c")], ["click", "site"])
    with pytest.raises(ConfigError) as caught:
        classifier().fit(three)
    assert str(caught.value).startswith("label column 'click' holds 3 distinct strings ")
    assert str(caught.value).endswith("; a click label has two (or is 0/1)")
    null = spark.createDataFrame([("yes", "a"), ("no", "b"), (None, "c"), ("no", "d")], "click string, site string")
    with pytest.raises(DataError, match=r"^row 2: label None is null \(1 such labels\)$"):
        classifier().fit(null.coalesce(1))


def test_a_label_outside_0_1_is_named_with_its_row(spark):
    frame = spark.createDataFrame([(float(i % 2), "s%d" % i) for i in range(7)] + [(2.0, "x")], ["click", "site"])
    with pytest.raises(DataError) as caught:
        classifier().fit(frame.coalesce(1))
    assert str(caught.value) == ("row 7: label 2.0 in column 'click' is not 0 or 1 (1 such labels): a click label "
                                 "is 0 or 1")
