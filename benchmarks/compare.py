"""Run benchmarks against two checkouts back to back and print their figures side by side, with the run-to-run spread.

    python -m benchmarks.compare --before ../main --after . [--repeats 3] [BENCH ...]
    python -m benchmarks.compare --after . --repeats 1 "bench_executor --repeats 2 --steps 5"   # one checkout

BENCH is a benchmark module of benchmarks/ with its options in one argument ("bench_ps --repeat 3 --batches 128");
a bare name takes the reduced options of ``QUICK`` below. Default: bench_executor, bench_ps, bench_sparse and a
reduced bench_ctr (numpy and sparkps rows, no MLlib): about 2-3 minutes a run of the four on a quiet 2-core machine,
so the default 3 repeats of both sides take 15 minutes or so.

Every run is ``python -m benchmarks.NAME OPTIONS --json FILE`` in a fresh process with the checkout as its working
directory and ``PYTHONPATH=DIR``, so it uses that checkout's benchmarks and sparkps. The two sides alternate in an
ABBA order (repeat 1: before then after, repeat 2: after then before, ...) so a slow drift of the machine's load
weighs on both alike. Nothing is written into either checkout: the runs write their JSON, their logs, Python's
bytecode caches (``PYTHONPYCACHEPREFIX``) and numba's (``NUMBA_CACHE_DIR``) into a temporary folder, and the
checkout's ``git status --ignored`` is compared before and after every run.

Each figure's row shows the median of each side, the change of the after median against the before median, and the
spread of each side, (max - min) / median of its runs. With two runs or more on each side, a figure whose before
and after ranges do not overlap is marked ``better`` or ``worse`` (by the figure's direction: a time is better
lower, a rate or a speed-up higher); ``~`` means the ranges overlap (within noise).
"""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# Reduced options of every benchmark: each takes a few seconds to about a minute and a half on a quiet 2-core machine
# (bench_ctr at 20,000 rows: about 80 s, most of it Spark and the fits' start-up; 50,000 rows took twice as long).
QUICK = {
    "bench_executor": "--repeats 5 --steps 20",
    "bench_ps": "--repeat 5 --steps 20 --batches 128,512",
    "bench_sparse": "--rows 1000000 --repeat 5",
    "bench_ctr": "--rows 20000 --epochs 1 --systems numpy,sparkps",
    "bench_step_floor": "--repeat 5 --steps 20",
    "bench_sparse_compaction": "--rows 200000 --repeat 2",
    "bench_sparse_embedding": "--repeat 2 --vocab 10000,100000",
    "bench_strategies": "--strategies-only --workers 2 --epochs 3 --ctr-rows 0",
    "bench_vs_mllib": "--quick --epochs 1",
    "bench_gpu": "--repeats 3 --steps 20",
}
DEFAULT = ["bench_executor", "bench_ps", "bench_sparse", "bench_ctr"]


def parse_bench(text):
    """``(module, [options])`` of one BENCH argument."""
    words = shlex.split(text)
    if not words:
        raise argparse.ArgumentTypeError("an empty benchmark")
    name = words[0].removeprefix("benchmarks.")
    if "/" in name or name.endswith(".py"):
        raise argparse.ArgumentTypeError("name a module of benchmarks/ (bench_ps), not a file: %r" % text)
    if any(w in ("--write-docs", "--json") or w.startswith("--json=") for w in words[1:]):
        raise argparse.ArgumentTypeError("the comparison writes no docs and sets --json itself: %r" % text)
    return name, (words[1:] if len(words) > 1 else shlex.split(QUICK.get(name, "")))


def checkout(path):
    """The absolute path of a checkout whose benchmarks take ``--json`` (refuses older ones, which would run
    without it and rewrite their docs/)."""
    path = os.path.abspath(path)
    report = os.path.join(path, "benchmarks", "report.py")
    if not os.path.isfile(report) or "def add_output_args" not in open(report, encoding="utf-8").read():
        raise SystemExit("compare: %s has no benchmarks package taking --json and --write-docs "
                         "(benchmarks/report.py add_output_args); its benchmarks would rewrite its docs/" % path)
    return path


def tree_state(path):
    """What ``git status --porcelain --ignored`` says of ``path`` (None outside git): compared before and after
    every run, so a run that writes into the checkout is reported."""
    try:
        out = subprocess.run(["git", "-C", path, "status", "--porcelain", "--ignored"], capture_output=True,
                             text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.stdout.splitlines())


def run_once(python, root, name, options, scratch, tag, timeout):
    """One run of ``benchmarks.NAME`` in checkout ``root``: (record or None, seconds, log path, problem or None)."""
    json_path, log_path = os.path.join(scratch, tag + ".json"), os.path.join(scratch, tag + ".log")
    env = dict(os.environ, PYTHONPATH=root, PYTHONPYCACHEPREFIX=os.path.join(scratch, "pycache"),
               NUMBA_CACHE_DIR=os.path.join(scratch, "numba"))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYSPARK_PYTHON", python)
    env.setdefault("PYSPARK_DRIVER_PYTHON", python)
    before = tree_state(root)
    started = time.perf_counter()
    problem = None
    with open(log_path, "w") as log:
        try:
            rc = subprocess.run([python, "-m", "benchmarks." + name, *options, "--json", json_path], cwd=root,
                                env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
            if rc:
                problem = "exit status %d" % rc
        except subprocess.TimeoutExpired:
            problem = "timed out after %d s" % timeout
    seconds = time.perf_counter() - started
    after = tree_state(root)
    if before is not None and after != before:
        changed = sorted(after ^ before)
        problem = "changed the checkout: %s" % "; ".join(changed[:5]) + (" ..." if len(changed) > 5 else "")
    record = None
    if os.path.exists(json_path):
        with open(json_path, encoding="utf-8") as f:
            record = json.load(f)
        record["figures"]["(whole run, start-up included)"] = {"value": seconds, "unit": "s", "better": "lower"}
        used = record.get("sparkps")
        if used and not (used + os.sep).startswith(root + os.sep):
            problem = problem or "imported sparkps from %s, not from the checkout" % used
    elif not problem:
        problem = "wrote no JSON"
    return record, seconds, log_path, problem


def values(records, figure):
    return [r["figures"][figure]["value"] for r in records
            if figure in r["figures"] and r["figures"][figure]["value"] is not None]


def spread(vals):
    if len(vals) < 2:
        return ""
    mid = statistics.median(vals)
    return "%.0f%%" % (100 * (max(vals) - min(vals)) / abs(mid)) if mid else ""


def number(value):
    if value is None:
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 1000:
        return "%.0f" % value
    if magnitude >= 10:
        return "%.1f" % value
    if magnitude >= 1:
        return "%.2f" % value
    return "%.4f" % value


def verdict(before, after, better):
    """'better' / 'worse' when the two sides' ranges do not overlap, '~' when they do ('' without a direction
    or with fewer than two runs on a side)."""
    if not better or len(before) < 2 or len(after) < 2:
        return ""
    if min(after) > max(before):
        return "better" if better == "higher" else "worse"
    if max(after) < min(before):
        return "better" if better == "lower" else "worse"
    return "~"


def table(rows):
    """Plain-text columns, the first left-aligned, the others right-aligned."""
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for k, row in enumerate(rows):
        cells = [str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def figure_names(records):
    names = []
    for r in records:
        names += [name for name in r["figures"] if name not in names]
    return names


def describe(name, records):
    """``(unit, better)`` of a figure, from the first record that has it."""
    for r in records:
        if name in r["figures"]:
            return r["figures"][name]["unit"], r["figures"][name]["better"]
    return "", None


def compare_table(before, after):
    rows = [("figure", "unit", "before", "after", "change", "spread before", "spread after", "")]
    for name in figure_names(before + after):
        unit, better = describe(name, before + after)
        b, a = values(before, name), values(after, name)
        mb, ma = (statistics.median(b) if b else None), (statistics.median(a) if a else None)
        change = "%+.1f%%" % (100 * (ma / mb - 1)) if mb and ma is not None else ""
        rows.append((name, unit, number(mb), number(ma), change, spread(b), spread(a), verdict(b, a, better)))
    return table(rows)


def single_table(records):
    rows = [("figure", "unit", "median", "min", "max", "spread")]
    for name in figure_names(records):
        unit, _ = describe(name, records)
        v = values(records, name)
        rows.append((name, unit, number(statistics.median(v)) if v else "n/a", number(min(v)) if v else "",
                     number(max(v)) if v else "", spread(v)))
    return table(rows)


def inside(path, root):
    return (os.path.abspath(path) + os.sep).startswith(root + os.sep)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benches", nargs="*", type=parse_bench, metavar="BENCH",
                        help="'NAME [OPTIONS]' of a module of benchmarks/ (default: %s, with the reduced options "
                             "of QUICK)" % ", ".join(DEFAULT))
    parser.add_argument("--before", metavar="DIR", help="the checkout to compare against (left out: only --after runs)")
    parser.add_argument("--after", metavar="DIR", default=".", help="the checkout with the change (default: .)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of every benchmark on each side (default 3)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter of every run (default: this one); each side's sparkps comes from its "
                             "checkout through PYTHONPATH")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds one run may take (default 1200)")
    parser.add_argument("--save", metavar="PATH", help="also write every run's figures to PATH (JSON, outside the "
                                                       "checkouts)")
    parser.add_argument("--keep", action="store_true", help="keep the folder of logs and JSON files of the runs")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    benches = args.benches or [parse_bench(name) for name in DEFAULT]
    sides = {"after": checkout(args.after)}
    if args.before:
        sides = {"before": checkout(args.before), **sides}
        if sides["before"] == sides["after"]:
            parser.error("--before and --after name the same checkout")
    if args.save and any(inside(args.save, root) for root in sides.values()):
        parser.error("--save must be outside the checkouts (nothing is written into them)")
    python = os.path.abspath(args.python) if os.sep in args.python else shutil.which(args.python) or args.python
    scratch = tempfile.mkdtemp(prefix="sparkps-compare-")
    print("compare: %s; %d run(s) a side; logs in %s" % (
        ", ".join("%s %s" % kv for kv in sides.items()), args.repeats, scratch), flush=True)
    results, problems = [], []
    for name, options in benches:
        records = {side: [] for side in sides}
        for r in range(args.repeats):
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for side in order:
                tag = "%s-%s-%d" % (name, side, r + 1)
                record, seconds, log, problem = run_once(python, sides[side], name, options, scratch, tag,
                                                         args.timeout)
                print("  %-24s %-6s run %d/%d: %6.1f s%s" % (name, side, r + 1, args.repeats, seconds,
                                                             "  PROBLEM: " + problem if problem else ""), flush=True)
                if problem:
                    problems.append("%s %s run %d: %s (log %s)" % (name, side, r + 1, problem, log))
                    with open(log, errors="replace") as f:
                        for line in f.read().splitlines()[-15:]:
                            print("    " + line, flush=True)
                if record is not None:
                    records[side].append(record)
        results.append({"benchmark": name, "options": options, "runs": records})
    print()
    for result in results:
        runs = result["runs"]
        print("%s (%s run(s) a side)" % (" ".join([result["benchmark"], *result["options"]]),
                                         "/".join(str(len(v)) for v in runs.values())))
        if not any(runs.values()):
            print("  no figures: every run failed\n")
            continue
        print(compare_table(runs["before"], runs["after"]) if "before" in runs else single_table(runs["after"]))
        print()
    if "before" in sides:
        print("change: after median / before median - 1; spread: (max - min) / median of a side's runs; better / "
              "worse: the two sides' ranges do not overlap; ~: they do.")
    if args.save:
        with open(args.save, "w", encoding="utf-8") as f:
            json.dump({"sides": sides, "repeats": args.repeats, "results": results}, f, indent=1)
    if problems:
        print("\n%d run(s) had a problem (logs kept in %s):\n  %s" % (len(problems), scratch, "\n  ".join(problems)))
        return 1
    if args.keep:
        print("logs and JSON of the runs: %s" % scratch)
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
