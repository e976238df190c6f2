"""NDArrayIter in every last-batch mode; LibSVM and CSV readers, sharding and malformed lines."""
import numpy as np
import pytest

from sparkps import io
from sparkps.errors import ConfigError, DataError


def _data(n=10, width=3):
    X = np.arange(n * width, dtype=np.float32).reshape(n, width)
    return X, np.arange(n, dtype=np.float32)


def _epoch(it):
    return [(b.data[0].copy(), b.label[0].copy(), b.pad) for b in it]


def test_pad_mode_fills_last_batch_from_start():
    X, y = _data()
    it = io.NDArrayIter(X, y, batch_size=4)
    batches = _epoch(it)
    assert [b[2] for b in batches] == [0, 0, 2]
    np.testing.assert_array_equal(batches[2][1], [8, 9, 0, 1])
    np.testing.assert_array_equal(batches[0][0], X[:4])
    assert it.provide_data == [('data', (4, 3))] and it.provide_label == [('softmax_label', (4,))]
    it.reset()
    assert len(_epoch(it)) == 3


def test_discard_mode_drops_partial_batch():
    X, y = _data()
    batches = _epoch(io.NDArrayIter(X, y, batch_size=4, last_batch_handle='discard'))
    assert [b[1].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_roll_over_carries_rows_into_next_epoch():
    X, y = _data()
    it = io.NDArrayIter(X, y, batch_size=4, last_batch_handle='roll_over')
    first = [b[1].tolist() for b in _epoch(it)]
    assert first == [[0, 1, 2, 3], [4, 5, 6, 7]]
    it.reset()
    second = [b[1].tolist() for b in _epoch(it)]
    assert second == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]
    it.reset()
    assert [b[1].tolist() for b in _epoch(it)][0] == [0, 1, 2, 3]


def test_shuffle_is_seeded_and_reshuffles_each_epoch():
    X, y = _data(50)
    a = io.NDArrayIter(X, y, batch_size=50, shuffle=True, seed=3)
    b = io.NDArrayIter(X, y, batch_size=50, shuffle=True, seed=3)
    ea, eb = _epoch(a), _epoch(b)
    np.testing.assert_array_equal(ea[0][1], eb[0][1])
    assert sorted(ea[0][1].tolist()) == list(range(50)) and ea[0][1].tolist() != list(range(50))
    np.testing.assert_array_equal(ea[0][0][:, 0], X[ea[0][1].astype(int), 0])
    a.reset()
    assert _epoch(a)[0][1].tolist() != ea[0][1].tolist()


def test_several_named_inputs_and_no_label():
    X, _ = _data()
    it = io.NDArrayIter({'user': X, 'item': X[:, :1]}, batch_size=5)
    assert it.provide_data == [('item', (5, 1)), ('user', (5, 3))] and it.provide_label == []
    batch = next(it)
    assert [d.shape for d in batch.data] == [(5, 1), (5, 3)] and batch.label == []


def test_iterator_errors():
    X, y = _data()
    with pytest.raises(DataError, match="'softmax_label' has 9 rows"):
        io.NDArrayIter(X, y[:9], batch_size=2)
    with pytest.raises(ConfigError, match='last_batch_handle'):
        io.NDArrayIter(X, y, last_batch_handle='wrap')
    with pytest.raises(ConfigError, match='batch_size'):
        io.NDArrayIter(X, y, batch_size=0)


LIBSVM = """# comment line
1 1:0.5 3:2
0 2:1.5
-1 qid:3 4:1 1:-1

2 3:7 # trailing comment
"""


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_read_libsvm_one_based(tmp_path):
    X, y = io.read_libsvm(_write(tmp_path, 'a.svm', LIBSVM), num_features=4)
    assert X.dtype == np.float32 and y.dtype == np.float32
    np.testing.assert_array_equal(y, [1, 0, -1, 2])
    np.testing.assert_array_equal(X, [[0.5, 0, 2, 0], [0, 1.5, 0, 0], [-1, 0, 0, 1], [0, 0, 7, 0]])
    csr, _ = io.read_libsvm(str(tmp_path / 'a.svm'), num_features=4, sparse=True)
    np.testing.assert_array_equal(csr.indptr, [0, 2, 3, 5, 6])
    np.testing.assert_array_equal(csr.toarray(), X)


def test_read_libsvm_shards_cover_the_file(tmp_path):
    path = _write(tmp_path, 'a.svm', LIBSVM)
    parts = [io.read_libsvm(path, 4, part_index=k, num_parts=3) for k in range(3)]
    np.testing.assert_array_equal(parts[0][1], [-1])          # lines 0 (comment) and 3
    np.testing.assert_array_equal(parts[1][1], [1])           # lines 1 and 4 (blank)
    np.testing.assert_array_equal(parts[2][1], [0, 2])        # lines 2 and 5
    assert sorted(np.concatenate([p[1] for p in parts]).tolist()) == [-1, 0, 1, 2]


def test_read_libsvm_zero_based_and_auto(tmp_path):
    path = _write(tmp_path, 'z.svm', "1 0:1 2:3\n0 1:2\n")
    with pytest.raises(DataError, match=r'z.svm:1: feature index 0 .*zero_based=True'):
        io.read_libsvm(path, 3)
    X, _ = io.read_libsvm(path, 3, zero_based=True)
    np.testing.assert_array_equal(X, [[1, 0, 3], [0, 2, 0]])
    np.testing.assert_array_equal(io.read_libsvm(path, 3, zero_based='auto')[0], X)


@pytest.mark.parametrize('text,message', [
    ("1 1:1\n1 2-3\n", r'bad.svm:2: malformed feature .2-3.'),
    ("1 1:1\n1 2:x\n", r'bad.svm:2: malformed feature .2:x.'),
    ("1 1:1\nyes 2:1\n", r"bad.svm:2: label 'yes'"),
    ("1 1:1\n1 9:1\n", r'bad.svm:2: feature index 9 is beyond num_features=4'),
])
def test_read_libsvm_malformed_lines(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        io.read_libsvm(_write(tmp_path, 'bad.svm', text), num_features=4)


def test_libsvm_iter(tmp_path):
    it = io.LibSVMIter(_write(tmp_path, 'a.svm', LIBSVM), num_features=4, batch_size=3)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 2] and batches[0].data[0].shape == (3, 4)


CSV = "label,f1,f2\n1,0.5,2\n0,1.5,3\n1,-1,4\n0,2,5\n"


def test_read_csv_with_header_and_label(tmp_path):
    path = _write(tmp_path, 'a.csv', CSV)
    X, y = io.read_csv(path)
    np.testing.assert_array_equal(y, [1, 0, 1, 0])
    np.testing.assert_array_equal(X, [[0.5, 2], [1.5, 3], [-1, 4], [2, 5]])
    X_last, y_last = io.read_csv(path, label_column=-1)
    np.testing.assert_array_equal(y_last, [2, 3, 4, 5])
    X_all, none = io.read_csv(path, label_column=None)
    assert none is None and X_all.shape == (4, 3)


def test_read_csv_shards(tmp_path):
    path = _write(tmp_path, 'a.csv', CSV)
    _, y0 = io.read_csv(path, part_index=0, num_parts=2)      # lines 0 (header) and 2
    X1, y1 = io.read_csv(path, part_index=1, num_parts=2)     # lines 1 and 3
    np.testing.assert_array_equal(y0, [0, 0])
    np.testing.assert_array_equal(X1, [[0.5, 2], [-1, 4]])
    with pytest.raises(ConfigError, match='part_index'):
        io.read_csv(path, part_index=2, num_parts=2)


@pytest.mark.parametrize('text,message', [
    ("1,2,3\n4,5\n", r'bad.csv:2: expected 3 columns, got 2'),
    ("1,2,3\n4,five,6\n", r"bad.csv:2: field 'five' is not a number"),
])
def test_read_csv_malformed_lines(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        io.read_csv(_write(tmp_path, 'bad.csv', text))


def test_csv_iter_without_header(tmp_path):
    it = io.CSVIter(_write(tmp_path, 'n.csv', "1,2,3\n0,5,6\n"), batch_size=2, header=False)
    batch = next(it)
    np.testing.assert_array_equal(batch.label[0], [1, 0])
    np.testing.assert_array_equal(batch.data[0], [[2, 3], [5, 6]])


def test_ndarrayiter_without_a_seed_shuffles_with_numpys_global_generator_as_mxnet():
    """MXNet scripts make a run repeat with ``np.random.seed``: NDArrayIter without ``seed`` draws its order there."""
    X = np.arange(40, dtype=np.float32).reshape(20, 2)

    def order():
        it = io.NDArrayIter(X, np.zeros(20, np.float32), batch_size=5, shuffle=True)
        return np.concatenate([batch.data[0][:, 0] for batch in it])

    np.random.seed(7)
    first = order()
    np.random.seed(7)
    assert np.array_equal(order(), first) and not np.array_equal(first, X[:, 0])
