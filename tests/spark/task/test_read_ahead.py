"""A training task reads its first rows before it registers, while its server process starts; an error in those
rows is raised where training reads them, as before."""
import pytest

from sparkps.errors import DataError
from sparkps.spark.task.local_copy import read_ahead


def test_the_first_item_is_read_at_once_and_every_item_follows():
    read = []

    def rows():
        for i in range(3):
            read.append(i)
            yield i
    ahead = read_ahead(rows())
    assert read == [0]
    assert list(ahead) == [0, 1, 2] and read == [0, 1, 2]
    assert list(read_ahead(iter(()))) == []


def test_an_error_in_the_first_rows_is_raised_where_they_are_read():
    def rows():
        raise DataError("row 0: column 'site' is bad")
        yield
    ahead = read_ahead(rows())        # nothing raised yet
    with pytest.raises(DataError, match="^row 0: column 'site' is bad$"):
        next(ahead)


def test_a_task_reads_its_first_rows_before_it_registers(monkeypatch):
    import sparkps.kvstore as kvstore
    from sparkps.spark.task.barrier_task import WorkerFailed, run_task
    read, seen = [], []

    def rows():
        read.append("first block")
        yield "first block"

    def create(*args, **kwargs):
        seen.append(list(read))
        raise RuntimeError("registration refused")
    monkeypatch.setattr(kvstore, "create", create)
    plan = {"num_servers": 0, "kvstore": "dist_sync", "scheduler_uri": "tcp://127.0.0.1:1", "secret": "s"}
    with pytest.raises(WorkerFailed, match="registration refused"):
        run_task(plan, 1, rows())
    assert seen == [["first block"]]
