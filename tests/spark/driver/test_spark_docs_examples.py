"""docs/sparse.md's Spark example runs as written on local[2] (2 workers, 2 servers), its inputs made up here
(tests/test_docs_examples.py runs the examples without Spark)."""
import numpy as np

from sparkps.rows.values import RowSparse
from tests.test_docs_examples import python_blocks, run


def test_the_sparse_docs_spark_example_trains_and_predicts(spark):
    assert "SparkTrainer" in python_blocks("sparse.md")[3]
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**62, (40, 3)).astype(np.int64)[rng.integers(0, 40, 512)]
    labels = (ids[:, 0] % 2).astype(np.float32)
    namespace = run("sparse.md", 3, {"sc": spark.sparkContext, "ids": ids, "labels": labels})
    model = namespace["model"]
    tables = [value for value in model.arg_params.values() if isinstance(value, RowSparse)]
    assert len(tables) == 1 and set(tables[0].ids.tolist()) == set(ids.reshape(-1).tolist())
    probabilities = model.predict_numpy(ids[:8])
    assert probabilities.shape == (8, 2)
