"""One format rule for the CLI and the Spark job: from the flag, else the content; never a libsvm guess."""
import pytest

from sparkps.errors import ConfigError, DataError
from sparkps.io.formats import csv_has_header, detect_format
from sparkps.worker.command import TrainConfig


def write_parquet(path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"label": [1.0, 0.0], "f0": [0.5, 0.25]}), str(path))


def test_parquet_is_known_by_its_magic_bytes_whatever_its_name(tmp_path):
    write_parquet(tmp_path / "train.parquet")
    write_parquet(tmp_path / "train.txt")
    write_parquet(tmp_path / "train")
    assert [detect_format(tmp_path / n) for n in ("train.parquet", "train.txt", "train")] == ["parquet"] * 3
    (tmp_path / "fake.parquet").write_text("1 1:0.5\n")
    with pytest.raises(ConfigError, match="fake.parquet is named like a parquet file but does not start"):
        detect_format(tmp_path / "fake.parquet")


def test_spark_written_folders_are_known_by_their_files(tmp_path):
    parquet, csv = tmp_path / "p", tmp_path / "c"
    for folder in (parquet, csv):
        folder.mkdir()
        (folder / "_SUCCESS").write_text("")
    write_parquet(parquet / "part-00000-1a2b.snappy.parquet")
    (parquet / ".part-00000-1a2b.snappy.parquet.crc").write_bytes(b"crc")
    (csv / "part-00000-1a2b.csv").write_text("label,f0\n1,0.5\n")
    assert detect_format(parquet) == "parquet" and detect_format(csv) == "csv"
    assert csv_has_header(csv)
    (csv / "part-00000-1a2b.csv").write_text("1,0.5\n0,0.25\n")
    assert not csv_has_header(csv)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_SUCCESS").write_text("")
    with pytest.raises(ConfigError, match="holds no data files"):
        detect_format(empty)


def test_text_is_read_from_its_first_data_line_and_unknown_content_is_refused(tmp_path):
    (tmp_path / "a.txt").write_text("# digits\n3 1:0.5 7:1\n")
    (tmp_path / "b.txt").write_text("label,f0,f1\n3,0.5,1\n")
    (tmp_path / "c.txt").write_text("hello world\n")
    (tmp_path / "d.bin").write_bytes(b"\x00\x01garbage")
    assert detect_format(tmp_path / "a.txt") == "libsvm"
    assert detect_format(tmp_path / "b.txt") == "csv"
    with pytest.raises(ConfigError, match=r"cannot tell the format of .*c.txt .*give --format"):
        detect_format(tmp_path / "c.txt")
    with pytest.raises(ConfigError, match="binary and neither Parquet nor ORC"):
        detect_format(tmp_path / "d.bin")
    assert detect_format(tmp_path / "c.txt", "csv") == "csv"
    assert detect_format("hdfs://nn/data/train.parquet") == "parquet"
    with pytest.raises(ConfigError, match="not on a local file system"):
        detect_format("hdfs://nn/data/train")


def test_the_cli_uses_the_same_rule(tmp_path):
    (tmp_path / "a.txt").write_text("3 1:0.5 7:1\n")
    (tmp_path / "b.txt").write_text("3,0.5,1\n")
    write_parquet(tmp_path / "c.dat")
    config = TrainConfig(symbol="net.json", data=str(tmp_path / "a.txt"))
    assert config.format_of(str(tmp_path / "a.txt")) == "libsvm"      # the CLI read every .txt as CSV
    assert config.format_of(str(tmp_path / "b.txt")) == "csv"
    with pytest.raises(DataError, match="c.dat is parquet; the CLI reads libsvm and CSV"):
        config.format_of(str(tmp_path / "c.dat"))
