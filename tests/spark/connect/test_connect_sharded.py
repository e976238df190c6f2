"""A CTR model whose tables are shard files (``SparkModel.with_sharded_tables``) scores its raw columns through
the Spark SQL join on a Spark Connect session and on the classic one, alone and as a Pipeline stage saved and
loaded, with the broadcast join and with the shuffle join: the same click probabilities as the same model with its
tables inline, to 1e-6.

Model: ``packed_fm`` (tests/packed_fm.py: an FM with two sparse tables over three hashed fields) wrapped as a
SparkpsCTRModel over string columns a, b, c; the rows are training rows plus rows of values training never saw.
"""
import numpy as np
import pytest

from connect_session import classic_mode
from packed_fm import packed_fm

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """(inline SparkpsCTRModel, the same with sharded tables, the rows' column values)."""
    from sparkps.ctr.numeric import NumericStats
    from sparkps.ctr.synthetic import planted_ctr
    from sparkps.spark.ml import SparkpsCTRModel
    from sparkps.spark.ml.ctr_classifier import stats_to_json
    spark_model, _ = packed_fm()
    data = planted_ctr(1500, num_fields=3, num_numeric=0, vocab=40, zipf=1.3, seed=1, deep_scale=0.0)
    stats = NumericStats([], [], [], [])
    stats.widths = {}
    out = []
    for model in (spark_model, spark_model.with_sharded_tables(str(tmp_path_factory.mktemp("sharded")))):
        ctr = SparkpsCTRModel(model)
        ctr._set(categoricalCols=["a", "b", "c"], model="fm", embeddingDim=4, numericStats=stats_to_json(stats))
        out.append(ctr)
    cells = [[str(v) for v in row] for row in data.ranks[:120].tolist()] + [["new%d" % i, "b", "x"] for i in range(30)]
    return out[0], out[1], cells


def click_probabilities(model, session, cells):
    frame = session.createDataFrame([(i, *row) for i, row in enumerate(cells)], ["id", "a", "b", "c"])
    rows = sorted(model.transform(frame).select("id", "probability").collect(), key=lambda r: r.id)
    return np.array([r.probability[1] for r in rows])


@pytest.mark.parametrize("broadcast_rows", [None, 0])
def test_sharded_tables_score_as_inline_ones_on_connect_and_classic(classic, connect, models, broadcast_rows):
    inline, sharded, cells = models
    sharded.spark_model.broadcast_table_rows = broadcast_rows
    expected = click_probabilities(inline, connect, cells)
    np.testing.assert_allclose(click_probabilities(sharded, connect, cells), expected, atol=1e-6)
    with classic_mode():
        np.testing.assert_allclose(click_probabilities(sharded, classic, cells), expected, atol=1e-6)


def test_a_pipeline_of_a_sharded_model_saves_and_loads_on_connect(connect, models, tmp_path):
    from pyspark.ml import PipelineModel
    inline, sharded, cells = models
    sharded.spark_model.broadcast_table_rows = None
    PipelineModel(stages=[sharded]).write().overwrite().save(str(tmp_path / "fitted"))
    again = PipelineModel.load(str(tmp_path / "fitted"))
    assert again.stages[0].spark_model.table_manifest == sharded.spark_model.table_manifest
    np.testing.assert_allclose(click_probabilities(again, connect, cells), click_probabilities(inline, connect, cells),
                               atol=1e-6)
