"""``sparkps verify-checkpoint`` on a saved model whose tables are shard files (or its ``tables`` folder): every
shard checked against the tables' manifest, one line per damaged shard naming it and its table, exit 1; exit 0
when all are intact.

Model: ``packed_fm`` (tests/packed_fm.py) saved with its two tables as two shards each."""
import pytest
from click.testing import CliRunner

from packed_fm import TABLES, packed_fm
from sparkps.cli import main


@pytest.fixture(scope="module")
def spark_model():
    return packed_fm()[0]


def test_intact_shards_pass_and_a_damaged_one_is_named(spark_model, tmp_path):
    spark_model.with_sharded_tables(str(tmp_path / "m"))
    for target in (tmp_path / "m", tmp_path / "m" / "tables"):
        result = CliRunner().invoke(main, ["verify-checkpoint", str(target)])
        assert result.exit_code == 0 and "all 4 shards intact" in result.output, result.output
    shard = tmp_path / "m" / "tables" / TABLES[0] / "server-00001.parquet"
    shard.write_bytes(shard.read_bytes()[:-30])
    result = CliRunner().invoke(main, ["verify-checkpoint", str(tmp_path / "m")])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if "server-" in line]
    assert len(lines) == 1 and str(shard) in lines[0] and TABLES[0] in lines[0].split(": ", 1)[1]
    assert "1 of 4 shards damaged" in result.output


def test_files_the_manifest_does_not_list_are_named_and_never_read(spark_model, tmp_path):
    spark_model.with_sharded_tables(str(tmp_path / "m"))
    planted = tmp_path / "m" / "tables" / TABLES[0] / "server-00007.parquet"
    planted.write_bytes((tmp_path / "m" / "tables" / TABLES[0] / "server-00000.parquet").read_bytes())
    leftover = tmp_path / "m" / "tables" / TABLES[1] / "server-00001.parquet.tmp-4242"
    leftover.write_bytes(b"half a shard")
    result = CliRunner().invoke(main, ["verify-checkpoint", str(tmp_path / "m")])
    assert result.exit_code == 0 and "all 4 shards intact" in result.output, result.output
    for path in (planted, leftover):
        assert "%s: not listed in the manifest (never read)" % path in result.output, result.output
