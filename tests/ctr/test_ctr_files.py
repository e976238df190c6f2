"""CTR file readers (Criteo TSV, libffm, Angel's dummy) and numeric standardisation: values, empty
cells, shards, and errors naming file and line."""
import numpy as np
import pytest

from sparkps.ctr.files import read_criteo, read_dummy, read_libffm
from sparkps.ctr.hashing import hash_column, hash_value
from sparkps.ctr.numeric import NumericStats
from sparkps.errors import DataError


def criteo_line(label, ints, cats):
    return "\t".join([str(label)] + [str(i) for i in ints] + list(cats)) + "\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_criteo_reads_values_and_empty_cells(tmp_path):
    full = criteo_line(1, range(13), ["%08x" % i for i in range(26)])
    empty = criteo_line(0, [""] * 13, [""] * 26)         # every cell but the label empty, trailing tabs kept
    path = write(tmp_path, "day.tsv", full + empty)
    table = read_criteo(path)
    assert table.labels.tolist() == [1.0, 0.0]
    assert table.numeric[0].tolist() == list(range(13))
    assert np.isnan(table.numeric[1]).all()
    assert table.ids.shape == (2, 26) and table.ids.dtype == np.uint64
    assert int(table.ids[0, 3]) == hash_value("C4", "00000003")
    assert int(table.ids[1, 3]) == hash_value("C4", "")
    assert table.lines.tolist() == [1, 2]


def test_criteo_shards_split_lines(tmp_path):
    lines = "".join(criteo_line(i % 2, [i] * 13, ["a"] * 26) for i in range(5))
    path = write(tmp_path, "d.tsv", lines)
    parts = [read_criteo(path, part_index=p, num_parts=2) for p in range(2)]
    assert parts[0].numeric[:, 0].tolist() == [0, 2, 4] and parts[1].numeric[:, 0].tolist() == [1, 3]


@pytest.mark.parametrize("line, message", [
    ("1\t2\t3\n", r"d.tsv:2: expected 40 tab-separated columns"),
    (criteo_line(1, ["x"] + [1] * 12, ["a"] * 26), r"d.tsv:2: column I1 holds 'x'"),
    (criteo_line(2, [1] * 13, ["a"] * 26), r"d.tsv:2: label '2' must be 0 or 1"),
])
def test_criteo_errors_name_file_and_line(tmp_path, line, message):
    path = write(tmp_path, "d.tsv", criteo_line(0, [1] * 13, ["a"] * 26) + line)
    with pytest.raises(DataError, match=message):
        read_criteo(path)


def test_libffm_hashes_field_and_feature(tmp_path):
    path = write(tmp_path, "t.ffm", "1 0:5:1 1:7:0.5\n0 0:5:1 1:8:1 2:9:2\n")
    rows = read_libffm(path)
    assert rows.labels.tolist() == [1, 0]
    assert rows.indptr.tolist() == [0, 2, 5]
    assert rows.fields.tolist() == [0, 1, 0, 1, 2]
    assert rows.values.tolist() == [1, 0.5, 1, 1, 2]
    assert int(rows.ids[0]) == hash_value("0", "5") == int(rows.ids[2])
    assert hash_value("1", "7") == int(rows.ids[1])
    with pytest.raises(DataError, match="t.ffm:2: expected 2 features"):
        rows.per_field(2, path)


@pytest.mark.parametrize("line, message", [("1 0:5\n", "t.ffm:1: malformed feature '0:5'"),
                                           ("1 a:5:1\n", "t.ffm:1: malformed feature 'a:5:1'"),
                                           ("yes 0:5:1\n", "t.ffm:1: label 'yes' is not a number")])
def test_libffm_errors(tmp_path, line, message):
    with pytest.raises(DataError, match=message):
        read_libffm(write(tmp_path, "t.ffm", line))


def test_dummy_reads_angel_labels_and_indices(tmp_path):
    path = write(tmp_path, "census.dummy", "-1 3 10 22\n1 4 11 23\n")
    rows = read_dummy(path, index_range=30)
    assert rows.labels.tolist() == [0, 1]
    ids, values = rows.per_field(3, path)
    assert ids.tolist() == [[3, 10, 22], [4, 11, 23]] and (values == 1).all()
    with pytest.raises(DataError, match="census.dummy:2: feature index 23 outside"):
        read_dummy(path, index_range=23)
    with pytest.raises(DataError, match=r"bad.dummy:1: feature index 'x'"):
        read_dummy(write(tmp_path, "bad.dummy", "1 x\n"))


def test_numeric_stats_standardise_and_round_trip():
    X = np.array([[1.0, np.nan, 5.0], [3.0, np.nan, 5.0], [np.nan, np.nan, 5.0]])
    stats = NumericStats.fit(X, names=["a", "b", "c"])
    out = stats.transform(X)
    assert out[:, 0].tolist() == [-1.0, 1.0, 0.0]            # mean 2, std 1, missing -> 0
    assert (out[:, 1:] == 0).all()                             # all-missing and constant columns
    again = NumericStats.from_dict(stats.to_dict())
    np.testing.assert_array_equal(again.transform(X), out)
    halves = NumericStats.fit(X[:1], names="abc").merge(NumericStats.fit(X[1:], names="abc"))
    np.testing.assert_allclose(halves.mean, stats.mean)
    with pytest.raises(DataError, match=r"expected \(rows, 3\) numeric columns"):
        stats.transform(X[:, :2])


def test_numeric_stats_log_maps_counts():
    stats = NumericStats.fit(np.array([[0.0], [np.e - 1]]), log=True)
    np.testing.assert_allclose(stats.mean, [0.5])


def test_libffm_fields_that_repeat_are_multi_valued(tmp_path):
    path = tmp_path / "tags.ffm"
    path.write_text("1 0:a:1 1:x:1 1:y:1\n0 0:b:1\n1 0:a:1 1:y:1 1:z:1 1:x:1\n")
    columns = read_libffm(str(path)).by_field()
    assert sorted(columns) == [0, 1]
    assert columns[0][1].tolist() == [1, 1, 1] and columns[1][1].tolist() == [2, 0, 3]
    x, y = hash_column("1", ["x"])[0], hash_column("1", ["y"])[0]
    assert columns[1][0][:2].tolist() == [x, y] and columns[1][0][2] == y
