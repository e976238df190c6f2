"""Resume after a failure, below Spark: the servers' record of each worker's applied steps, the choice of the
newest complete checkpoint (a half-written manifest is passed over), pruning, and a data iterator
fast-forwarded to a worker's position (the same batches as an uninterrupted run)."""
import json
import logging
import os

import numpy as np
import pytest

import sparkps.runtime.resume as resume_mod
from sparkps.errors import ConfigError
from sparkps.io import NDArrayIter
from sparkps.kvstore.strategies import STRATEGIES
from sparkps.optimizer import SGD
from sparkps.runtime.resume import Checkpointer, SkippedIter, check_resumable, checkpoints, latest_checkpoint

SHAPE = (4, 3)


def step(kv, grad=1.0):
    out = np.zeros(SHAPE, np.float32)
    kv.pushpull(0, np.full(SHAPE, grad, np.float32), out=out)
    return out


def prepare(kv):
    kv.init(0, np.zeros(SHAPE, np.float32))
    kv.set_optimizer(SGD(learning_rate=0.5, momentum=0.9, rescale_grad=1.0))


@pytest.mark.parametrize("kvtype", ["dist_sync", "dist_async"])
def test_a_checkpoint_records_how_many_steps_of_each_worker_its_weights_hold(ps_cluster, tmp_path, kvtype):
    with ps_cluster(num_servers=2, num_workers=2, kvtype=kvtype) as c:
        def work(kv):
            prepare(kv)
            for _ in range(3):
                step(kv)
            if kv.rank == 1:                 # worker 1 pushes a 4th step (in dist_sync it waits for worker 0)
                kv.push(0, np.ones(SHAPE, np.float32))
            kv.barrier()
            if kv.rank == 0:
                kv.save_checkpoint(tmp_path / "c", resume={"epoch": 0, "nbatch": 3, "step": 3})
            kv.barrier()
            if kvtype == "dist_sync" and kv.rank == 0:   # complete worker 1's round before the job ends
                step(kv)
        c.run_workers(work)
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["resume"]["step"] == 3
    # dist_sync: worker 1's 4th round waits for worker 0 (not applied: not in the checkpoint); async: applied
    assert manifest["resume"]["steps"] == {"0": 3, "1": 3 if kvtype == "dist_sync" else 4}


def test_a_resumed_store_loads_weights_and_momentum_after_set_optimizer(ps_cluster, tmp_path):
    with ps_cluster(num_servers=1, num_workers=1) as c:
        def work(kv):
            prepare(kv)
            step(kv)
            kv.save_checkpoint(tmp_path / "c", resume={"epoch": 0, "nbatch": 1, "step": 1})
            return step(kv)                  # the uninterrupted second step (momentum carried)
        expected = c.run_workers(work)[0]
    with ps_cluster(num_servers=1, num_workers=1) as c:
        def again(kv):
            kv.resume_from(tmp_path / "c")
            prepare(kv)                      # fresh weights and optimizer, then the checkpoint replaces both
            out = np.zeros(SHAPE, np.float32)
            kv.pull(0, out=out)
            assert np.allclose(out, -0.5)
            return step(kv)
        assert np.array_equal(c.run_workers(again)[0], expected)


def write_point(folder, name, step, epoch=0, complete=True):
    path = os.path.join(folder, name)
    os.makedirs(path)
    manifest = {"format": "sparkps-kvstore", "version": 1, "optimizer": None, "num_update": 0, "keys": {}}
    if complete:
        manifest["resume"] = {"epoch": epoch, "nbatch": 0, "step": step, "steps_per_epoch": 10,
                              "steps": {"0": step, "1": step}, "history": []}
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    return path


def test_the_newest_complete_checkpoint_is_chosen_and_a_half_written_one_passed_over(tmp_path):
    folder = str(tmp_path)
    write_point(folder, "step-00000005", 5)
    write_point(folder, "epoch-0001", 10, epoch=1)
    write_point(folder, "step-00000010", 10)
    newest = write_point(folder, "step-00000015", 15)
    os.makedirs(os.path.join(folder, "step-00000020"))          # a save that never wrote its manifest
    write_point(folder, "step-00000025", 25, complete=False)     # a manifest without the resume record
    os.makedirs(os.path.join(folder, "unrelated"))
    assert latest_checkpoint(folder).path == newest
    with open(os.path.join(newest, "manifest.json"), "r+") as f:  # a crash half way through writing it
        f.truncate(40)
    point = latest_checkpoint(folder)
    assert os.path.basename(point.path) == "epoch-0001" and point.step == 10 and point.epoch == 1
    assert point.steps_of(1) == 10 and point.steps_of(7) == 0
    assert latest_checkpoint(str(tmp_path / "missing")) is None


def test_a_worker_0_checkpointer_saves_every_n_steps_keeps_two_step_checkpoints_and_every_epoch(tmp_path):
    class Store:
        def save_checkpoint(self, path, resume):
            write_point(os.path.dirname(path), os.path.basename(path), resume["step"], resume["epoch"])
            self.last = resume

    class Param:
        epoch, nbatch = 0, 0
    store = Store()
    saver = Checkpointer(store, str(tmp_path), every_steps=3, rank=0, history=lambda: [{"epoch": 0}])
    for n in range(1, 8):
        Param.nbatch = n
        saver.on_batch(Param)
    saver.on_epoch(0)
    names = sorted(os.path.basename(p.path) for p in checkpoints(str(tmp_path)))
    assert names == ["epoch-0001", "step-00000003", "step-00000006"]
    os.makedirs(tmp_path / "step-00000008")  # a save that never completed
    saver.on_batch(Param)
    saver.on_batch(Param)                    # step 9: the oldest step checkpoint goes, and the incomplete one
    names = sorted(os.listdir(tmp_path))
    assert names == ["epoch-0001", "step-00000006", "step-00000009"]
    assert resume_mod.read_point(str(tmp_path / "epoch-0001")).epoch == 1 and store.last["steps_per_epoch"] == 7
    with pytest.raises(ConfigError, match="checkpoint_steps must be >= 1"):
        Checkpointer(store, str(tmp_path), every_steps=0)
    other = Checkpointer(store, str(tmp_path), every_steps=1, rank=1)
    other.on_batch(Param)
    other.on_epoch(0)
    assert store.last["step"] == 9           # only worker 0 saves


def test_a_damaged_epoch_checkpoint_is_warned_about_once_and_left(tmp_path, caplog):
    class Store:
        def save_checkpoint(self, path, resume):
            write_point(os.path.dirname(path), os.path.basename(path), resume["step"], resume["epoch"])

    class Param:
        epoch, nbatch = 0, 0
    os.makedirs(tmp_path / "epoch-0001")     # an epoch save whose manifest was never written
    saver = Checkpointer(Store(), str(tmp_path), every_steps=1, rank=0)
    with caplog.at_level(logging.WARNING, logger="sparkps.runtime.resume"):
        for n in range(1, 8):
            Param.nbatch = n
            saver.on_batch(Param)
    warnings = [r.getMessage() for r in caplog.records if "epoch-0001" in r.getMessage()]
    assert len(warnings) == 1 and "skipping checkpoint" in warnings[0], warnings
    assert sorted(os.listdir(tmp_path)) == ["epoch-0001", "step-00000006", "step-00000007"]


def batches(data, epochs):
    out = []
    for _ in range(epochs):
        data.reset()
        out.append([b.data[0].copy() for b in data])
    return out


@pytest.mark.parametrize("skip", [0, 4, 7, 8, 9, 20])
def test_a_skipped_iterator_continues_with_the_batches_an_uninterrupted_run_trains_on(skip):
    X = np.arange(60, dtype=np.float32).reshape(30, 2)
    y = np.zeros(30, np.float32)
    make = lambda: NDArrayIter(X, y, 4, shuffle=True, last_batch_handle="roll_over", seed=5)  # noqa: E731
    clean = [b for epoch in batches(make(), 3) for b in epoch]
    resumed = SkippedIter(make(), skip)
    rest = [b for epoch in batches(resumed, 3 - resumed.begin_epoch) for b in epoch]
    assert len(rest) == len(clean) - skip
    assert all(np.array_equal(a, b) for a, b in zip(rest, clean[skip:]))
    ends = np.cumsum([len(e) for e in batches(make(), 3)])
    assert resumed.begin_epoch == int(np.searchsorted(ends, skip, side="right"))


def test_every_strategy_resumes_and_a_store_without_servers_does_not():
    for strategy in STRATEGIES:
        check_resumable(strategy)
    with pytest.raises(ConfigError, match="kvstore 'local' keeps no weights on the parameter servers"):
        check_resumable("local")


def test_a_sparse_model_resumed_mid_epoch_ends_equal_to_the_uninterrupted_run(ps_cluster, tmp_path):
    """dist_sync, 2 workers, a sparse Embedding (rows on the server, momentum state per row) and dense layers:
    checkpoints every 3 steps; a second cluster resumes from worker 0's step 9 (epoch 2, batch 1) and must end
    with the same rows and weights — no step applied twice, none lost. A step's pushes ride with the next
    batch's pull, so the checkpoint holds fewer steps than worker 0 ran: it redoes them, on the same weights."""
    import sparkps.symbol as sym
    from cluster import cluster_timeouts
    from sparkps.runtime.resume import read_point
    from sparkps.train.feedforward import FeedForward
    vocab, dim = 20, 4
    ids = np.random.default_rng(0).integers(0, vocab, size=(64, 3))
    labels = (ids.sum(axis=1) % 2).astype(np.float32)
    emb = sym.Embedding(sym.Variable('ids'), input_dim=vocab, output_dim=dim, sparse_grad=True, name='emb')
    net = sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(emb), num_hidden=2, name='fc'), name='softmax')
    fc = {'fc_weight': np.random.default_rng(1).normal(0, 0.1, (2, 3 * dim)).astype(np.float32),
          'fc_bias': np.zeros(2, np.float32)}
    folder = str(tmp_path / "ckpt")

    def run(point=None):
        def work(kv):
            data = NDArrayIter({'ids': ids[kv.rank::2]}, labels[kv.rank::2], batch_size=8, shuffle=True, seed=kv.rank)
            model = FeedForward(net, num_epoch=3, optimizer='sgd', learning_rate=0.5, momentum=0.9,
                                arg_params={k: v.copy() for k, v in fc.items()})
            if point is not None:
                data = SkippedIter(data, point.steps_of(kv.rank))
                model.begin_epoch = data.begin_epoch
                kv.resume_from(point.path)
            saver = Checkpointer(kv, folder, every_steps=3, rank=kv.rank,
                                 start_step=point.steps_of(kv.rank) if point else 0)
            model.fit(data, kvstore=kv, batch_end_callback=saver.on_batch, epoch_end_callback=saver.on_epoch)
            return model.arg_params
        with ps_cluster(num_servers=1, num_workers=2, timeouts=cluster_timeouts(heartbeat_timeout=30.0)) as c:
            return c.run_workers(work, timeout=120)[0]

    clean = run()
    point = read_point(os.path.join(folder, "step-00000009"))
    assert point.epoch == 2 and point.steps == {"0": 8, "1": 8}    # step 9's push had not left worker 0 yet
    resumed = run(point)
    np.testing.assert_allclose(resumed['fc_weight'], clean['fc_weight'], atol=1e-6)
    table, expected = resumed['emb_weight'], clean['emb_weight']
    assert np.array_equal(np.sort(table.ids), np.sort(expected.ids))
    np.testing.assert_allclose(table.rows[np.argsort(table.ids)], expected.rows[np.argsort(expected.ids)], atol=1e-6)
