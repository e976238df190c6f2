"""The step of a network with a sparse table (``pull_step``: the dense push, the rows and the pulls in one PUSHPULL per
server) sends its dense gradient through the worker's codec, as a dense push does: 2-bit sends 1/16 of the bytes
(counted on the wire, ZeroMQ over tcp on loopback) and keeps the rest on the worker (error feedback), fp16 sends
half precision. The weights a step leaves equal those of the same gradients pushed without a table, and FeedForward
trains the sparse parity network (tests/sparse_parity.py) with 2-bit dense gradients as well as without.

Data: a documented generator (numpy Generator seed 3): a dense key of 4096 values and a table of width 8, a step
pushing the gradients of 6 rows and pulling 6; gradients normal(0, 0.3)."""
import numpy as np

from sparkps import optimizer
from sparkps.comm import postoffice
from sparkps.io import NDArrayIter
from sparkps.plan import model
from sparkps.rows.values import RowSparse
from sparkps.train.feedforward import FeedForward
from sparse_parity import FC, IDS, LABELS, PATIENT, network

DENSE, DIM, STEPS = 4096, 8, 4
RNG = np.random.default_rng(3)
GRADS = RNG.normal(0, 0.3, (STEPS, DENSE)).astype(np.float32)
ROW_IDS = np.array([1, 5, 9, 12, 40, 77], np.int64)
ROW_GRADS = RNG.normal(0, 0.3, (STEPS, ROW_IDS.size, DIM)).astype(np.float32)
TWO_BIT = {"type": "2bit", "threshold": 0.25}


class WireCounter:
    """Counts the encoded frames of every PUSHPULL request the nodes of this process send (the header frame with
    its MAC and each array frame): the bytes ZeroMQ puts on the wire for them, less its few bytes of framing."""

    def __init__(self):
        self.bytes = self.requests = 0

    def encode(self, encode):
        """``encode`` (:func:`sparkps.comm.message.encode`), counting what it encodes."""
        def counting(msg, key):
            frames = encode(msg, key)
            if msg.cmd == "PUSHPULL" and not msg.reply:
                self.requests += 1
                self.bytes += sum(memoryview(f).nbytes for f in frames)
            return frames
        return counting


def counted_steps(ps_cluster, monkeypatch, compression):
    """The WireCounter of ``train_steps`` with ``compression`` over tcp."""
    counter, encode = WireCounter(), postoffice.wire.encode
    with monkeypatch.context() as patch:
        patch.setattr(postoffice.wire, "encode", counter.encode(encode))
        counter.pushed = train_steps(ps_cluster, compression)[2]["bytes_per_push"]
    return counter


def train_steps(ps_cluster, compression, table=True, transport="tcp"):
    """STEPS steps of one worker on one server: a dense push of GRADS[i] (and the rows of the table) then
    ``pull_step``. Returns the dense weights after each step and the worker's codec."""
    with ps_cluster(num_servers=1, num_workers=1, kvtype="dist_sync", compression=compression,
                    transport=transport) as cluster:
        (kv,) = cluster.start_workers()
        weights = np.zeros(DENSE, np.float32)
        kv.init(0, weights)
        if table:
            kv.init("emb", RowSparse(np.zeros(0, np.int64), np.zeros((0, DIM), np.float32), (100, DIM)))
        kv.set_optimizer(optimizer.create("sgd", learning_rate=1.0))
        seen, rows = [], np.zeros((ROW_IDS.size, DIM), np.float32)
        for step in range(STEPS):
            kv.push(0, GRADS[step])
            if table:
                kv.push("emb", RowSparse(ROW_IDS, ROW_GRADS[step], (100, DIM)))
                kv.pull_step([0], out=[weights], rows={"emb": (ROW_IDS, rows)})
            else:
                kv.pull(0, out=weights)
            seen.append(weights.copy())
        codec = kv.worker.codec
        counters = dict(kv.worker.counters(), bytes_per_push=kv.bytes_per_step)
    return seen, codec, counters


def test_two_bit_step_sends_a_sixteenth_of_the_dense_gradient_bytes(ps_cluster, monkeypatch):
    plain = counted_steps(ps_cluster, monkeypatch, None)
    two_bit = counted_steps(ps_cluster, monkeypatch, TWO_BIT)
    assert plain.requests == two_bit.requests == STEPS
    rows = STEPS * ROW_IDS.size * (8 + DIM * 4)         # row ids and gradients travel as they are
    assert plain.bytes > STEPS * DENSE * 4 + rows
    saved = plain.bytes - two_bit.bytes
    # `sparkps plan` counts what happens: the dense gradient the worker sent, and each request to within its
    # header's length (the plan's header is a step of 4 keys; a codec adds its name and options)
    assert (plain.pushed, two_bit.pushed) == (model.codec_bytes(DENSE, 'none'), model.codec_bytes(DENSE, '2bit'))
    for counted, codec in ((plain, 'none'), (two_bit, '2bit')):
        planned = model.step_request_bytes(DENSE, ROW_IDS.size, DIM, codec)
        assert abs(counted.bytes / STEPS - planned) < 64, (codec, counted.bytes / STEPS, planned)
    codec_header = 64                                   # {"codec": {"type": "2bit", "threshold": t, "size": n}}
    assert saved >= STEPS * (DENSE * 4 - DENSE // 4 - codec_header)   # float32 against 16 values per int32 word


def test_two_bit_step_keeps_the_rest_on_the_worker_as_a_dense_push_does(ps_cluster):
    stepped, codec, counters = train_steps(ps_cluster, TWO_BIT, transport="inproc")
    assert counters["steps"] == STEPS
    pushed, _, _ = train_steps(ps_cluster, TWO_BIT, table=False, transport="inproc")
    np.testing.assert_array_equal(stepped[-1], pushed[-1])
    # error feedback: what was applied (sgd, lr 1) plus what the worker still holds is every gradient pushed
    np.testing.assert_allclose(-stepped[-1] + codec.residual((0, (0,))), GRADS.sum(axis=0), atol=1e-5)
    assert set(np.unique(np.round(np.diff(stepped, axis=0, prepend=0) / 0.25, 5))) <= {-1.0, 0.0, 1.0}


def test_fp16_step_sends_half_precision(ps_cluster):
    stepped, _, _ = train_steps(ps_cluster, {"type": "fp16"}, transport="inproc")
    expected = -np.cumsum(GRADS.astype(np.float16).astype(np.float32), axis=0, dtype=np.float32)
    np.testing.assert_allclose(stepped[-1], expected[-1], rtol=1e-6, atol=1e-6)
    assert not np.allclose(stepped[-1], -GRADS.sum(axis=0), rtol=0, atol=1e-7)



def fit_sparse_network(ps_cluster, compression):
    """FeedForward on the sparse parity network (tests/sparse_parity.py), one worker and one server (dist_async:
    a fixed order), 8 epochs of sgd; returns the training accuracy and the worker's pushed bytes per push."""
    def work(kv):
        model = FeedForward(network(True), num_epoch=8, optimizer='sgd', learning_rate=0.5,
                            arg_params={k: v.copy() for k, v in FC.items()})
        model.fit(NDArrayIter({'ids': IDS}, LABELS, batch_size=8), kvstore=kv)
        predicted = model.predict(NDArrayIter({'ids': IDS}, LABELS, batch_size=8)).argmax(axis=1)
        return float((predicted == LABELS).mean()), kv.worker.bytes_pushed / kv.worker.pushes

    with ps_cluster(num_servers=1, num_workers=1, kvtype='dist_async', compression=compression,
                    timeouts=PATIENT) as cluster:
        (result,) = cluster.run_workers(work, timeout=120)
    return result


def test_a_sparse_network_trains_with_two_bit_dense_gradients(ps_cluster):
    plain_accuracy, plain_bytes = fit_sparse_network(ps_cluster, None)
    accuracy, pushed = fit_sparse_network(ps_cluster, TWO_BIT)
    dense = sum(v.size for v in FC.values())
    assert (plain_bytes, pushed) == (dense * 4, -(-dense // 16) * 4)
    assert accuracy >= plain_accuracy - 0.05 and accuracy > 0.6
