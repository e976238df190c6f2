"""A CTR model with more than a million distinct ids at dim 8, on 2 workers and 2 servers, fits, saves, reloads and
scores: its tables stay on the servers (no worker pulls a whole table at an epoch end, nothing of them passes
through the driver), the servers write their shards, ``save`` moves them into the model's folder and ``transform``
joins the test rows' ids with them.

Data: ``spark.range`` rows with 4 id columns each near-unique per row (so 4 x 300,000 = 1.2M distinct ids) and a
label from the parity of a mix of the row number; one epoch, an FM (no dense layers), large batches."""
import numpy as np
import pytest

from sparkps.rows.values import RowSparse

pytestmark = pytest.mark.spark

ROWS = 300_000
COLUMNS = ["user", "item", "query", "ad"]


@pytest.fixture(scope="module")
def clicks(spark):
    from pyspark.sql import functions as F
    frame = spark.range(ROWS).select(
        ((F.xxhash64("id") % 3) == 0).cast("double").alias("click"),
        F.col("id").alias("user"), (F.col("id") + ROWS).alias("item"),
        (F.col("id") * 3 + 7).alias("query"), (F.col("id") * 5 + 11).alias("ad"))
    return frame.repartition(2)


def test_a_model_of_more_than_a_million_ids_fits_saves_reloads_and_scores(spark, clicks, tmp_path):
    from pyspark.sql import functions as F

    from sparkps.spark.ml.classifier import SparkpsCTRClassifier, SparkpsCTRModel
    estimator = SparkpsCTRClassifier(labelCol="click", categoricalCols=COLUMNS, model="fm", embeddingDim=8,
                                     numEpochs=1, batchSize=4096, learningRate=0.05, numWorkers=2, numServers=2,
                                     validationFraction=0.0, seed=1)
    model = estimator.fit(clicks)
    spark_model = model.spark_model
    assert not [n for n, v in spark_model.arg_params.items() if isinstance(v, RowSparse)]   # the driver got no row
    manifest = spark_model.table_manifest
    assert manifest["embedding_weight"]["rows"] == 4 * ROWS > 1_000_000
    assert manifest["embedding_weight"]["dim"] == 8
    assert [s["server"] for s in manifest["embedding_weight"]["shards"]] == [0, 1]

    test = clicks.limit(1500).unionByName(
        spark.range(500).selectExpr("0.0 AS click", "-id - 1 AS user", "-id - 1 AS item", "-id - 1 AS query",
                                    "-id - 1 AS ad"))         # rows of ids training never saw
    test = test.withColumn("i", F.monotonically_increasing_id()).cache()

    def probabilities(m):
        rows = m.transform(test).select("i", "probability").collect()
        return np.array([r.probability[1] for r in sorted(rows, key=lambda r: r.i)])

    before = probabilities(model)
    assert before.size == 2000 and np.all((before > 0) & (before < 1))
    path = str(tmp_path / "big")
    model.write().overwrite().save(path)
    loaded = SparkpsCTRModel.load(path)
    assert loaded.spark_model.table_manifest["embedding_weight"]["rows"] == 4 * ROWS
    np.testing.assert_allclose(probabilities(loaded), before, atol=1e-6)
    assert np.ptp(before[:1500]) > 1e-3          # trained rows: the scores differ from row to row
