"""The *Answers* table of docs/scale.md: ``sparkps.plan.estimate`` for a fixed list of cases (a billion-row job and
Criteo-sized ones), one row each. Pure arithmetic over the sizing model, so the table changes only when the model
does; ``tests/plan/test_scale_answers.py`` checks the docs hold what the model gives now.

    python -m benchmarks.scale_answers [--write-docs]

``--write-docs`` rewrites the table between the ``<!-- plan:answers -->`` markers of docs/scale.md.
"""
import argparse
import os
import re

from benchmarks import report
from sparkps.plan import estimate

DOC = os.path.join(report.ROOT, 'docs', 'scale.md')
BEGIN, END = "<!-- plan:answers -->", "<!-- /plan:answers -->"

BILLION = dict(workers=100, servers=10, rows=1e9, dim=16, optimizer='adagrad')
CRITEO = dict(rows=33e6, dim=16, optimizer='adagrad')
CASES = [
    ("100 w / 10 s, 1B x 16, adagrad", BILLION),
    ("same, sgd", dict(BILLION, optimizer='sgd')),
    ("same, adam", dict(BILLION, optimizer='adam')),
    ("same, 40 servers", dict(BILLION, servers=40)),
    ("same, 1 Gbit", dict(BILLION, bandwidth=1e9)),
    ("same, 1 Gbit, server 0.35 us/row", dict(BILLION, bandwidth=1e9, server_row_seconds=0.35e-6)),
    ("same, batch 16384", dict(BILLION, batch=16384)),
    ("same, + 10M dense, 2bit", dict(BILLION, dense=10e6, codec='2bit')),
    ("same, + 10M dense, none", dict(BILLION, dense=10e6, codec='none')),
    ("Criteo 33M x 16, 8 w / 2 s", dict(CRITEO, workers=8, servers=2)),
    ("Criteo 33M x 16, 32 w / 4 s", dict(CRITEO, workers=32, servers=4)),
    ("Criteo 33M x 128, 8 w / 2 s (torchrec DLRM dim)", dict(CRITEO, workers=8, servers=2, dim=128)),
    ("Criteo 33M x 128, 32 w / 8 s", dict(CRITEO, workers=32, servers=8, dim=128)),
    ("Criteo 33M x 16, 8 w / 2 s, batch 512 (DeepRec)", dict(CRITEO, workers=8, servers=2, batch=512)),
]
HEADER = ("|case|distinct ids / batch|rows / server|server memory (GiB)|worker out / in per step (MiB)|"
          "server in / out per step (MiB)|compute (ms)|server link (ms)|server cpu (ms)|step (ms)|samples/s|"
          "checkpoint total (GiB), s|bottleneck|servers for compute|")


def row(name, case):
    """One line of the table: the estimate of ``case`` (keyword arguments of ``estimate``)."""
    e = estimate(**case)
    t, ms, mib, gib = e.traffic, e.times, 2 ** 20, 2 ** 30
    cells = [name, f"{e.unique_ids:,.0f}", f"{e.rows_per_server:,.0f}", f"{e.server_memory / gib:.2f}",
             f"{t['worker_out'] / mib:.2f} / {t['worker_in'] / mib:.2f}",
             f"{t['server_in'] / mib:.1f} / {t['server_out'] / mib:.1f}",
             f"{ms['compute'] * 1e3:.0f}", f"{ms['server link'] * 1e3:.1f}", f"{ms['server cpu'] * 1e3:.0f}",
             f"{e.step_seconds * 1e3:.0f}", f"{e.samples_per_second:,.0f}",
             f"{e.checkpoint['total_bytes'] / gib:.1f}, {e.checkpoint['seconds']:.1f}", e.bottleneck,
             str(e.servers_to_match_compute)]
    return "|" + "|".join(cells) + "|"


def markdown():
    """The table with the command that writes it."""
    lines = ["`python -m benchmarks.scale_answers --write-docs` (the plan's defaults unless the case says: batch "
             "4096 x 26 fields, dim 16, Zipf 1.1, 10 Gbit/s, 20 µs per sample, 3.5 µs per row on a server, "
             "dist_sync):", "",
             HEADER, "|" + "---|" * (HEADER.count("|") - 1)]
    lines += [row(name, case) for name, case in CASES]
    return "\n".join(lines)


def section(text):
    """The text between the markers of ``text`` (docs/scale.md's content), or None without them."""
    match = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    return match.group(1) if match else None


def write_doc(table, doc=DOC):
    """Replace the table between the markers of ``doc`` with ``table``; ValueError when the markers are missing."""
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    if section(text) is None:
        raise ValueError(f"{doc}: no {BEGIN} ... {END} section to rewrite")
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.S)
    with open(doc, "w", encoding="utf-8") as f:
        f.write(pattern.sub(lambda _: f"{BEGIN}\n{table}\n{END}", text))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write-docs", action="store_true", help="also rewrite the table in docs/scale.md")
    args = parser.parse_args(argv)
    table = markdown()
    print(table)
    if args.write_docs:
        write_doc(table)
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
