"""A CTR model whose tables outgrow one process: fit, save, reload and score at 1M, 4M and 16M distinct ids x dim 16.

    python -m benchmarks.bench_big_table [--ids 1000000 4000000 16000000] [--write-docs]

The data: a generated CTR set with a realistic vocabulary. 26 categorical fields (C1..C26, int64 values); field
``f``'s value of a row is a Zipf rank ``r ~ Zipf(s=1.05)`` over ``VOCAB_PER_FIELD`` = 2,000,000 possible values per
field (52M possible ids in all: a few values carry most rows, a long tail is seen once or never, as in Criteo's
logs), i.e. ``(r - 1) % VOCAB_PER_FIELD``. Rows are drawn in blocks of ``BLOCK_ROWS`` until the distinct (field,
value) pairs reach the ``--ids`` target; the rows needed grow faster than the ids (the tail fills slowly). The click
is Bernoulli(sigmoid(-1 + sum of the fields' planted weights)), a field value's weight a pure function of (field,
value) (splitmix64 of both, mapped to [-0.5, 0.5)), so no table of weights is held. Same seed, same data.

For each size: ``SparkpsCTRClassifier(model="fm", embeddingDim=16, numWorkers=2, numServers=2, numEpochs=1,
validationFraction=0, batchSize=1024, optimizer="adam")`` fits on local[2]; the model is saved, loaded back and
scores every row (``transform``, a sum of the probabilities forces it). Reported: fit time, save time, reload
time, scoring rows/s of the join path (the sharded tables, docs/tables.md) and, where the tables fit
``max_broadcast_bytes``, of the inline path beside it (the same model with its tables read into memory); the
driver's RSS growth (this Python process) from after the data are written to after the join path scored (the
inline copy, which reads the tables into the driver on purpose, comes after), each Python worker's and each
server's peak RSS (sampled every 0.2 s from /proc, processes below this one only), and each server's peak beside
``sparkps plan``'s figure for its share of the tables (``sparkps.plan.figures.estimate`` with the FM's linear table
and the shard write at the fit's end: ``sparkps plan --linear --write-tables``).

Needs the fit path that writes each server's shard at the end of a fit (SparkModel format 4 with ``tables``); with a
fit that returns inline tables it reports them as inline and scores the inline path only.
"""
import argparse
import os
import shutil
import tempfile
import threading
import time

import numpy as np

from benchmarks import report
from benchmarks.process_memory import command_line, rss_of

FIELDS = 26
VOCAB_PER_FIELD = 2_000_000
ZIPF = 1.05
BLOCK_ROWS = 200_000
DIM = 16
SIZES = (1_000_000, 4_000_000, 16_000_000)
FLOORS = []          # the sizes measured with --floor only: their data's generation, not a fit


def _mix64(x):
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def generate(distinct_ids, seed=0):
    """(values int64 (rows, FIELDS), clicks float64 (rows,)) of the generated set (see the module docstring) with at
    least ``distinct_ids`` distinct (field, value) pairs."""
    rng = np.random.default_rng(seed)
    blocks, seen = [], np.empty(0, np.int64)
    offsets = np.arange(FIELDS, dtype=np.int64) * VOCAB_PER_FIELD
    while seen.size < distinct_ids:
        values = (rng.zipf(ZIPF, (BLOCK_ROWS, FIELDS)).astype(np.int64) - 1) % VOCAB_PER_FIELD
        seen = np.union1d(seen, (values + offsets).reshape(-1))
        blocks.append(values)
    values = np.concatenate(blocks)
    with np.errstate(over="ignore"):
        bits = _mix64((values + offsets).astype(np.uint64) + np.uint64(seed))
    weights = (bits >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 - 0.5
    p = 1.0 / (1.0 + np.exp(-(-1.0 + weights.sum(axis=1))))
    return values, (rng.random(len(values)) < p).astype(np.float64)


def _parents():
    """{pid: parent pid} of every process now running (from /proc/PID/stat)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name, "rb") as f:
                    stat = f.read()
            except OSError:
                continue
            parents[int(name)] = int(stat[stat.rindex(b")") + 2:].split()[1])
    return parents


def descendants(root):
    """The pids of every process below ``root`` (children, their children, ...)."""
    children = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


class PeakSampler:
    """Peak RSS of every server (``-m sparkps.server``) and Python worker (``pyspark``) process below this one (the
    benchmark's own Spark and its parameter servers, no other process of the machine) in each phase, sampled every
    ``interval`` s on a thread from ``start`` to ``stop``; ``phase(name)`` starts a phase (a Python worker that Spark
    reuses from one phase to the next counts in each, with what it held when the phase began). ``peaks``:
    {(phase, kind, pid): bytes}; ``trace``: [(seconds since start, phase, pid, bytes, memory_kinds)] of the
    servers, one a second."""

    def __init__(self, interval=0.2):
        self.interval, self.peaks, self.trace, self._stop = interval, {}, [], threading.Event()
        self._phase, self._start, self._traced = "fit", time.monotonic(), {}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def phase(self, name):
        self._phase = name

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peaks

    def _run(self):
        while not self._stop.is_set():
            phase = self._phase
            for pid in descendants(os.getpid()):
                argv = command_line(pid)
                if not argv or b"python" not in os.path.basename(argv[0]):
                    continue     # the JVM (its class path names pyspark too)
                cmd = b" ".join(argv).decode("utf-8", "replace")
                kind = "server" if "sparkps.server" in cmd else "python worker" if "pyspark" in cmd else None
                if kind:
                    key, rss = (phase, kind, pid), rss_of(pid)
                    self.peaks[key] = max(self.peaks.get(key, 0), rss)
                    now = time.monotonic() - self._start
                    if kind == "server" and now - self._traced.get(pid, -1.0) >= 1.0:
                        self._traced[pid] = now
                        self.trace.append((now, phase, pid, rss, memory_kinds(pid)))
            self._stop.wait(self.interval)

    def of(self, phase, kind):
        """The peaks of ``kind`` processes in ``phase``, sorted."""
        return sorted(v for (p, k, _), v in self.peaks.items() if p == phase and k == kind and v)


def inline_copy(spark_model):
    """The model with its shard files' rows read into ``arg_params`` (the inline path), or None when they exceed
    its ``max_broadcast_bytes``."""
    from sparkps.rows.shards import iter_shard_rows
    from sparkps.rows.values import RowSparse
    from sparkps.spark.model.spark_model import SparkModel
    manifest = spark_model.table_manifest or {}
    size = sum(entry["rows"] * (entry["dim"] * 4 + 8) for entry in manifest.values())
    if spark_model.max_broadcast_bytes is not None and size > spark_model.max_broadcast_bytes:
        return None
    params = dict(spark_model.arg_params)
    for name, entry in manifest.items():
        parts = list(iter_shard_rows(spark_model.tables_folder, name))
        ids = np.concatenate([p[0] for p in parts]).view(np.int64)
        params[name] = RowSparse(ids, np.concatenate([p[1] for p in parts]), (None, entry["dim"]))
    model = SparkModel(spark_model.symbol_json, params, spark_model.aux_params, spark_model.input_shape,
                       spark_model.label_name, spark_model.batch_size, spark_model.epoch,
                       input_layout=spark_model.input_layout)
    model.table_counts = spark_model.table_counts
    return model


def scoring_rate(model, frame, rows):
    """Rows/s of scoring ``frame`` (``rows`` rows) with the pyspark.ml model ``model`` (the sum of the
    probabilities forces every row)."""
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F
    start = time.perf_counter()
    model.transform(frame).select(F.sum(vector_to_array("probability")[1])).collect()
    return rows / (time.perf_counter() - start)


def run_size(spark, ids, folder):
    """The figures of one size (see the module docstring)."""
    from sparkps.plan.figures import estimate
    from sparkps.spark.ml import SparkpsCTRClassifier, SparkpsCTRModel
    values, clicks = generate(ids)
    columns = ["C%d" % (f + 1) for f in range(FIELDS)]
    data_path = os.path.join(folder, "data.parquet")
    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"click": clicks, **{c: values[:, k] for k, c in enumerate(columns)}}), data_path)
    rows = len(clicks)
    del values, clicks
    frame = spark.read.parquet(data_path)
    driver_before = rss_of(os.getpid())       # after the data are written: the driver's growth is the fit's
    sampler = PeakSampler().start()
    clf = SparkpsCTRClassifier(labelCol="click", categoricalCols=columns, model="fm", embeddingDim=DIM,
                               numWorkers=2, numServers=2, numEpochs=1, validationFraction=0.0, batchSize=1024,
                               optimizer="adam")
    start = time.perf_counter()
    model = clf.fit(frame)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    model.write().overwrite().save(os.path.join(folder, "model"))
    save_s = time.perf_counter() - start
    start = time.perf_counter()
    loaded = SparkpsCTRModel.load(os.path.join(folder, "model"))
    load_s = time.perf_counter() - start
    sharded = bool(loaded.spark_model.table_manifest)
    sampler.phase("join")
    join_rate = scoring_rate(loaded, frame, rows) if sharded else None
    driver_growth = rss_of(os.getpid()) - driver_before    # fit, save, reload and the join path's scoring
    inline_rate = None
    inline = inline_copy(loaded.spark_model) if sharded else loaded.spark_model
    if inline is not None:
        other = loaded.copy()
        other.spark_model = inline
        sampler.phase("inline")
        inline_rate = scoring_rate(other, frame, rows)
    sampler.stop()
    print_server_trace(sampler.trace)
    at_peak = max(sampler.trace, key=lambda entry: entry[3])[4] if sampler.trace else {}
    plan_tables = estimate(2, 2, ids, dim=DIM, optimizer="adam", linear=True).server_table["total"]
    planned = estimate(2, 2, ids, dim=DIM, fields=FIELDS, batch=1024, optimizer="adam", linear=True,
                       write_tables=True).server_memory
    return {"ids": ids, "rows": rows, "sharded": sharded, "fit_s": fit_s, "save_s": save_s, "load_s": load_s,
            "join_rows_per_s": join_rate, "inline_rows_per_s": inline_rate,
            "driver_growth": driver_growth, "server_peaks": sampler.of("fit", "server"),
            "fit_workers": sampler.of("fit", "python worker"), "join_workers": sampler.of("join", "python worker"),
            "inline_workers": sampler.of("inline", "python worker"), "server_at_peak": at_peak,
            "plan_tables": plan_tables, "plan_server": planned}


def memory_kinds(pid):
    """{kind: resident bytes} of process ``pid`` by mapping (/proc/PID/smaps): ``heap`` (malloc's main heap),
    ``arenas`` (malloc's other arenas: anonymous mappings that start on 64 MiB), ``anonymous`` (the other anonymous
    mappings: numpy's large arrays, pyarrow's pool), ``files`` (code and data of the libraries)."""
    kinds, kind = dict.fromkeys(("heap", "arenas", "anonymous", "files"), 0), None
    try:
        with open("/proc/%d/smaps" % pid, encoding="ascii", errors="replace") as f:
            for line in f:
                head = line.split()
                if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                    name = head[5] if len(head) > 5 else ""
                    start, end = (int(x, 16) for x in head[0].split("-"))
                    kind = "heap" if name == "[heap]" else "files" if name.startswith("/") else \
                        "arenas" if start % (64 << 20) == 0 else "anonymous"
                elif head[0] == "Rss:" and kind:
                    kinds[kind] += int(head[1]) * 1024
    except OSError:
        pass
    return kinds


def print_server_trace(trace, every=0.0):
    """Each server's RSS over the fit, one reading a second, on stderr, by kind of mapping (what the server peak
    is made of in time)."""
    import sys
    last = {}
    for t, phase, pid, rss, kinds in trace:
        if t - last.get(pid, -every) >= every:
            last[pid] = t
            print("server %d %6.1f s %-6s %6.0f MB (%s)" % (pid, t, phase, rss / 2**20, ", ".join(
                "%s %.0f" % (k, v / 2**20) for k, v in kinds.items())), file=sys.stderr)


def mb(n):
    return "%.0f MB" % (n / 2**20)


def mbs(values):
    return ", ".join(mb(v) for v in values) or "-"


def rate(value):
    return "n/a" if value is None else "%.0f" % value


SECTIONS = ("bench_big_table",)


def render(run):
    """The section of a run record (pure function of it)."""
    return markdown(run["data"]["results"], run["data"]["floors"], run["data"]["fields"], run["command"])


def markdown(results, floors, fields, command):
    lines = ["## Big tables", "", "Written by `%s`." % command, "",
             "Generated CTR set (26 fields, Zipf(1.05) over 2M values per field, see the script's docstring); "
             "FM, dim 16, 2 workers + 2 servers on local[2], one epoch.", "",
             "Peaks are sampled per phase: the training workers' Python processes while the fit runs, the scoring "
             "UDF's Python workers while the join path scores, and while the inline path scores (it reads the whole "
             "table into each UDF worker on purpose). The driver's growth spans fit, save, reload and join "
             "scoring.", "",
             "| distinct ids | rows | tables | fit | save | reload | join rows/s | inline rows/s | driver RSS growth "
             "| training workers' peak RSS (fit) | UDF workers' peak RSS (join scoring) "
             "| UDF workers' peak RSS (inline scoring) | server peak RSS | plan per server |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append("| %d | %d | %s | %.0f s | %.1f s | %.1f s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["ids"], r["rows"], "sharded" if r["sharded"] else "inline", r["fit_s"], r["save_s"], r["load_s"],
            rate(r["join_rows_per_s"]), rate(r["inline_rows_per_s"]), mb(r["driver_growth"]),
            mbs(r["fit_workers"]), mbs(r["join_workers"]), mbs(r["inline_workers"]), mbs(r["server_peaks"]),
            mb(r["plan_server"])))
    lines.append("")
    for r in results:
        if r.get("server_at_peak"):
            lines.append("- %d ids: the largest server sample (%s) by kind of mapping: %s; the plan's arrays of its "
                         "share of both tables: %s." % (r["ids"], mb(sum(r["server_at_peak"].values())), ", ".join(
                             "%s %s" % (k, mb(v)) for k, v in r["server_at_peak"].items()), mb(r["plan_tables"])))
    for r in floors:
        lines.append("- %d ids: generated only (--floor), not fitted in this run; generating its data alone took "
                     "%.0f s for %d rows (%.1f M id occurrences); the plan puts a server at %s." % (
                         r["ids"], r["generate_s"], r["rows"], r["rows"] * fields / 1e6,
                         mb(r["plan_server"])))
    return "\n".join(lines)


def main(argv=None):
    parser = report.add_output_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--ids", type=int, nargs="+", default=list(SIZES),
                        help="distinct ids of each run (default: 1M, 4M and 16M)")
    parser.add_argument("--floor", type=int, nargs="*", default=[],
                        help="distinct ids of sizes only generated, not fitted (their rows and generation time are "
                             "reported)")
    parser.add_argument("--driver-memory", default="2g")
    args = parser.parse_args(argv)
    run = report.Run("bench_big_table", argv)
    from sparkps.plan.figures import estimate
    for ids in args.floor:
        start = time.perf_counter()
        values, _ = generate(ids)
        FLOORS.append({"ids": ids, "rows": len(values), "generate_s": time.perf_counter() - start,
                       "plan_server": estimate(
                           2, 2, ids, dim=DIM, fields=FIELDS, batch=1024, optimizer="adam", linear=True,
                           write_tables=True).server_memory})
        del values
        print(FLOORS[-1], flush=True)
    spark = report.local_spark("bench_big_table", args.driver_memory)
    results = []
    try:
        for ids in args.ids:
            folder = tempfile.mkdtemp(prefix="sparkps-big-table-")
            try:
                results.append(run_size(spark, ids, folder))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            print(markdown(results, FLOORS, FIELDS, run.command), flush=True)
    finally:
        spark.stop()
    print(run.publish(args, "bench_big_table", {"results": results, "floors": FLOORS, "fields": FIELDS}, render))
    report.save_json(args, "bench_big_table", {"%d_ids_fit_s" % r["ids"]: report.lower(r["fit_s"], "s")
                                               for r in results})


if __name__ == "__main__":
    main()
