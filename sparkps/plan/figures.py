"""``estimate(...)``: the model's figures for one workload, as an :class:`Estimate` with a text ``table()``.

>>> e = estimate(workers=100, servers=10, rows=1e9, dim=16, batch=4096, fields=26)
>>> e.bottleneck in ('compute', 'worker link', 'server link', 'server cpu', 'server memory')
True
"""
import math
from dataclasses import asdict, dataclass, field

from sparkps.plan import constants as C
from sparkps.plan import model
from sparkps.plan.zipf import expected_distinct

ADVICE = {
    'compute': "workers compute longer than they exchange: add workers (or a faster device); the parameter server "
               "is not the limit",
    'worker link': "each worker's link is the limit: a larger batch names fewer distinct ids per sample (Zipf), a "
                   "dense codec (fp16, 2bit) shrinks the dense gradient, fewer fields or a smaller dim shrink rows",
    'server link': "a server's link is the limit: add servers (a server carries workers/servers of every step), "
                   "use a dense codec, or a larger batch (fewer distinct ids per sample)",
    'server cpu': "servers spend longest applying rows: add servers, or a cheaper optimizer (sgd keeps no state)",
    'server memory': "a server's share does not fit its memory: add servers, admit ids by count (min_count), "
                     "expire rows (ttl) or bound them (capacity), or pick an optimizer with less state",
}


@dataclass
class Estimate:
    """The model's answer for ``workload``; sizes in bytes, times in seconds, rates per second."""
    workload: model.Workload
    unique_ids: float                 # distinct ids of one worker's batch
    rows_per_server: float
    server_table: dict                # model.table_bytes of one server's share
    server_dense: float
    server_fixed: float               # model.fixed_server_bytes: the process, past the switch the index kernels, and
                                      # the shard write at a fit's end
    server_memory: float
    traffic: dict
    times: dict
    step_seconds: float
    samples_per_second: float
    scheduler: dict
    checkpoint: dict
    bottleneck: str
    advice: str = field(default='')
    servers_to_match_compute: int = 0     # fewest servers whose link and CPU per step stay within the compute time

    def as_dict(self):
        """The figures as plain JSON-able values."""
        return asdict(self)

    def table(self):
        """The figures as aligned text, one per line (what ``sparkps plan`` prints)."""
        w = self.workload
        lines = [
            ("workload", f"{w.workers} workers, {w.servers} servers, {w.rows:.3g} rows x dim {w.dim}, "
                         f"{w.optimizer}, batch {w.batch} x {w.fields} fields, zipf {w.zipf}, {w.kvstore}"),
            ("distinct ids / batch", f"{self.unique_ids:,.0f} of {w.batch * w.fields:,} draws "
                                     f"({self.unique_ids / (w.batch * w.fields):.1%})"),
            ("rows / server", f"{self.rows_per_server:,.0f}"),
            ("bytes / row", f"{model.row_payload_bytes(w.dim, w.optimizer)} in the store, "
                            f"{self.server_table['total'] / max(self.rows_per_server, 1):.1f} with growth and index"),
            ("server memory", f"{gb(self.server_memory)} (rows {gb(self.server_table['rows'])}, index "
                              f"{gb(self.server_table['index'])}, sketch {gb(self.server_table['sketch'])}, "
                              f"dense {gb(self.server_dense)}, fixed {gb(self.server_fixed)})"),
            ("worker bytes / step", f"out {mb(self.traffic['worker_out'])}, in {mb(self.traffic['worker_in'])} in "
                                    f"{self.traffic['requests_per_worker']} requests"),
            ("server bytes / step", f"in {mb(self.traffic['server_in'])}, out {mb(self.traffic['server_out'])}"),
        ]
        lines += [(f"time: {name}", f"{seconds * 1e3:.2f} ms") for name, seconds in self.times.items()]
        lines += [
            ("step time", f"{self.step_seconds * 1e3:.2f} ms ({self.samples_per_second:,.0f} samples/s "
                          f"over {w.workers} workers)"),
            ("scheduler", f"{self.scheduler['heartbeats_per_s']:.0f} heartbeats/s, "
                          f"{self.scheduler['reports_per_s']:.0f} progress reports/s at most, "
                          f"{self.scheduler['barriers_per_job']} barriers per job, "
                          f"{self.scheduler['barriers_per_step']} per step"),
            ("checkpoint", f"{gb(self.checkpoint['total_bytes'])} in all, {gb(self.checkpoint['server_bytes'])} "
                           f"per server, {self.checkpoint['seconds']:.1f} s"),
            ("bottleneck", self.bottleneck),
            ("servers for compute", f"{self.servers_to_match_compute} servers keep a server's link and CPU within "
                                    f"the compute time"),
            ("what to change", self.advice),
        ]
        width = max(len(name) for name, _ in lines)
        return "\n".join(f"{name.ljust(width)}  {value}" for name, value in lines)


def gb(n):
    """``n`` bytes as GiB text."""
    return f"{n / 2**30:.2f} GiB"


def mb(n):
    """``n`` bytes as MiB text."""
    return f"{n / 2**20:.2f} MiB"


def estimate(workers, servers, rows, **options):
    """The model's figures for ``workers`` workers, ``servers`` servers and a table of ``rows`` rows; ``options``
    are the other fields of :class:`sparkps.plan.model.Workload` (dim, batch, fields, zipf, optimizer, dense,
    codec, min_count, kvstore, bandwidth in bits/s, compute_per_sample in s, ...). Pure arithmetic; blocks on
    nothing (the distinct-id sum takes well under a second). ValueError names a field out of range."""
    w = model.Workload(workers=int(workers), servers=int(servers), rows=float(rows), **options).check()
    id_space = w.id_space or w.rows
    unique = expected_distinct(w.batch * w.fields, int(id_space), w.zipf)
    rows_per_server = w.rows / w.servers
    table = model.table_bytes(rows_per_server, w.dim, w.optimizer, w.min_count, w.row_arrival)
    if w.linear:
        linear = model.table_bytes(rows_per_server, C.LINEAR_DIM, w.optimizer, w.min_count, w.row_arrival)
        table = {k: table[k] + linear[k] for k in table}
    dense = model.dense_bytes(w.dense / w.servers, w.optimizer, w.kvstore == 'dist_sync')
    moved = model.traffic(w, unique)
    times = model.step_times(w, unique, moved)
    step = model.step_time(times, w.latency)
    fixed = model.fixed_server_bytes(rows_per_server, w.write_tables)
    memory = table['total'] + dense + fixed
    bottleneck = max(times, key=times.get)
    if w.server_memory is not None and memory > w.server_memory:
        bottleneck = 'server memory'
    return Estimate(w, unique, rows_per_server, table, dense, fixed, memory, moved, times, step,
                    w.workers * w.batch / step, model.scheduler_load(w), model.checkpoint(w, rows_per_server),
                    bottleneck, ADVICE[bottleneck], servers_to_match_compute(w, times))


def servers_to_match_compute(w, times):
    """The fewest servers for which a server's link time and CPU time per step are at most the compute time:
    both scale as 1 / servers (a server carries workers / servers of every step)."""
    load = max(times['server link'], times['server cpu']) * w.servers
    return max(1, math.ceil(load / times['compute'])) if times['compute'] > 0 else w.servers
