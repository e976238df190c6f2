"""What a warm start is worth: day after day, a cold fit on the day's rows against a warm fit from yesterday's model
(``SparkpsCTRClassifier(initialModel=...)``, docs/warm_start.md), both scored on the next day's rows.

    python -m benchmarks.bench_warm_start [--days 5] [--rows 200000] [--quick] [--movielens] [--write-docs]

The planted stream (``drifting_days``): three categorical fields (a user id, a site, an ad). Each day's users are a
window of the user ids that slides by ``--shift`` ids a day (new ids appear, old ones fade out and never come back);
sites and ads are the same every day. A row's click logit is the sum of its ids' weights plus a bias; every day each
weight moves by a normal step of ``--drift`` (the click model moves a little), new users draw fresh weights. Ids
appear with Zipf frequencies, so the tables are past the inline size at full size; every fit keeps its tables as shard
files (``inlineTablesMB=0``), so warm fits load them from shard files.

Per day from the second: the cold fit (``--cold-epochs`` epochs from the initializer), the warm fit (``--warm-epochs``
from yesterday's warm model, the first day's warm model being its cold one) and the warm fit with forgetting
(``forgetAfterSteps`` = the steps of ``--forget-days`` days' fits, from yesterday's forgetting model): each one's AUC on
the next day's rows, fit seconds, epochs, table rows, ids added and dropped, the driver's resident memory after it,
and the ids active in the last ``--forget-days`` days (what the forgetting table should stay near). ``--movielens``
also runs MovieLens 100K (the recbole wheel's files) split by timestamp into ``--days`` periods: real drift.
Targets (issue 43): warm AUC >= cold AUC + 0.005 on days 2-5, warm fit time <= 0.5 x cold, the forgetting table within
1.2 x the ids active in the last N days. ``--quick`` runs 2 small days (a check that it runs, not a measurement).
``--write-docs`` rewrites the section ``warm_start`` of docs/warm_start.md. Blocks for the fits (one local[2]
SparkSession, 2 workers and 2 servers a fit).
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

from benchmarks import report

DOC = os.path.join(report.ROOT, "docs", "warm_start.md")
SECTIONS = ("warm_start", "warm_start_movielens")
FIELDS = ("user", "site", "ad")
SETTINGS = dict(model="fm", embeddingDim=8, batchSize=512, learningRate=0.01, optimizer="adam", numWorkers=2,
                numServers=2, validationFraction=0.0, earlyStoppingPatience=0, inlineTablesMB=0.0, embeddingL2=0.0,
                seed=7)


def drifting_days(days, rows, users=20000, shift=2000, sites=500, ads=2000, drift=0.1, seed=0):
    """``days + 1`` pandas frames (the last only scores the day before it) of the planted stream described above,
    and for each day the set of user ids active on it."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    total_users = users + shift * (days + 1)
    weights = {"user": rng.normal(0, 1.0, total_users), "site": rng.normal(0, 0.7, sites),
               "ad": rng.normal(0, 0.7, ads)}
    frames, active = [], []
    for day in range(days + 1):
        if day:
            for field in FIELDS:
                weights[field] = weights[field] + rng.normal(0, drift, weights[field].size)
        first = day * shift
        ranks = {"user": rng.zipf(1.3, rows) % users, "site": rng.zipf(1.2, rows) % sites,
                 "ad": rng.zipf(1.2, rows) % ads}
        ids = {"user": first + ranks["user"], "site": ranks["site"], "ad": ranks["ad"]}
        logit = sum(weights[f][ids[f]] for f in FIELDS) - 1.0
        clicks = (rng.random(rows) < 1 / (1 + np.exp(-logit))).astype(float)
        frames.append(pd.DataFrame({"click": clicks, **{f: np.char.add(f[0], ids[f].astype(str)) for f in FIELDS}}))
        active.append(set(np.unique(ids["user"]).tolist()))
    return frames, active


def movielens_days(days):
    """MovieLens 100K (rating >= 4 is a click) cut by timestamp into ``days + 1`` periods of equal rows; None when the
    recbole wheel is not installed."""
    from benchmarks.bench_ctr_quality import movielens_ratings
    table = movielens_ratings()
    if table is None:
        return None
    table = table.fillna("none")
    table["click"] = (table["rating"].astype(float) >= 4).astype(float)
    table = table.sort_values("timestamp", key=lambda t: t.astype(float), kind="stable")
    cats = ["user_id", "item_id", "age", "gender", "occupation"]
    return [part[["click"] + cats].reset_index(drop=True) for part in np.array_split(table, days + 1)], cats


def auc(labels, p):
    from sklearn.metrics import roc_auc_score
    return float(roc_auc_score(labels, p))


def scored(model, frame):
    from pyspark.ml.functions import vector_to_array
    out = model.transform(frame).select("click", vector_to_array("probability")[1].alias("p")).toPandas()
    return auc(out["click"].to_numpy(), out["p"].to_numpy())


def driver_rss():
    from benchmarks.process_memory import rss_of
    return rss_of(os.getpid())


def fit(frame, cats, folder, epochs, initial=None, forget=None):
    """(model, seconds, saved path) of one fit, saved into ``folder``."""
    from sparkps.spark.ml.ctr_classifier import SparkpsCTRClassifier
    params = dict(SETTINGS, labelCol="click", categoricalCols=cats, numEpochs=epochs)
    if initial is not None:
        params["initialModel"] = initial
    if forget:
        params["forgetAfterSteps"] = forget
    started = time.perf_counter()
    model = SparkpsCTRClassifier(**params).fit(frame)
    seconds = time.perf_counter() - started
    model.write().save(folder)
    return model, seconds, folder


def record(model, seconds, next_day, epochs):
    ids = model.tableIds.get("embedding_weight", {})
    manifest = model.spark_model.table_manifest or {}
    rows = int(manifest["embedding_weight"]["rows"]) if "embedding_weight" in manifest else None
    return {"auc": scored(model, next_day), "fit_s": seconds, "epochs": epochs, "table_rows": rows,
            "added": ids.get("added"), "kept": ids.get("kept"), "dropped": ids.get("dropped"),
            "driver_rss": driver_rss()}


def stream(spark, frames, cats, args, folder, active=None):
    """The per-day records of one stream: cold, warm and warm-with-forgetting fits."""
    parts = [spark.createDataFrame(f).repartition(2).cache() for f in frames]
    steps = -(-len(frames[0]) // (2 * SETTINGS["batchSize"])) * args.warm_epochs   # a warm fit's steps
    days, warm_path, forget_path = [], None, None
    for day in range(len(frames) - 1):
        today, tomorrow = parts[day], parts[day + 1]
        cold, cold_s, cold_path = fit(today, cats, os.path.join(folder, "cold-%d" % day), args.cold_epochs)
        entry = {"day": day + 1, "cold": record(cold, cold_s, tomorrow, args.cold_epochs)}
        if day == 0:
            warm_path = forget_path = cold_path
        else:
            warm, warm_s, warm_path = fit(today, cats, os.path.join(folder, "warm-%d" % day), args.warm_epochs,
                                          initial=warm_path)
            entry["warm"] = record(warm, warm_s, tomorrow, args.warm_epochs)
            forgets, forget_s, forget_path = fit(today, cats, os.path.join(folder, "forget-%d" % day),
                                                 args.warm_epochs, initial=forget_path,
                                                 forget=steps * args.forget_days)
            entry["forget"] = record(forgets, forget_s, tomorrow, args.warm_epochs)
        if active is not None:
            recent = set().union(*active[max(0, day + 1 - args.forget_days):day + 1])
            entry["active_users"] = len(recent)
        days.append(entry)
        print("day %d: %s" % (day + 1, entry), file=sys.stderr)
    return days


def render(run):
    """The section of a run record (a pure function of it)."""
    data = run["data"]
    options = data["options"]
    lines = ["%s; cold fits %d epochs, warm fits %d from yesterday's model, forgetting after %d days' steps; "
             "SparkpsCTRClassifier(model='fm', embeddingDim=8), 2 workers, 2 servers, tables as shard files; "
             "scored on the next day's rows." % (data["stream"], options["cold_epochs"], options["warm_epochs"],
                                                 options["forget_days"]), "",
             "| day | cold AUC | warm AUC | warm - cold | cold fit s | warm fit s | warm / cold time | warm table rows "
             "| added | dropped | forgetting: AUC, table rows, dropped | users active in the last days | "
             "driver RSS MiB |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for entry in data["days"]:
        cold, warm, forget = entry["cold"], entry.get("warm"), entry.get("forget")
        if warm is None:
            lines.append("| %d | %.4f | (starts from the cold model) | | %.1f | | | %s | | | | %s | %.0f |"
                         % (entry["day"], cold["auc"], cold["fit_s"], cold["table_rows"],
                            entry.get("active_users", ""), cold["driver_rss"] / 2**20))
            continue
        lines.append("| %d | %.4f | %.4f | %+.4f | %.1f | %.1f | %.2f | %s | %s | %s | %.4f, %s, %s | %s | %.0f |"
                     % (entry["day"], cold["auc"], warm["auc"], warm["auc"] - cold["auc"], cold["fit_s"],
                        warm["fit_s"], warm["fit_s"] / cold["fit_s"], warm["table_rows"], warm["added"],
                        warm["dropped"], forget["auc"], forget["table_rows"], forget["dropped"],
                        entry.get("active_users", ""), warm["driver_rss"] / 2**20))
    lines += ["", "Server memory is not in the table: the servers are processes of the fits' barrier stages."]
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_warm_start", description=__doc__.split("\n")[0])
    parser.add_argument("--days", type=int, default=5, help="days of the stream (default 5)")
    parser.add_argument("--rows", type=int, default=200000, help="planted rows a day (default 200000)")
    parser.add_argument("--shift", type=int, default=2000, help="user ids the window slides a day (default 2000)")
    parser.add_argument("--drift", type=float, default=0.1, help="daily step of every weight (default 0.1)")
    parser.add_argument("--cold-epochs", type=int, default=3, help="epochs of a cold fit (default 3)")
    parser.add_argument("--warm-epochs", type=int, default=1, help="epochs of a warm fit (default 1)")
    parser.add_argument("--forget-days", type=int, default=2, help="forget ids unseen for this many days' steps")
    parser.add_argument("--movielens", action="store_true", help="also MovieLens 100K cut by timestamp")
    parser.add_argument("--quick", action="store_true", help="2 days of 3000 rows: a check that it runs")
    report.add_output_args(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.days, args.rows, args.shift = 2, 3000, 500
    if args.days < 2:
        parser.error("--days must be at least 2 (a warm fit needs a day before it)")
    return args


def main(argv=None):
    args = parse_args(argv)
    run = report.Run("bench_warm_start", argv)
    spark = report.local_spark("bench_warm_start", "4g")
    try:
        with tempfile.TemporaryDirectory(prefix="sparkps-warm-bench-") as folder:
            frames, active = drifting_days(args.days, args.rows, shift=args.shift, drift=args.drift)
            days = stream(spark, frames, list(FIELDS), args, os.path.join(folder, "planted"), active)
            data = {"options": report.options(args), "days": days,
                    "stream": "a drifting planted stream of %d days of %d rows" % (args.days, args.rows)}
            print(run.publish(args, "warm_start", data, render, doc=DOC))
            if args.movielens:
                found = movielens_days(args.days)
                if found is None:
                    print("bench_warm_start: recbole is not installed: no MovieLens run", file=sys.stderr)
                else:
                    days = stream(spark, found[0], found[1], args, os.path.join(folder, "movielens"))
                    data = {"options": report.options(args), "days": days,
                            "stream": "MovieLens 100K cut by timestamp into %d periods" % (args.days + 1)}
                    print(run.publish(args, "warm_start_movielens", data, render, doc=DOC))
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
