"""FeedForward with sparse embeddings on the local kvstore: the sparse model equals the dense one (same init, data
and optimizer) after several steps; 64-bit hashed ids train as the same table indexed densely; bad ids raise an
error naming the table and the field.

Data: a documented generator — 96 samples of 3 ids from a vocabulary of 20 (numpy Generator seed 0), label =
parity of the id sum, batch 16 (6 steps an epoch, 3 epochs)."""
import numpy as np
import pytest

import sparkps.symbol as sym
from sparkps.errors import DataError
from sparkps.io import NDArrayIter
from sparkps.rows.values import RowSparse, initial_rows
from sparkps.train.feedforward import FeedForward

VOCAB, DIM, FIELDS = 20, 4, 3
RNG = np.random.default_rng(0)
IDS = RNG.integers(0, VOCAB, size=(96, FIELDS))
LABELS = (IDS.sum(axis=1) % 2).astype(np.float32)


def classifier(embedded):
    hidden = sym.FullyConnected(sym.Flatten(embedded), num_hidden=2, name='fc')
    return sym.SoftmaxOutput(hidden, name='softmax')


def start_params(table_name='emb_weight', table=None):
    rng = np.random.default_rng(1)
    return {table_name: rng.normal(0, 0.1, (VOCAB, DIM)).astype(np.float32) if table is None else table,
            'fc_weight': rng.normal(0, 0.1, (2, FIELDS * DIM)).astype(np.float32),
            'fc_bias': np.zeros(2, np.float32)}


def fitted(net, params, ids=IDS, optimizer='sgd', **kwargs):
    model = FeedForward(net, num_epoch=3, optimizer=optimizer, learning_rate=0.5,
                        arg_params={k: v.copy() for k, v in params.items()}, **kwargs)
    model.fit(NDArrayIter({'ids': ids}, LABELS, batch_size=16))
    return model


def predicted(model, ids=IDS):
    return model.predict(NDArrayIter({'ids': ids}, None, batch_size=16))


def embedding(sparse_grad):
    return sym.Embedding(sym.Variable('ids'), input_dim=VOCAB, output_dim=DIM, sparse_grad=sparse_grad, name='emb')


@pytest.mark.parametrize('optimizer', ['sgd', 'adagrad'])
@pytest.mark.parametrize('make', [lambda: embedding(True),
                                  lambda: sym.contrib.SparseEmbedding(sym.Variable('ids'), input_dim=VOCAB,
                                                                      output_dim=DIM, name='emb')],
                         ids=['Embedding(sparse_grad=True)', 'contrib.SparseEmbedding'])
def test_sparse_embedding_model_equals_the_dense_model(optimizer, make):
    params = start_params()
    dense = fitted(classifier(embedding(False)), params, optimizer=optimizer)
    sparse = fitted(classifier(make()), params, optimizer=optimizer)
    assert isinstance(sparse.arg_params['emb_weight'], RowSparse)
    sparse_params = {**sparse.arg_params, 'emb_weight': sparse.arg_params['emb_weight'].to_dense()}
    for name, value in dense.arg_params.items():
        np.testing.assert_allclose(sparse_params[name], value, atol=1e-5, err_msg=name)
        assert np.abs(value - params[name]).max() > 1e-3, f"{name} did not train"
    np.testing.assert_allclose(predicted(sparse), predicted(dense), atol=1e-5)


def test_sparse_tables_stay_out_of_the_executor_and_the_model_file(tmp_path):
    """A table of 10**9 rows: the executor binds a batch-local matrix of 16 x 3 rows, the table is no view of the
    flat parameter buffer, and the model keeps (and saves) only the rows the data named."""
    big = sym.Embedding(sym.Variable('ids'), input_dim=10 ** 9, output_dim=DIM, sparse_grad=True, name='emb')
    seen = []
    model = FeedForward(classifier(big), num_epoch=1, learning_rate=0.1, seed=0)
    model.fit(NDArrayIter({'ids': IDS}, LABELS, batch_size=16), kvstore=None,
              batch_end_callback=lambda param: seen.append(param.locals['exe']))
    exe = seen[0]
    assert exe.arg_dict['emb_weight'].shape == (16 * FIELDS, DIM)
    assert exe.arg_dict['emb_weight'].base is None and exe.grad_dict['emb_weight'].shape == (16 * FIELDS, DIM)
    table = model.arg_params['emb_weight']
    assert table.shape == (10 ** 9, DIM) and sorted(table.ids) == sorted(np.unique(IDS))
    model.save(str(tmp_path / 'big'))
    again = FeedForward.load(str(tmp_path / 'big'), 1)
    np.testing.assert_array_equal(again.arg_params['emb_weight'].rows, table.rows)
    assert again.arg_params['emb_weight'].shape == (10 ** 9, DIM)
    np.testing.assert_allclose(predicted(again), predicted(model), atol=1e-6)


def test_hashed_64bit_ids_train_as_the_same_table_indexed_densely():
    """HashEmbedding over random 64-bit ids, pooled by sum, equals a dense Embedding over positions 0..19 whose
    rows start as the hashed rows of those ids, followed by a sum over the field axis."""
    hashed_ids = np.random.default_rng(2).integers(-2 ** 63, 2 ** 63 - 1, size=VOCAB, dtype=np.int64)
    table = initial_rows('user', hashed_ids, DIM)
    dense_net = sym.sum(embedding(False), axis=1)
    hashed_net = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=DIM, table='user', pooling='sum')

    def pooled_classifier(net):
        return sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc'), name='softmax')

    params = start_params()
    params['fc_weight'] = params['fc_weight'][:, :DIM]
    dense = fitted(pooled_classifier(dense_net), {**params, 'emb_weight': table}, optimizer='adagrad')
    hashed = fitted(pooled_classifier(hashed_net), {k: v for k, v in params.items() if k != 'emb_weight'},
                    ids=hashed_ids[IDS], optimizer='adagrad')
    rows = hashed.arg_params['user']
    order = np.argsort(hashed_ids)
    np.testing.assert_array_equal(rows.ids, hashed_ids[order])
    np.testing.assert_allclose(rows.rows, dense.arg_params['emb_weight'][order], atol=1e-5)
    np.testing.assert_allclose(hashed.arg_params['fc_weight'], dense.arg_params['fc_weight'], atol=1e-5)
    np.testing.assert_allclose(predicted(hashed, hashed_ids[IDS]), predicted(dense), atol=1e-5)


def test_padding_ids_are_absent_from_the_mean():
    ids = IDS.copy()
    ids[::2, 2] = 0                      # 0 marks 'no value' in this field
    net = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=DIM, table='t', pooling='mean', padding_id=0)
    model = fitted(sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc'), name='softmax'),
                   {'fc_weight': np.full((2, DIM), 0.1, np.float32), 'fc_bias': np.zeros(2, np.float32)}, ids=ids)
    assert 0 not in model.arg_params['t'].ids


@pytest.mark.parametrize('ids,message', [
    (IDS.astype(np.float64) + 0.5, r"table 'emb_weight', field 'ids': ids must be whole numbers, found \d+\.5"),
    (np.where(IDS == 3, np.nan, IDS), r"table 'emb_weight', field 'ids': ids must be whole numbers, found nan"),
    (np.where(IDS == 3, VOCAB, IDS), r"table 'emb_weight', field 'ids': id 20 is outside \[0, 20\)"),
    (np.where(IDS == 3, -1, IDS), r"table 'emb_weight', field 'ids': id -1 is outside \[0, 20\)"),
])
def test_bad_ids_of_a_bounded_table_name_the_table_and_field(ids, message):
    with pytest.raises(DataError, match=message):
        fitted(classifier(embedding(True)), start_params(), ids=ids)


def test_float_ids_of_a_hashed_table_are_refused():
    net = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=DIM, table='user', pooling='sum')
    model = FeedForward(sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc'), name='softmax'),
                        num_epoch=1)
    with pytest.raises(DataError, match="table 'user', field 'ids': ids of a hashed table must be an integer array"):
        model.fit(NDArrayIter({'ids': IDS.astype(np.float32)}, LABELS, batch_size=16))


def test_fit_and_predict_take_a_dict_of_named_arrays_keeping_64bit_ids():
    hashed_ids = np.random.default_rng(3).integers(2 ** 40, 2 ** 62, size=VOCAB, dtype=np.int64)[IDS]
    net = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=DIM, table='user', pooling='sum')
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc'), name='softmax')
    model = FeedForward(net, num_epoch=2, learning_rate=0.5, numpy_batch_size=16, seed=0)
    model.fit({'ids': hashed_ids}, LABELS)
    assert set(model.arg_params['user'].ids) == set(np.unique(hashed_ids))    # exact 64-bit ids, no float rounding
    np.testing.assert_allclose(model.predict({'ids': hashed_ids}), predicted(model, hashed_ids), atol=1e-7)
    accuracy = model.score({'ids': hashed_ids}, LABELS)
    assert accuracy == np.mean(model.predict({'ids': hashed_ids}).argmax(axis=1) == LABELS)
    with pytest.raises(DataError, match="labels y are required"):
        model.fit({'ids': hashed_ids})


def test_predict_reads_the_tables_arg_params_holds_now():
    """Predictions keep their table store between calls, and a table replaced in arg_params (a later fit, a load)
    is what the next prediction reads."""
    model = fitted(classifier(embedding(True)), start_params())
    first = predicted(model)
    np.testing.assert_array_equal(predicted(model), first)
    table = model.arg_params['emb_weight']
    model.arg_params['emb_weight'] = RowSparse(table.ids, table.rows * 0, table.shape)
    zeroed = {**model.arg_params, 'emb_weight': np.zeros((VOCAB, DIM), np.float32)}
    dense = FeedForward(classifier(embedding(False)), arg_params=zeroed)
    np.testing.assert_allclose(predicted(model), predicted(dense), atol=1e-6)
    assert np.abs(predicted(model) - first).max() > 1e-3


def test_the_local_store_counts_each_id_by_its_occurrences_in_the_training_rows_and_no_evaluation_read():
    """As on the servers: a hashed table's count of an id is how often the training rows use it, once per epoch
    (batches of 40: the last of each epoch holds 24 padding rows, not counted); the ids of evaluation rows that no
    batch trains are read at the epoch ends (peeks) without being counted or stored."""
    from sparkps import kvstore
    net = sym.contrib.HashEmbedding(sym.Variable('ids'), output_dim=DIM, table='user', pooling='sum')
    net = sym.SoftmaxOutput(sym.FullyConnected(net, num_hidden=2, name='fc'), name='softmax')
    unseen = IDS[:8] + 1000                 # ids of evaluation rows only
    kv = kvstore.create('local')
    model = FeedForward(net, num_epoch=3, optimizer='sgd', learning_rate=0.5)
    model.fit(NDArrayIter({'ids': IDS}, LABELS, batch_size=40), eval_data=({'ids': unseen}, LABELS[:8]),
              kvstore=kv)
    ids, counts = kv._store['user'].table.occurrences()
    occurring, occurrences = np.unique(IDS, return_counts=True)
    np.testing.assert_array_equal(ids.view(np.int64), occurring)
    np.testing.assert_array_equal(counts, 3 * occurrences)
    assert set(np.unique(unseen).tolist()) <= set(model.arg_params['user'].ids.tolist())    # read, not stored
