"""The CTR estimator's labels, checked on the driver before any training task starts: a string label column is
refused in MLlib's words naming the column; a label other than 0 or 1 is named with its row, once."""
import pytest

from sparkps.errors import DataError

pytestmark = pytest.mark.spark


def classifier():
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    return SparkpsCTRClassifier(labelCol="click", categoricalCols=["site"], model="lr", numEpochs=1, batchSize=8,
                                numWorkers=2, numServers=1)


def test_a_string_label_is_refused_in_mllibs_words(spark):
    frame = spark.createDataFrame([("yes", "a"), ("no", "b")], ["click", "site"])
    with pytest.raises(DataError, match=r"^Column click must be of type numeric but was actually of type string\. "
                                        r"\(Index a string label with StringIndexer, as RFormula does\.\)$"):
        classifier().fit(frame)


def test_a_label_outside_0_1_is_named_with_its_row(spark):
    frame = spark.createDataFrame([(float(i % 2), "s%d" % i) for i in range(7)] + [(2.0, "x")], ["click", "site"])
    with pytest.raises(DataError) as caught:
        classifier().fit(frame.coalesce(1))
    assert str(caught.value) == ("row 7: label 2.0 in column 'click' is not 0 or 1 (1 such labels): a click label "
                                 "is 0 or 1")
