"""A training step with a sparse embedding (batch-local re-indexing, rows through the local kvstore) against the same
step with the dense Embedding, as the vocabulary grows.

Network: ids (batch 512, 8 fields) -> Embedding(input_dim V, 16) -> Flatten -> FullyConnected(2) -> SoftmaxOutput,
trained by ``FeedForward.fit`` with SGD (learning rate 0.1), 1 BLAS thread. Ids are Zipf-distributed
(``numpy.random.default_rng(0).zipf(1.2) % V``, as feature ids are), labels the parity of the id sum. The dense
contender (``sparse_grad=False``, ``kvstore='local'``) updates the whole V x 16 weight in place every step; the sparse
contender (``sparse_grad=True``) binds a 4096 x 16 batch-local matrix, pulls the batch's unique rows and pushes
their gradient rows to the local kvstore, whose lazy update touches only those rows. Each round fits each contender
for 2 epochs of 16 steps and times the steps of the second epoch (process CPU time between batch-end callbacks);
rounds interleave the contenders; the table gives medians over rounds.

    python -m benchmarks.bench_sparse_embedding [--repeat 5] [--vocab 10000,100000,1000000] [--write-docs]
        [--json PATH]
"""
# One BLAS thread, set before numpy is imported (numpy's BLAS reads it when it loads): the other imports follow.
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import time

import numpy as np

import sparkps.symbol as sym
from benchmarks import report
from sparkps.io import NDArrayIter
from sparkps.train.feedforward import FeedForward

BATCH, FIELDS, DIM, STEPS = 512, 8, 16, 16


def network(vocab, sparse):
    emb = sym.Embedding(sym.Variable("ids"), input_dim=vocab, output_dim=DIM, sparse_grad=sparse, name="emb")
    return sym.SoftmaxOutput(sym.FullyConnected(sym.Flatten(emb), num_hidden=2, name="fc"), name="softmax")


def data(vocab):
    ids = np.random.default_rng(0).zipf(1.2, size=(BATCH * STEPS, FIELDS)) % vocab
    return ids.astype(np.int64), (ids.sum(axis=1) % 2).astype(np.float32)


def step_seconds(vocab, sparse, ids, labels):
    """Median CPU seconds per step of the second epoch of one fit (CPU time of this process: the machine is shared,
    and with one BLAS thread the step runs on one core, so CPU time is the step's work without others' load)."""
    marks = []
    model = FeedForward(network(vocab, sparse), num_epoch=2, optimizer="sgd", learning_rate=0.1, seed=0)
    model.fit(NDArrayIter({"ids": ids}, labels, batch_size=BATCH),
              batch_end_callback=lambda param: marks.append((param.epoch, time.process_time())))
    second = [t for epoch, t in marks if epoch == 1]
    return float(np.median(np.diff(second)))


def run(vocabs, repeat):
    rows = []
    for vocab in vocabs:
        ids, labels = data(vocab)
        unique = np.mean([np.unique(ids[i:i + BATCH]).size for i in range(0, len(ids), BATCH)])
        times = {"dense": [], "sparse": []}
        for _ in range(repeat):
            for name in times:
                times[name].append(step_seconds(vocab, name == "sparse", ids, labels))
        dense, sparse = np.median(times["dense"]), np.median(times["sparse"])
        rows.append({"vocab": vocab, "unique": float(unique), "dense_s": times["dense"], "sparse_s": times["sparse"]})
        print("V=%-8d unique/batch=%6.0f dense %8.2f ms  sparse %7.2f ms  speed-up %.1fx"
              % (vocab, unique, dense * 1e3, sparse * 1e3, dense / sparse), flush=True)
    return rows


SECTIONS = ("sparse_embedding",)


def medians(rows):
    """(vocab, unique ids per batch, median dense step, median sparse step) of each row of a run."""
    return [(r["vocab"], r["unique"], float(np.median(r["dense_s"])), float(np.median(r["sparse_s"]))) for r in rows]


def render(run):
    """The section of a run record (pure function of it)."""
    return markdown(medians(run["data"]["rows"]), run["command"])


def markdown(rows, command):
    lines = ["## Sparse embedding step vs dense Embedding (local kvstore)", "",
             "Network ids (512 x 8) -> Embedding(V, 16) -> FC(2) -> softmax, FeedForward.fit with SGD, 1 BLAS "
             "thread, Zipf(1.2) ids. Dense: `sparse_grad=False`, the whole V x 16 weight updated in place each step. "
             "Sparse: `sparse_grad=True`, a 4096 x 16 batch-local matrix, the batch's unique rows pulled from and "
             "their gradient rows pushed to the local kvstore (lazy update). Medians over interleaved rounds of the "
             "per-step process CPU time in the second epoch (the machine is shared; one BLAS thread).", "",
             "| V (input_dim) | unique ids / batch | dense step (CPU ms) | sparse step (CPU ms) | dense / sparse |",
             "|---|---|---|---|---|"]
    for vocab, unique, dense, sparse in rows:
        lines.append("| %d | %.0f | %.2f | %.2f | %.1f× |" % (vocab, unique, dense * 1e3, sparse * 1e3, dense / sparse))
    lines += ["", "The sparse step costs the same whatever V is (it depends on the batch's unique ids); the dense "
              "step grows with V because its gradient and update sweep the whole table.", "",
              "Command: `%s`" % command]
    return "\n".join(lines)


def figures(rows):
    """The run's figures for ``--json``: CPU ms of a step of each contender, and their ratio, per vocabulary."""
    out = {}
    for vocab, _unique, dense, sparse in rows:
        out.update({"V=%d dense" % vocab: report.lower(dense * 1e3, "CPU ms"),
                    "V=%d sparse" % vocab: report.lower(sparse * 1e3, "CPU ms"),
                    "V=%d dense/sparse" % vocab: report.higher(dense / sparse, "x")})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--vocab", default="10000,100000,1000000")
    args = report.add_output_args(parser).parse_args()
    record = report.Run("bench_sparse_embedding")
    rows = run([int(v) for v in args.vocab.split(",")], args.repeat)
    print(record.publish(args, "sparse_embedding", {"options": report.options(args), "rows": rows}, render))
    report.save_json(args, "bench_sparse_embedding", figures(medians(rows)))


if __name__ == "__main__":
    main()
