"""One format rule for both jobs and the CLI: magic bytes, then the first data line, then the file name; the CTR
job's formats (criteo, libffm, dummy) are told apart by content, whatever the file is called."""
import pytest

from sparkps.errors import ConfigError
from sparkps.io.formats import CTR_FORMATS, detect_format

CRITEO = "1\t" + "\t".join(["3"] * 13) + "\t" + "\t".join(["a"] * 25) + "\t\n"      # ends in an empty cell


@pytest.mark.parametrize("name,text,kind", [
    ("day0.tsv", CRITEO, "criteo"),
    ("day0.txt", CRITEO, "criteo"),
    ("train.txt", "1 0:3:1 1:7:1\n", "libffm"),
    ("census.dummy", "-1 12 40 97\n", "dummy"),
    ("data", "1 3:0.5 9:1\n", "libsvm"),
    ("clicks.csv", "click,site\n1,a\n", "csv"),
])
def test_ctr_formats_come_from_the_content(tmp_path, name, text, kind):
    path = tmp_path / name
    path.write_text(text)
    assert detect_format(str(path), "auto", CTR_FORMATS) == kind


def test_parquet_by_its_magic_bytes_and_the_flag_wins(tmp_path):
    path = tmp_path / "part-0"
    path.write_bytes(b"PAR1" + b"\0" * 16)
    assert detect_format(str(path), None, CTR_FORMATS) == "parquet"
    assert detect_format(str(path), "criteo", CTR_FORMATS) == "criteo"
    with pytest.raises(ConfigError, match="unknown input format 'orc'; use one of parquet, csv, criteo"):
        detect_format(str(path), "orc", CTR_FORMATS)


def test_the_classifier_formats_are_unchanged(tmp_path):
    path = tmp_path / "day0.tsv"
    path.write_text(CRITEO)
    assert detect_format(str(path)) == "csv"        # by name, as before: criteo is not one of its formats


def test_unknown_content_names_the_file_and_the_flag(tmp_path):
    path = tmp_path / "notes"
    path.write_text("hello world\n")
    with pytest.raises(ConfigError, match="cannot tell the format of .*notes .*give --format parquet|csv|criteo"):
        detect_format(str(path), "auto", CTR_FORMATS)
