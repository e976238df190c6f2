"""The generated-CTR part of benchmarks.bench_strategies: time to a target test AUC per strategy, one worker slowed 2x.

Data: ``planted_ctr`` (sparkps/ctr/synthetic.py) with a planted FM (8 categorical fields, vocabulary
200 per field, Zipf 1.2, no numeric columns, seed 11): ``--ctr-rows`` training rows and 10,000 test rows, hashed
into 64-bit ids by ``hash_fields``. Every worker regenerates the same rows (same seed) and trains on rows
``rank::workers``. Two models:

- ``fm (sparse)``: the zoo's ``fm`` over its sparse tables (``contrib.HashEmbedding``; rows live on the servers,
  a batch pulls its rows). Strategies that train on the servers: dist_sync, dist_async, dist_sync_replicas.
  Model averaging and EASGD train on the workers' own weights and refuse sparse tables.
- ``fm (dense)``: the same FM over a dense ``Embedding`` of ``id mod 2^14`` buckets (one shared table of
  16,384 x (4 + 1) weights, every step pushes all of it), so that every strategy, model averaging and EASGD
  included, trains it.

Adam (learning rate 0.02), batch 256 per worker, one server; the last rank sleeps as long as each of its steps
took. Rank 0 scores the test rows at each epoch end (for the sparse model with the servers' rows of the test ids:
``FeedForward.keep_rows_for``; for the local strategies its local weights); *final* is the model fit returns.
"""
import time

import numpy as np

FIELDS, VOCAB, TEST_ROWS, SEED = 8, 200, 10_000, 11
BUCKETS, FACTORS = 1 << 14, 4
SPARSE_STRATEGIES = ("dist_sync", "dist_async", "dist_sync_replicas")
ALL_STRATEGIES = SPARSE_STRATEGIES + ("dist_model_average", "dist_easgd")
LOCAL_OPTIONS = {"dist_model_average": {"interval_steps": 4}, "dist_easgd": {"communication_period": 4}}


def ctr_data(rows):
    """(train ids, train labels, test ids, test labels, planted test AUC): hashed uint64 ids (rows, FIELDS)."""
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.synthetic import planted_ctr
    from sparkps.metric.ctr import binary_auc
    data = planted_ctr(rows + TEST_ROWS, num_fields=FIELDS, num_numeric=0, vocab=VOCAB, zipf=1.2, deep_scale=0.0,
                       seed=SEED)
    ids = hash_fields(data.fields, [data.categorical[:, j] for j in range(FIELDS)])
    planted = binary_auc(data.labels[rows:], data.probability[rows:])
    return ids[:rows], data.labels[:rows], ids[rows:], data.labels[rows:], planted


def dense_fm():
    """FM over dense bucketed embeddings: logit = bias + sum_f w[b_f] + 0.5 (|sum_f v[b_f]|^2 - sum_f |v[b_f]|^2)."""
    import sparkps as sp
    sym = sp.sym
    ids = sym.Variable("buckets")
    factors = sym.Embedding(ids, input_dim=BUCKETS, output_dim=FACTORS, name="v")
    linear = sym.Embedding(ids, input_dim=BUCKETS, output_dim=1, name="w")
    total = sym.sum(factors, axis=1)
    pairs = 0.5 * (sym.sum(total * total, axis=1) - sym.sum(sym.sum(factors * factors, axis=2), axis=1))
    logit = sym.Reshape(sym.sum(sym.Flatten(linear), axis=1) + pairs, shape=(-1, 1))
    return sym.LogisticRegressionOutput(sym.FullyConnected(logit, num_hidden=1, name="bias"), name="ctr")


def model_inputs(kind, ids):
    """(network, named inputs of ``ids``, label name) of model ``kind`` ('sparse' or 'dense')."""
    import sparkps.nets as nets
    from sparkps.ctr.features import LABEL
    if kind == "dense":
        return dense_fm(), {"buckets": (ids % np.uint64(BUCKETS)).astype(np.float32)}, "ctr_label"
    spec = nets.FeatureSpec(categorical=["c%d" % f for f in range(FIELDS)], embedding_dim=FACTORS)
    return nets.build("fm", spec), spec.inputs(ids), LABEL


def ctr_worker_main(job, results):
    """One worker process: train its shard and put what rank 0 saw on ``results``."""
    from sparkps import kvstore
    from sparkps.io.iterators import NDArrayIter
    from sparkps.metric.ctr import binary_auc
    from sparkps.nets.blocks import ctr_initializer
    from sparkps.train.feedforward import FeedForward
    kv = kvstore.create(job["kvtype"], scheduler_uri=job["uri"], secret=job["secret"], **job["options"])
    rank, workers = kv.rank, kv.num_workers
    train_ids, train_labels, test_ids, test_labels, _ = ctr_data(job["rows"])
    symbol, inputs, label = model_inputs(job["model"], train_ids[rank::workers])
    _, test, _ = model_inputs(job["model"], test_ids)
    model = FeedForward(symbol, num_epoch=job["epochs"], optimizer="adam", learning_rate=0.02,
                        initializer=ctr_initializer(), seed=0)
    if rank == 0 and job["model"] == "sparse":
        model.keep_rows_for(test)
    start, last, curve = time.perf_counter(), [None], []
    slow = rank == workers - 1

    def slow_down(_):
        now = time.perf_counter()
        if slow and last[0] is not None:    # the first step is not slowed: the time before it includes init
            time.sleep(now - last[0])
        last[0] = time.perf_counter()

    def auc():
        p = np.asarray(model.predict(NDArrayIter(test, None, batch_size=4096))).reshape(-1)
        return binary_auc(test_labels, p)

    def score(*_):
        curve.append((time.perf_counter() - start, auc()))

    data = NDArrayIter(inputs, {label: train_labels[rank::workers]}, batch_size=256, shuffle=True, seed=rank)
    model.fit(data, eval_metric="auc", kvstore=kv, batch_end_callback=slow_down,
              epoch_end_callback=score if rank == 0 else None)
    elapsed = time.perf_counter() - start
    results.put({"rank": rank, "curve": curve, "final": auc() if rank == 0 else None, "seconds": elapsed})
    kv.close()


def bench_ctr_strategies(run_job, time_to, worker_counts, rows, epochs, target):
    """Rows of the CTR table. bench_strategies passes its own ``run_job(main, job, workers)`` (runs one cluster)
    and ``time_to(curve, target)``, so this module imports nothing from it."""
    out_rows = []
    for workers in worker_counts:
        for model, strategies in (("sparse", SPARSE_STRATEGIES), ("dense", ALL_STRATEGIES)):
            for kvtype in strategies:
                options = {"replicas_to_aggregate": workers - 1} if kvtype == "dist_sync_replicas" else \
                    dict(LOCAL_OPTIONS.get(kvtype, {}))
                job = {"kvtype": kvtype, "options": options, "model": model, "rows": rows, "epochs": epochs}
                first = run_job(ctr_worker_main, job, workers)[0]
                out_rows.append({"workers": workers, "model": model, "kvtype": kvtype, "options": options,
                                 "time_to_target": time_to(first["curve"], target), "seconds": first["seconds"],
                                 "curve": [auc for _, auc in first["curve"]], "final": first["final"]})
                print(out_rows[-1], flush=True)
    return out_rows


def report_ctr(rows, args, planted):
    fmt = lambda v: "not reached" if v is None else "%.1f s" % v  # noqa: E731
    lines = ["", "### Generated CTR data", "",
             "Planted FM clicks (`planted_ctr`, %d fields, vocabulary %d, seed %d): %d training rows, %d test rows; "
             "the planted model's test AUC is %.4f. `fm (sparse)`: the zoo's FM over sparse tables (dist_model_average "
             "and dist_easgd refuse sparse tables); `fm (dense)`: the same FM over a dense embedding of 2^14 id "
             "buckets, for every strategy. Adam 0.02, batch 256 per worker, %d epochs, 1 server, the last rank "
             "slowed 2x. *AUC per epoch*: rank 0's test AUC at its epoch ends; *final*: the model fit returns."
             % (FIELDS, VOCAB, SEED, args.ctr_rows, TEST_ROWS, planted, args.ctr_epochs), "",
             "| workers | model | strategy | options | time to AUC %.2f | fit time (rank 0) | AUC per epoch "
             "| final AUC |" % args.ctr_target, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        opts = ", ".join("%s=%s" % kv for kv in r["options"].items()) or "-"
        lines.append("| %d | fm (%s) | %s | %s | %s | %.1f s | %s | %.4f |"
                     % (r["workers"], r["model"], r["kvtype"], opts, fmt(r["time_to_target"]), r["seconds"],
                        " ".join("%.3f" % a for a in r["curve"]), r["final"]))
    return lines
