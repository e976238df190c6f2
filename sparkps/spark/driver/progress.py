"""The driver's view of training: a progress bar on a terminal, log lines otherwise.

``summarize`` turns the scheduler's per-worker progress into one line of numbers (a pure function);
``ProgressView`` shows it, throttled, and never blocks.
"""
import logging
import sys
import time

LOG = logging.getLogger("sparkps.spark")


def summarize(progress, num_workers):
    """Combine ``scheduler.status()["progress"]`` into {epoch, step, samples, metrics, workers, stopped}.

    epoch is the slowest worker's epoch, step and samples are sums over workers, metrics are averaged over
    the workers that reported them; stopped is True once every worker reported that early stopping ended
    training at its epoch.  Missing or odd entries are skipped, never raised on.
    """
    entries = [entry for entry in (progress or {}).values() if isinstance(entry, dict)]
    metrics = {}
    for entry in entries:
        for name, value in (entry.get("metrics") or {}).items():
            if isinstance(value, (int, float)):
                metrics.setdefault(name, []).append(float(value))
    epochs = [int(entry.get("epoch", 0) or 0) for entry in entries]
    return {
        "epoch": min(epochs) if len(epochs) == num_workers else 0,
        "step": sum(int(entry.get("nbatch", 0) or 0) for entry in entries),
        "samples": sum(int(entry.get("samples", 0) or 0) for entry in entries),
        "metrics": {name: sum(values) / len(values) for name, values in metrics.items()},
        "workers": len(entries),
        "stopped": len(entries) == num_workers and all(entry.get("stopped") is True for entry in entries),
    }


def format_summary(summary, num_epoch, samples_per_s):
    """One human line, e.g. ``epoch 2/10 step 140 accuracy=0.912 1830 samples/s``; after early stopping
    ``epoch 6/10 (stopped early) ...``."""
    parts = ["epoch %d/%d" % (min(summary["epoch"] + 1, num_epoch), num_epoch)]
    if summary.get("stopped"):
        parts.append("(stopped early)")
    if summary["step"]:
        parts.append("step %d" % summary["step"])
    parts += ["%s=%.4f" % (name, value) for name, value in sorted(summary["metrics"].items())]
    if samples_per_s:
        parts.append("%.0f samples/s" % samples_per_s)
    return " ".join(parts)


class ProgressView:
    """Shows training progress from scheduler status snapshots.

    On a terminal (or ``bar=True``) a tqdm bar counts epochs with the metrics as its postfix; otherwise a
    line is written at each new epoch or every ``log_every`` seconds: to ``stream`` when given, else to the
    ``sparkps.spark`` logger when logging is configured, else to stderr.  ``update`` and ``close`` never block.
    ``clock`` (seconds, default ``time.monotonic``) times the rates; tests pass their own.
    """

    def __init__(self, num_epoch, num_workers, bar=None, log_every=5.0, stream=None, clock=time.monotonic,
                 num_servers=None):
        self.num_epoch, self.num_workers, self.num_servers = num_epoch, num_workers, num_servers
        self._stage_started, self._registered = None, False
        self._clock = clock
        self.log_every = log_every
        self._log = stream is None          # lines go to logging when it is set up, unless a stream is given
        stream = stream or sys.stderr
        self._stream = stream
        if bar is None:
            bar = hasattr(stream, "isatty") and stream.isatty()
        self._bar = None
        if bar:
            from tqdm import tqdm
            self._bar = tqdm(total=num_epoch, desc="sparkps", unit="epoch", file=stream, leave=True)
        self._last_log, self._logged = 0.0, None
        self._seen, self._last_time = {}, clock()
        self.samples_per_s = 0.0
        self.last = None

    def stage_started(self):
        """Say at once that the training stage started (before any worker can report: its tasks start Python,
        the servers and the rows' reading first); the snapshot in which every role registered is said too, unless
        a worker already reported training. Never blocks."""
        self._stage_started, self._registered = self._clock(), False
        self.note("training stage started: %s starting" % self._roles())

    def _roles(self):
        roles = "%d worker%s" % (self.num_workers, "" if self.num_workers == 1 else "s")
        if self.num_servers is not None:
            roles += " and %d server%s" % (self.num_servers, "" if self.num_servers == 1 else "s")
        return roles

    def _all_registered(self, status):
        nodes = [node for node in status.get("nodes") or [] if isinstance(node, dict)]
        workers = sum(1 for node in nodes if node.get("role") == "worker")
        servers = sum(1 for node in nodes if node.get("role") == "server")
        return workers >= self.num_workers and (self.num_servers is None or servers >= self.num_servers)

    def update(self, status):
        """Take one ``scheduler.status()`` snapshot."""
        summary = summarize(status.get("progress"), self.num_workers)
        now = self._clock()
        if self._stage_started is not None and not self._registered and self._all_registered(status):
            self._registered = True          # said only while no worker has reported training yet
            if not summary["workers"]:
                self.note("%s registered after %.1f s; reading rows" % (self._roles(), now - self._stage_started))
        first = not self._seen
        new_samples = self._new_samples(status.get("progress") or {})
        if first:
            self._last_time = now          # the rate starts at the first report, not at launch
        elif new_samples and now > self._last_time:
            self.samples_per_s = new_samples / (now - self._last_time)
            self._last_time = now
        self.last = summary
        if self._bar is not None:
            self._bar.n = min(summary["epoch"] + (1 if summary["stopped"] else 0), self.num_epoch)
            postfix = {name: "%.4f" % value for name, value in summary["metrics"].items()}
            if summary["stopped"]:
                postfix["stopped"] = "early"
            postfix.update(step=summary["step"], samples_s="%.0f" % self.samples_per_s)
            self._bar.set_postfix(postfix, refresh=True)
        elif summary["workers"] and (now - self._last_log >= self.log_every
                                     or self._shown(summary) != self._logged):
            self._last_log, self._logged = now, self._shown(summary)
            self._say(format_summary(summary, self.num_epoch, self.samples_per_s))

    def note(self, line):
        """Show one line about the fit (e.g. a restart) beside the progress; never blocks."""
        if self._bar is not None:
            self._bar.write("sparkps: " + line, file=self._stream)
        else:
            self._say(line)

    def history(self, entries):
        """Show a finished fit's per-epoch history (``merge_histories``' entries), one line an epoch: what a fit
        whose scheduler ran inside the stage shows instead of live progress. Never blocks."""
        for entry in entries:
            metrics = " ".join("%s=%.4f" % (k, v) for k, v in sorted(entry.items()) if k != "epoch")
            self._say("epoch %d/%d %s" % (int(entry["epoch"]) + 1, self.num_epoch, metrics))

    def _say(self, line):
        if self._log and LOG.hasHandlers():
            LOG.info(line)
        else:
            print("sparkps: " + line, file=self._stream, flush=True)

    def _new_samples(self, progress):
        """Samples trained since the last snapshot.  Workers report per-epoch counts, and several short
        epochs may pass between snapshots: those count as full epochs (the largest count seen)."""
        new = 0
        for rank, entry in progress.items():
            if not isinstance(entry, dict):
                continue
            epoch, samples = int(entry.get("epoch", 0) or 0), int(entry.get("samples", 0) or 0)
            last_epoch, last_samples, full = self._seen.get(rank, (epoch, 0, 0))
            if epoch == last_epoch:
                new += max(samples - last_samples, 0)
            else:
                new += max(full - last_samples, 0) + max(epoch - last_epoch - 1, 0) * full + samples
            self._seen[rank] = (epoch, samples, max(full, samples))
        return new

    @staticmethod
    def _shown(summary):
        """What a logged line stands for: the epoch, and whether training stopped there."""
        return summary["epoch"], bool(summary.get("stopped"))

    def close(self, finished=False):
        """Close the bar (filled when ``finished``, up to the epoch early stopping ended at); without a bar, log
        the last snapshot once more."""
        if self._bar is None and finished and self.last and self.last["workers"]:
            if self._shown(self.last) != self._logged:
                self._say(format_summary(self.last, self.num_epoch, self.samples_per_s))
        if self._bar is not None:
            if finished:
                stopped = self.last is not None and self.last.get("stopped")
                self._bar.n = min(self.last["epoch"] + 1, self.num_epoch) if stopped else self.num_epoch
                self._bar.refresh()
            self._bar.close()
            self._bar = None
