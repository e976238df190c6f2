"""The one worker life cycle (sparkps.worker.lifecycle) that `sparkps worker train` and the Spark task both run:
a Start bound to a registered worker tells its kvstore to load the checkpoint, fast-forwards its data past the
steps the checkpoint holds for it, and gives the checkpoint callbacks, whose record keeps the earlier epochs."""
import numpy as np
import pytest

from sparkps.errors import DataError
from sparkps.io import NDArrayIter
from sparkps.runtime.resume import ResumePoint
from sparkps.worker.lifecycle import Checkpoints, run_worker, with_earlier


class FakeOffice:
    """The scheduler link a failure is reported on."""

    def __init__(self):
        self.failure, self.reported = None, []

    def report_error(self, text):
        self.reported.append(text)


class FakeStore:
    """What the life cycle asks of a registered dist kvstore."""

    def __init__(self, rank=0):
        self.rank, self.resumed, self.saved, self.closed = rank, [], [], 0
        self.postoffice = FakeOffice()

    def resume_from(self, path):
        self.resumed.append(path)

    def save_checkpoint(self, path, resume):
        self.saved.append((path, resume))

    def close(self):
        self.closed += 1


def rows(n=10, batch=2):
    return NDArrayIter(np.arange(n, dtype=np.float32).reshape(n, 1), np.zeros(n, np.float32), batch)


def point(steps, history=()):
    return ResumePoint("/ckpt/step-00000007", epoch=1, step=steps, steps={"0": steps, "1": steps - 1},
                       steps_per_epoch=5, history=list(history))


def test_without_checkpoints_a_worker_starts_from_scratch_with_its_data_as_it_is():
    kv, data = FakeStore(), rows()
    seen = run_worker(lambda: kv, lambda kv, start: (start.resuming, start.skip(data), start.callbacks()))
    assert seen == (False, data, {"batch_end_callback": [], "epoch_end_callback": []})
    assert kv.resumed == [] and kv.closed >= 1


@pytest.mark.parametrize("rank, begin_epoch, first_row", [(0, 1, 4.0), (1, 1, 2.0)])
def test_a_resumed_worker_loads_the_checkpoint_and_skips_the_steps_it_holds(rank, begin_epoch, first_row):
    kv = FakeStore(rank)

    def fit(kv, start):
        data = start.skip(rows())
        return start.start_step, start.begin_epoch, float(np.asarray(data.next().data[0])[0, 0])
    assert run_worker(lambda: kv, fit, checkpoints=Checkpoints(point(7))) == (7 - rank, begin_epoch, first_row)
    assert kv.resumed == ["/ckpt/step-00000007"]


def test_checkpoint_callbacks_continue_the_step_count_and_keep_the_earlier_epochs(tmp_path):
    kv = FakeStore(0)
    earlier = [{"epoch": 0, "accuracy": 0.5}]

    def fit(kv, start):
        saves = start.callbacks(history=lambda: [{"epoch": 1, "accuracy": 0.7}])
        saves["epoch_end_callback"][0](1)
        return saves
    run_worker(lambda: kv, fit, checkpoints=Checkpoints(point(7, earlier), str(tmp_path), every_steps=3))
    (path, record), = kv.saved
    assert path == str(tmp_path / "epoch-0002")
    assert record["step"] == 7 and record["steps_per_epoch"] == 5
    assert record["history"] == earlier + [{"epoch": 1, "accuracy": 0.7}]
    assert with_earlier(None, earlier) == earlier


def test_a_checkpoint_folder_is_read_once_registered_and_a_bad_one_fails_the_worker(tmp_path):
    kv = FakeStore(0)
    with pytest.raises(DataError):
        run_worker(lambda: kv, lambda kv, start: None, checkpoints=Checkpoints(str(tmp_path)))
    assert kv.closed >= 1 and kv.postoffice.reported[0].startswith("DataError: cannot read kvstore checkpoint")
