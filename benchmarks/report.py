"""What a benchmark does with its results: print them, and on request write them into docs/ or a JSON file.

A benchmark prints its tables to stdout and leaves the checkout alone unless it runs with ``--write-docs``; then
it rewrites its own section of docs/benchmarks.md: the text between ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``. Running it again replaces only that section, so benchmarks can run in any order and in
separate processes. ``--json PATH`` writes the run's figures to PATH (the format ``benchmarks/compare.py`` reads).

This module imports nothing but the standard library: benchmarks that fix thread counts before numpy loads import
it first.
"""
import datetime
import json
import os
import platform
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
DOC = os.path.join(ROOT, "docs", "benchmarks.md")
HEADER = ("# Benchmarks\n\nEach section is written by the command it names "
          "(`python -m benchmarks.NAME --write-docs ...`).\n")
OUTPUT_FLAGS = {"--write-docs": 0, "--json": 1}      # flag -> how many values follow it


def add_output_args(parser):
    """Add the options every benchmark shares, ``--write-docs`` and ``--json PATH``, to an argparse parser."""
    parser.add_argument("--write-docs", action="store_true",
                        help="also rewrite this benchmark's section of docs/ (and its figure); without it the run "
                             "only prints")
    parser.add_argument("--json", metavar="PATH",
                        help="also write the run's figures to PATH as JSON (read by benchmarks/compare.py)")
    return parser


def command(module, options=""):
    """The command line that writes a section: ``python -m benchmarks.MODULE --write-docs OPTIONS``."""
    return ("python -m benchmarks.%s --write-docs %s" % (module, options)).rstrip()


def argv_options(argv=None):
    """``argv`` (default: this process's arguments) as one string, without the output options of
    :func:`add_output_args`, for :func:`command`."""
    argv, kept = list(sys.argv[1:] if argv is None else argv), []
    while argv:
        arg = argv.pop(0)
        name = arg.split("=", 1)[0]
        if name in OUTPUT_FLAGS:
            if "=" not in arg:
                del argv[:OUTPUT_FLAGS[name]]
            continue
        kept.append(arg)
    return " ".join(kept)


def child_env():
    """The environment of a child Python process (a server, a raw peer) importing sparkps from this checkout."""
    return dict(os.environ, PYTHONPATH=ROOT)


def local_spark(app_name, driver_memory, slots=2):
    """A local[slots] SparkSession for a benchmark (loopback only, UI and progress bar off, 2 shuffle partitions);
    ``slots``: task slots, at least as many as a fit's workers (a barrier stage needs all of them at once)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master("local[%d]" % slots).appName(app_name)
             .config("spark.ui.enabled", "false").config("spark.driver.memory", driver_memory)
             .config("spark.sql.shuffle.partitions", "2").config("spark.ui.showConsoleProgress", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def machine_line():
    """A one-line description of where the numbers were taken."""
    return "%s, %s, %d cores, Python %s, %s" % (
        datetime.date.today().isoformat(), platform.machine(), os.cpu_count() or 0,
        platform.python_version(), platform.platform(terse=True))


def write_section(name, markdown, doc=DOC):
    """Replace (or append) the section ``name`` of docs/benchmarks.md with ``markdown``."""
    begin, end = "<!-- bench:%s -->" % name, "<!-- /bench:%s -->" % name
    block = "%s\n%s\n\n_Measured: %s_\n%s" % (begin, markdown.strip(), machine_line(), end)
    text = open(doc, encoding="utf-8").read() if os.path.exists(doc) else HEADER
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)


def publish(args, name, markdown):
    """Write ``markdown`` as section ``name`` of docs/benchmarks.md when the run was asked to (``--write-docs``)."""
    if args.write_docs:
        write_section(name, markdown)


def figure(value, unit, better=None):
    """One figure of a run: its value, its unit and which way is better ('lower', 'higher' or None)."""
    return {"value": None if value is None else float(value), "unit": unit, "better": better}


def lower(value, unit):
    """A figure where less is better (a time)."""
    return figure(value, unit, "lower")


def higher(value, unit):
    """A figure where more is better (a rate, a speed-up over a baseline, an accuracy)."""
    return figure(value, unit, "higher")


def save_json(args, benchmark, figures):
    """Write ``figures`` ({name: :func:`figure`}) to ``args.json`` when the run was given ``--json PATH``."""
    if not args.json:
        return
    sparkps = sys.modules.get("sparkps")
    record = {"benchmark": benchmark, "argv": sys.argv[1:], "machine": machine_line(),
              "load": list(os.getloadavg()), "root": ROOT,
              "sparkps": os.path.dirname(os.path.abspath(sparkps.__file__)) if sparkps else None, "figures": figures}
    with open(args.json, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
