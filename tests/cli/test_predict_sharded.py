"""``sparkps predict --model PREFIX`` of a saved model whose table is shard files: the rows of the input's ids are
streamed from the shards (never the whole table), so it predicts what the model with its table inline predicts,
and an id no shard holds reads its initial row as it does inline.

Model: Embedding(sparse_grad, 50 x 4) -> Flatten -> FullyConnected(2) -> SoftmaxOutput over 3 id fields, trained
5 epochs in this process on ids whose parity sum is the label."""
import numpy as np
from click.testing import CliRunner

from sparkps import symbol as sym
from sparkps.cli import main
from sparkps.rows.values import RowSparse
from sparkps.spark.model.spark_model import SparkModel
from sparkps.train.feedforward import FeedForward


def outputs(text):
    return np.array([[float(v) for v in line.split(",")[2:]] for line in text.strip().splitlines()[1:]])


def test_predict_reads_the_rows_of_its_ids_from_the_shards(tmp_path):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 40, size=(200, 3))
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(sym.Embedding(
        sym.Variable("data"), input_dim=50, output_dim=4, sparse_grad=True, name="emb")), num_hidden=2, name="fc"),
        name="softmax")
    ff = FeedForward(net, num_epoch=5, optimizer="sgd", learning_rate=0.5, numpy_batch_size=20, seed=0)
    ff.fit(ids.astype(np.float32), (ids.sum(axis=1) % 2).astype(np.float32))
    assert isinstance(ff.arg_params["emb_weight"], RowSparse)
    inline = SparkModel(net, ff.arg_params, ff.aux_params, input_shape=(3,), label_name="softmax_label")
    inline.save(str(tmp_path / "inline"))
    inline.with_sharded_tables(str(tmp_path / "sharded"))
    test = np.concatenate([ids[:20], [[45, 46, 47]]])            # the last row: ids training never saw
    np.savetxt(tmp_path / "test.csv", test, fmt="%d", delimiter=",")
    results = []
    for folder in ("inline", "sharded"):
        result = CliRunner().invoke(main, ["predict", "--model", str(tmp_path / folder / "model"), "--epoch",
                                           str(inline.epoch), "--data", str(tmp_path / "test.csv"), "--no-label"])
        assert result.exit_code == 0, result.output
        results.append(outputs(result.stdout))
    assert results[0].shape == (21, 2)
    np.testing.assert_allclose(results[1], results[0], atol=1e-6)
