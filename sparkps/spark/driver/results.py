"""What a fit makes of its barrier tasks' results: the SparkModel (worker 0's weights, the per-epoch history of
every worker, the CTR tables the servers wrote), the merged history and the fit's rows and timings
(``SparkTrainer.last_fit``).

    model = trained_model(trainer, results, point, restarts.entries)
    trainer.last_fit = fit_timings(results, trainer.batch_size)

A task's result is the dict of sparkps.spark.task.barrier_task: rank, rows, history, and for rank 0 the weights.
"""
import logging

from sparkps.errors import ClusterError, ConfigError
from sparkps.spark.model.spark_model import SparkModel
from sparkps.spark.task.validation import STOP_METRICS

LOG = logging.getLogger("sparkps.spark")


def trained_model(trainer, results, point=None, restarts=(), tables_dir=None):
    """The SparkModel of a fit of ``trainer`` (a SparkTrainer): worker 0's weights, the history merged over the
    workers (with the epochs before ``point``, the ResumePoint it resumed from, and the ``restarts`` entries),
    and for named inputs (CTR: ``trainer.inputs``, a TypedInputs, which the model keeps as its ``input_layout``,
    its ``input_shape`` the values of one row) the sparse tables the servers wrote into ``tables_dir`` (worker 0
    returns their manifest): inline up to ``trainer.inline_table_bytes``, else shard files
    (:func:`sparkps.spark.model.table_rows.fit_tables`). ClusterError when worker 0 returned no weights. Blocks on
    reading the shards of small tables."""
    from sparkps.spark.driver.restarts import history_with_restarts
    final = [r for r in results if r.get("params") is not None]
    if not final:
        raise ClusterError("training finished but worker 0 returned no weights")
    history = merge_histories(results)
    if point is not None:    # epochs before the checkpoint this run resumed from: worker 0's record of them
        newer = {h["epoch"] for h in history}
        history = sorted([h for h in point.history if h["epoch"] not in newer] + history, key=lambda h: h["epoch"])
    history = history_with_restarts(history, restarts)
    epochs = history[-1]["epoch"] + 1 if history else trainer.num_epoch
    input_shape = trainer.input_shape if trainer.inputs is None else (trainer.inputs.columns,)
    model = SparkModel.from_bytes(trainer.symbol_json, final[0]["params"], input_shape=input_shape,
                                  label_name=trainer.label_name, batch_size=max(trainer.batch_size, 256),
                                  epoch=epochs, history=history, best_epoch=final[0].get("best_epoch"),
                                  input_layout=trainer.inputs)
    if final[0].get("tables") is not None:   # the servers' shard files, and how often each id was seen
        from sparkps.spark.model.table_rows import fit_tables
        model.table_ids = {name: dict(entry["ids"]) for name, entry in final[0]["tables"].items() if entry.get("ids")}
        fit_tables(model, tables_dir, final[0]["tables"], trainer.inline_table_bytes)
    return model


def fit_timings(results, batch_size):
    """Rows per worker, the longest time a worker spent in FeedForward.fit, and the steady training rate:
    batches after each worker's first, times batch_size, over the span from the earliest first batch end
    to the latest last batch end (so start-up and registration are left out); ``validation_seconds``: the
    slowest worker's seconds at the epoch ends pulling the held-out ids' rows, scoring the held-out rows, and
    waiting for the best epoch's table snapshots (inside the steady span)."""
    ordered = sorted(results, key=lambda r: r["rank"])
    stats = {"rows": [r.get("rows", 0) for r in ordered],
             "fit_seconds": max(r.get("fit_seconds", 0.0) for r in ordered)}
    timed = [r for r in ordered if r.get("first_batch_end") is not None]
    if timed:
        span = max(r["last_batch_end"] for r in timed) - min(r["first_batch_end"] for r in timed)
        batches = sum(r["batches"] - 1 for r in timed)
        stats["steady_seconds"] = span
        stats["first_batch_end"] = min(r["first_batch_end"] for r in timed)
        stats["steady_samples_per_s"] = batches * batch_size / span if span > 0 else None
    validation = [r["validation"] for r in ordered if r.get("validation")]
    if validation:      # the slowest worker's seconds in each part of the epoch ends' validation
        stats["validation_seconds"] = {part: max(v[part] for v in validation) for part in validation[0]}
    ended = [r["first_epoch_end"] for r in ordered if r.get("first_epoch_end") is not None]
    if ended:
        stats["first_epoch_end"] = min(ended)      # wall-clock time the earliest worker ended its first epoch
    return stats


def role_hosts(results, placement, scheduler_host):
    """Where a fit's roles ran: ``{"scheduler": host, "scheduler_on": 'the driver' | "worker 0's task",
    "workers": {rank: host}, "servers": {rank: host}}`` from the tasks' results (each names the host its worker
    and, beside it, its server bound) and the scheduler's placement."""
    ordered = sorted(results, key=lambda r: r["rank"])
    workers = {int(r["rank"]): r.get("host") for r in ordered}
    on_driver = placement == "driver"
    return {"scheduler": scheduler_host if on_driver else workers.get(0),
            "scheduler_on": "the driver" if on_driver else "worker 0's task",
            "workers": workers, "servers": {int(r["rank"]): r.get("host") for r in ordered if r.get("server")}}


def describe_roles(roles):
    """One line saying where the scheduler, each server and each worker ran."""
    def listed(kind, hosts):
        return ", ".join("%s %d on %s" % (kind, rank, host) for rank, host in sorted(hosts.items()))
    return "roles: scheduler on %s (%s); %s; %s" % (roles["scheduler"], roles["scheduler_on"],
                                                    listed("server", roles["servers"]),
                                                    listed("worker", roles["workers"]))


def merge_histories(results):
    """Per-epoch metrics averaged over workers, weighted by their rows: [{'epoch': 0, name: value}, ...].
    Validation metrics are worker 0's alone: its weights are the model's (and early stopping chose its best
    epoch by them), while a worker whose share has more batches ends an epoch at other weights."""
    sums, weights = {}, {}
    for result in results:
        rows = max(int(result.get("rows", 0)), 0)
        for entry in result.get("history", []):
            epoch = int(entry["epoch"])
            for name, value in entry.items():
                if name.startswith("validation-") and result.get("rank") != 0:
                    continue
                if name != "epoch" and rows:
                    sums.setdefault(epoch, {}).setdefault(name, 0.0)
                    sums[epoch][name] += float(value) * rows
                    weights.setdefault(epoch, {}).setdefault(name, 0)
                    weights[epoch][name] += rows
    return [dict({name: total / weights[epoch][name] for name, total in sums[epoch].items()}, epoch=epoch)
            for epoch in sorted(sums)]


def check_stop_metric(metric, patience):
    """The validation metric a CTR fit stops early on ('auc', 'logloss'), None for none; ConfigError naming a bad
    one or a negative patience."""
    if int(patience) < 0:
        raise ConfigError("patience (early stopping) must be >= 0 epochs, got %r" % (patience,))
    if metric is None or metric == "":
        return None
    key = str(metric).strip().lower()
    if key not in STOP_METRICS:
        raise ConfigError("early stopping metric must be one of %s, got %r" % (", ".join(STOP_METRICS), metric))
    return key


def log_early_stop(results):
    """Log worker 0's reason for stopping early, naming the epoch and the metric (a warning on ``sparkps.spark``,
    so it shows without any logging set up); nothing when training ran every epoch."""
    for result in results:
        if result.get("rank") == 0 and result.get("stop_reason"):
            LOG.warning("%s", result["stop_reason"])
