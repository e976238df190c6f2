"""One process: samples/s of a CTR training step with the fused ops (the zoo's default) against the same network of
the plain ops (``build(..., fused=False)``), for FM and DeepFM, and a PyTorch CPU DeepFM when torch is importable.

Data: planted Criteo-shaped clicks (``sparkps.ctr.synthetic``: 26 categorical fields of 1000 values, 13 numeric
columns), hashed to 64-bit ids. FM: embedding 8, batch 256 (the CTR estimator's defaults); DeepFM: embedding 16,
MLP 400-400-400, batch 2048. Three measures, each the median of ``--repeats`` interleaved rounds (fused, then plain,
in each round):

- worker step: what a worker computes in a step besides its requests to the servers: the batch-local re-index of
  the ids (``SparseBatch.pull`` with the row exchange a no-op), forward, backward, the row gradients handed out as
  RowSparse values (to a store that drops them) and the AUC metric's update;
- executor: ``exe.forward(is_train=True)`` + ``exe.backward()`` alone, on the positions of real batches;
- training step, local store: ``FeedForward.fit`` in one process with the local store (each step also pulls the
  rows from the local tables, creating unseen ones, and applies Adam to the pushed rows there and to the dense
  weights), timed from the end of the first batch to the end of the last.

PyTorch (when importable): the same DeepFM (one embedding table over the batch's vocabulary, the FM term, the MLP,
Adam, BCE loss), its forward + backward + Adam step at batch 2048, with ``--threads`` threads.

    python -m benchmarks.bench_fused_step [--models fm,deepfm] [--repeats 3] [--threads 1] [--write-docs] [--json PATH]
"""
# The thread count is read from the command line and set before numpy is imported (numpy's BLAS reads it when it
# loads), so the arguments are parsed first and the other imports follow.
import argparse
import os

from benchmarks import report

CASES = {"fm": dict(dim=8, hidden=(64, 32), batch=256, steps=80),
         "deepfm": dict(dim=16, hidden=(400, 400, 400), batch=2048, steps=8)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="fm,deepfm", help="comma-separated: fm, deepfm")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="BLAS (and PyTorch) threads")
    parser.add_argument("--vocab", type=int, default=1000)
    return report.add_output_args(parser).parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:  # thread counts must be fixed before numpy loads its BLAS
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)

import statistics  # noqa: E402 (after the thread settings above)
import time  # noqa: E402

import numpy as np  # noqa: E402


def planted(rows, vocab):
    """Hashed ids (rows, 26) uint64, standardised numeric columns (rows, 13), labels and the field names."""
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    from sparkps.ctr.synthetic import planted_ctr
    data = planted_ctr(rows, num_fields=26, num_numeric=13, vocab=vocab, seed=1)
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(26)])
    numeric = NumericStats.fit(data.numeric, data.numeric_names, log=True).transform(data.numeric)
    return ids, numeric.astype(np.float32), data.labels, data


def spec_of(data, case):
    import sparkps.nets as nets
    return nets.FeatureSpec(categorical=data.fields, numeric=data.numeric_names, embedding_dim=case["dim"],
                            hidden_units=case["hidden"])


def training_step(model, spec, inputs, labels, batch, fused):
    """Seconds per step of FeedForward.fit (local store), first batch end to last batch end."""
    import sparkps.nets as nets
    from sparkps.ctr.features import LABEL
    from sparkps.io.iterators import NDArrayIter
    from sparkps.nets.blocks import ctr_initializer
    from sparkps.train.feedforward import FeedForward
    ends = []
    data = NDArrayIter(inputs, {LABEL: labels}, batch_size=batch, shuffle=True, seed=0)
    net = FeedForward(nets.build(model, spec, fused=fused), num_epoch=1, optimizer="adam", learning_rate=0.01,
                      seed=0, initializer=ctr_initializer())
    net.fit(data, eval_metric="auc", batch_end_callback=lambda _: ends.append(time.perf_counter()))
    return (ends[-1] - ends[0]) / (len(ends) - 1)


def bound_executor(model, spec, inputs, batch, fused):
    """A bound training executor of the network and the positions of every batch of ``inputs`` (re-indexed as
    SparseBatch does in training)."""
    import sparkps.nets as nets
    from sparkps.kvstore.local import LocalKVStore
    from sparkps.train.sparse_batch import SparseBatch
    net = nets.build(model, spec, fused=fused)
    shapes = dict(spec.input_shapes(batch), ctr_label=(batch, 1))
    sparse = SparseBatch.for_symbol(net, shapes)
    exe = net.simple_bind("cpu", grad_req={n: "null" if n in shapes else "write" for n in net.list_arguments()},
                          **shapes, **sparse.table_shapes)
    rng = np.random.default_rng(0)
    for name in net.list_arguments():
        if name not in shapes and name not in sparse.tables:
            exe.arg_dict[name][...] = rng.normal(0, 0.05, exe.arg_dict[name].shape)
    kv = LocalKVStore()
    sparse.attach(exe)
    sparse.init_tables(kv)
    rows = next(iter(inputs.values())).shape[0]
    feeds, parts = [], []
    for start in range(0, rows - batch + 1, batch):
        part = {k: v[start:start + batch] for k, v in inputs.items()}
        feed = sparse.pull(kv, part)
        feed["ctr_label"] = (rng.random((batch, 1)) < 0.3).astype(np.float32)
        feeds.append({k: np.array(v) for k, v in feed.items()})
        parts.append((part, feed["ctr_label"]))
    return exe, sparse, feeds, parts


class DroppingStore:
    """Takes a worker's row gradients and drops them (the servers' side of a step is not measured here)."""

    def push(self, key, value):
        pass


def executor_step(exe, sparse, feeds, parts):
    """Seconds per forward + backward over ``feeds``."""
    start = time.perf_counter()
    for feed in feeds:
        exe.forward(is_train=True, **feed)
        exe.backward()
    return (time.perf_counter() - start) / len(feeds)


def worker_step(exe, sparse, feeds, parts):
    """Seconds per worker step (re-index, forward, backward, row gradients out, metric update) over ``parts``."""
    from sparkps.metric import AUC
    store, metric = DroppingStore(), AUC()
    start = time.perf_counter()
    for part, label in parts:
        local = sparse.pull(store, part, exchange=lambda rows: None)
        exe.forward(is_train=True, ctr_label=label, **local)
        exe.backward()
        sparse.push(store)
        metric.update([label], exe.outputs)
    return (time.perf_counter() - start) / len(parts)


def torch_deepfm_step(ids, numeric, labels, case, threads):
    """Seconds per training step of a PyTorch DeepFM (None when torch is not importable)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    _, index = np.unique(ids.view(np.int64), return_inverse=True)
    index = torch.from_numpy(index.reshape(ids.shape).astype(np.int64))
    vocab, fields, dim, batch = int(index.max()) + 1, ids.shape[1], case["dim"], case["batch"]

    class DeepFM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = torch.nn.Embedding(vocab, dim)
            self.linear = torch.nn.Embedding(vocab, 1)
            self.dense = torch.nn.Linear(numeric.shape[1] + 1, 1)
            layers, width = [], fields * dim + numeric.shape[1]
            for units in case["hidden"]:
                layers += [torch.nn.Linear(width, units), torch.nn.ReLU()]
                width = units
            self.mlp = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))

        def forward(self, x, z):
            e = self.embedding(x)
            total = e.sum(dim=1)
            fm = 0.5 * (total * total - (e * e).sum(dim=1)).sum(dim=1, keepdim=True)
            linear = self.dense(torch.cat([self.linear(x).sum(dim=1), z], dim=1))
            return linear + fm + self.mlp(torch.cat([e.flatten(1), z], dim=1))

    model = DeepFM()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    z_all, y_all = torch.from_numpy(numeric), torch.from_numpy(labels.reshape(-1, 1))
    batches = [(index[s:s + batch], z_all[s:s + batch], y_all[s:s + batch])
               for s in range(0, ids.shape[0] - batch + 1, batch)]

    def step(x, z, y):
        opt.zero_grad()
        loss = loss_fn(model(x, z), y)
        loss.backward()
        opt.step()

    step(*batches[0])
    start = time.perf_counter()
    for item in batches:
        step(*item)
    return (time.perf_counter() - start) / len(batches)


def measure(model, args):
    case = CASES[model]
    rows = case["batch"] * case["steps"]
    ids, numeric, labels, data = planted(rows, args.vocab)
    spec = spec_of(data, case)
    inputs = spec.inputs(ids, numeric)
    batch = case["batch"]
    executors = {fused: bound_executor(model, spec, inputs, batch, fused) for fused in (True, False)}
    for fused in (True, False):          # compile (or load) the kernels, warm the caches
        worker_step(*executors[fused])
        training_step(model, spec, {k: v[:4 * batch] for k, v in inputs.items()}, labels[:4 * batch], batch, fused)
    times = {"%s %s" % (key, name): [] for key in ("worker", "exe", "train") for name in ("fused", "plain")}
    times["torch"] = []
    for _ in range(args.repeats):
        for fused, name in ((True, "fused"), (False, "plain")):
            times["worker " + name].append(worker_step(*executors[fused]))
            times["exe " + name].append(executor_step(*executors[fused]))
            times["train " + name].append(training_step(model, spec, inputs, labels, batch, fused))
        if model == "deepfm":
            elapsed = torch_deepfm_step(ids, numeric, labels, case, args.threads)
            if elapsed is not None:
                times["torch"].append(elapsed)
    return times


def rates_of(model, times):
    """(samples/s of each contender: batch / median step time, median per-round speed-up plain / fused) of one
    model's step times."""
    batch = CASES[model]["batch"]
    return {key: batch / statistics.median(values) for key, values in times.items() if values}, \
        {key: statistics.median(a / b for a, b in zip(times[key.replace("fused", "plain")], times[key]))
         for key in ("worker fused", "exe fused", "train fused")}


SECTIONS = ("fused_step",)


def render(run):
    """The section of a run record (pure function of it): every round's step times are in it."""
    return markdown(run["data"], argparse.Namespace(**run["data"]["options"]), run["command"])[0]


def main(args):
    run = report.Run("bench_fused_step")
    data = {"options": report.options(args), "torch": None, "times": {}}
    for model in args.models.split(","):
        data["times"][model] = measure(model, args)
        print(model, {key: "%.0f" % rate for key, rate in rates_of(model, data["times"][model])[0].items()},
              flush=True)
    try:
        import torch
        data["torch"] = torch.__version__
    except ImportError:
        pass
    print(run.publish(args, "fused_step", data, render))
    report.save_json(args, "bench_fused_step", markdown(data, args, run.command)[1])


def markdown(data, args, command):
    """(the section's markdown, the run's figures for ``--json``) of a run's data."""
    lines = ["One process, %d thread(s), planted Criteo-shaped data (26 fields of %d values, 13 numeric columns). "
             "Samples/s = batch / median step time of %d interleaved rounds; speed-up = median over rounds of "
             "plain / fused step time." % (args.threads, args.vocab, args.repeats), "",
             "| model (batch) | step | fused (samples/s) | plain (samples/s) | speed-up | PyTorch CPU (samples/s) |",
             "|---|---|---|---|---|---|"]
    figures = {}
    for model, times in data["times"].items():
        rates, speedups = rates_of(model, times)
        torch_rate = rates.get("torch")
        for step, key in (("worker step", "worker"), ("executor forward + backward", "exe"),
                          ("training step, local store", "train")):
            torch_cell = "%.0f" % torch_rate if torch_rate and key == "worker" else "—"
            lines.append("| %s (%d) | %s | %.0f | %.0f | %.2f× | %s |" % (
                model, CASES[model]["batch"], step, rates[key + " fused"], rates[key + " plain"],
                speedups[key + " fused"], torch_cell))
            figures["%s %s fused" % (model, key)] = report.higher(rates[key + " fused"], "samples/s")
            figures["%s %s plain" % (model, key)] = report.higher(rates[key + " plain"], "samples/s")
            figures["%s %s speed-up" % (model, key)] = report.higher(speedups[key + " fused"], "x")
        if torch_rate:
            figures["%s torch" % model] = report.higher(torch_rate, "samples/s")
            figures["%s fused/torch" % model] = report.higher(rates["worker fused"] / torch_rate, "x")
    if data["torch"]:
        note = "PyTorch %s: the same DeepFM (one dense embedding table, Adam, BCE) at batch 2048." % data["torch"]
    else:
        note = "PyTorch was not importable in this run: its column is empty."
    lines += ["", "FM: embedding 8; DeepFM: embedding 16, MLP 400-400-400. " + note + " Worker step: what a worker "
              "computes in a step besides its requests to the servers (the batch-local re-index, forward, backward, "
              "the row gradients handed out, the AUC update). Executor: forward + backward alone. Training step, "
              "local store: FeedForward.fit in one process, the local tables' row lookups and Adam included. Both "
              "columns share the compiled re-index; they differ in the graph (fused ops, or the plain ones of "
              "`build(..., fused=False)`).", "",
              "Command: `%s`" % command]
    return "\n".join(lines), figures


if __name__ == "__main__":
    main(ARGS)
