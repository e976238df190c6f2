"""The messages of bad input, gathered by running each case: the CTR estimator and the readers (API), both jobs
(train_classifier.py, train_ctr.py, as subprocesses) and the ``sparkps`` command.  Prints a Markdown table of
case, message (stderr's last line, or the exception) and exit code; ``--write-docs`` puts it into docs/ctr.md
as section ``bad_input`` (benchmarks/report.py).

    python -m benchmarks.bad_input_table [--write-docs]

Blocks for a few minutes (one local[2] SparkSession for the API cases, a JVM for each job case that reaches Spark).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from benchmarks import report

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
DOC = os.path.join(ROOT, "docs", "ctr.md")
GOOD = "1\t" + "\t".join(str(i) for i in range(13)) + "\t" + "\t".join("c%d" % i for i in range(26))


def criteo_with(folder, name, line):
    path = os.path.join(folder, name)
    with open(path, "w") as handle:
        handle.write("\n".join([GOOD, GOOD, line, GOOD]) + "\n")
    return path


def cell(line, column, value):
    cells = GOOD.split("\t")
    cells[column] = value
    return "\t".join(cells)


def files(folder):
    """The inputs the cases read."""
    out = {"good": criteo_with(folder, "good.tsv", GOOD)}
    for name, line in {"c25": "\t".join(GOOD.split("\t")[:25]), "c41": GOOD + "\tx", "abc": cell(GOOD, 6, "abc"),
                       "nan": cell(GOOD, 8, "nan"), "label2": cell(GOOD, 0, "2")}.items():
        out[name] = criteo_with(folder, name + ".tsv", line)
    write = {"angel.json": json.dumps({"data": {"indexrange": 10}, "layers": []}), "notjson.json": "{layers",
             "notes.txt": "hello world\n", "bad.ffm": "1 0:3:1 1:4:1\n0 0:3:1 1:4\n", "bad.dummy": "1 4 5\n1 4 x\n",
             "labels.libsvm": "1 1:1\n0 2:1\n1 1:1\n0 2:1\n7 1:1\n1 2:1\n", "ok.libsvm": "1 1:1\n0 2:1\n",
             "ffm.txt": "1 0:3:1 1:4:1\n0 0:2:1 1:5:1\n", "label2.csv": "click,site\n1,a\n2,b\n0,c\n"}
    rows = ["%d,s%d,a%d" % (i % 2, i % 5, i % 3) for i in range(200)]
    write.update({"ctr.csv": "\n".join(["click,site,app"] + rows) + "\n",
                  "extra.csv": "\n".join(["click,site,app"] + rows[:4] + ["1,s1,a1,surplus"] + rows[4:]) + "\n",
                  "noheader.csv": "\n".join(rows) + "\n", "headeronly.csv": "click,site,app\n",
                  "oneclass.csv": "\n".join(["click,site,app"] + ["1" + r[1:] for r in rows]) + "\n",
                  "strlabel.csv": "\n".join(["click,site,app"] + [("yes" if r[0] == "1" else "no") + r[1:]
                                                                   for r in rows]) + "\n",
                  "sight.csv": "\n".join(["click,sight,app"] + rows) + "\n",
                  "unique.csv": "\n".join(["click,site,app"] + ["%s,u%d" % (r[:-3], i) for i, r in enumerate(rows)])
                  + "\n"})
    for name, text in write.items():
        out[name] = os.path.join(folder, name)
        with open(out[name], "w") as handle:
            handle.write(text)
    import pyarrow
    import pyarrow.parquet
    out["ctr.parquet"] = os.path.join(folder, "ctr.parquet")
    pyarrow.parquet.write_table(pyarrow.table({"click": [i % 2 for i in range(200)],
                                               "site": ["s%d" % (i % 5) for i in range(200)]}), out["ctr.parquet"])
    out["corrupt.parquet"] = os.path.join(folder, "corrupt.parquet")
    with open(out["corrupt.parquet"], "wb") as handle:
        handle.write(b"PAR1" + bytes(range(200)) + b"PAR1")
    os.makedirs(os.path.join(folder, "full"), exist_ok=True)
    open(os.path.join(folder, "full", "model-0020.params"), "w").close()
    out["full"] = os.path.join(folder, "full")
    return out


def job_cases(f):
    ctr = ["train_ctr", "--train", f["good"], "--test", f["good"]]
    mlp = ["train_classifier", "--train", f["ok.libsvm"]]
    return [
        ("job train_ctr: unknown model", ctr + ["--model", "deepfx"]),
        ("job train_ctr: missing --network file", ctr + ["--network", "missing.json"]),
        ("job train_ctr: --network not JSON", ctr + ["--network", f["notjson.json"]]),
        ("job train_ctr: Angel network without layers", ctr + ["--network", f["angel.json"]]),
        ("job train_ctr: --network with --numeric-cols", ctr + ["--network", os.path.join(ROOT, "jobs", "networks",
                                                                                        "deepfm.json"),
                                                              "--numeric-cols", "I1"]),
        ("job train_ctr: --epochs 0", ctr + ["--epochs", "0"]),
        ("job train_ctr: --hidden-units 64,x", ctr + ["--hidden-units", "64,x"]),
        ("job train_ctr: --validation-fraction 1.5", ctr + ["--validation-fraction", "1.5"]),
        ("job train_ctr: more servers than workers", ctr + ["--num-servers", "3"]),
        ("job train_ctr: unknown strategy option", ctr + ["--kvstore-param", "bogus=1"]),
        ("job train_ctr: unknown --format", ctr + ["--format", "xls"]),
        ("job train_ctr: --format orc on a libffm file", ["train_ctr", "--train", f["ffm.txt"], "--test", f["ffm.txt"],
                                                          "--format", "orc"]),
        ("job train_ctr: a strategy that trains no tables", ctr + ["--kvstore", "dist_easgd"]),
        ("job train_ctr: missing --train file", ["train_ctr", "--train", "nope.tsv", "--test", f["good"]]),
        ("job train_ctr: --train without --test", ["train_ctr", "--train", f["good"]]),
        ("job train_ctr: content of no known format", ["train_ctr", "--train", f["notes.txt"], "--test", f["good"]]),
        ("job train_ctr: unknown --bad-lines policy", ctr + ["--bad-lines", "drop"]),
        ("job train_ctr: CSV label 2 on line 3", ["train_ctr", "--train", f["label2.csv"], "--test", f["label2.csv"],
                                                  "--label-col", "click", "--master", "local[1]",
                                                  "--num-workers", "1"]),
        ("job train_ctr: existing --output", ctr + ["--output", f["full"]]),
        ("job train_ctr: --output /proc/x", ctr + ["--output", "/proc/x"]),
        ("job train_ctr: --num-workers 0", ctr + ["--num-workers", "0"]),
        ("job train_ctr: Parquet without --categorical-cols", ["train_ctr", "--train", f["ctr.parquet"], "--test",
                                                               f["ctr.parquet"], "--label-col", "click"]),
        ("job train_ctr: Criteo line of 25 cells", ["train_ctr", "--train", f["c25"], "--test", f["good"],
                                                    "--master", "local[1]", "--num-workers", "1"]),
        ("job train_ctr: libffm token 1:4 (no value)", ["train_ctr", "--train", f["bad.ffm"], "--test", f["bad.ffm"],
                                                        "--format", "libffm", "--master", "local[1]",
                                                        "--num-workers", "1"]),
    ] + spark_job_cases(f) + [
        ("job train_classifier: foreign JSON as --symbol", mlp + ["--symbol", f["angel.json"], "--num-features", "2"]),
        ("job train_classifier: missing --symbol file", mlp + ["--symbol", "missing.json", "--num-features", "2"]),
        ("job train_classifier: --workers 0", mlp + ["--workers", "0"]),
        ("job train_classifier: --epochs 0", mlp + ["--epochs", "0"]),
        ("job train_classifier: --layers 4,x", mlp + ["--layers", "4,x"]),
        ("job train_classifier: no input", ["train_classifier"]),
        ("job train_classifier: existing --output", mlp + ["--output", f["full"]]),
    ]


def spark_job_cases(f):
    """train_ctr cases that reach Spark: (case, arguments) or (case, arguments, {"pick": text of the line to show,
    "interrupt_after": seconds before Ctrl-C})."""
    csv = ["--label-col", "click", "--categorical-cols", "site,app", "--epochs", "1", "--master", "local[2]"]

    def ctr(train, test=None):
        return ["train_ctr", "--train", f[train], "--test", f[test or "ctr.csv"]] + csv
    return [
        ("job train_ctr: CSV line with an extra cell", ctr("extra.csv")),
        ("job train_ctr: CSV without a header line", ctr("noheader.csv")),
        ("job train_ctr: CSV of a header only", ctr("headeronly.csv")),
        ("job train_ctr: every label 1", ctr("oneclass.csv")),
        ("job train_ctr: string label in --train, 0/1 in --test", ctr("strlabel.csv")),
        ("job train_ctr: column missing from --test", ctr("ctr.csv", "sight.csv")),
        ("job train_ctr: corrupt Parquet file", ["train_ctr", "--train", f["corrupt.parquet"], "--test",
                                                 f["corrupt.parquet"], "--format", "parquet"] + csv),
        ("job train_ctr: near-unique categorical column (a warning)", ctr("unique.csv", "unique.csv"),
         {"pick": "warning"}),
        ("job train_ctr: unreachable --master (plain python)", ctr("ctr.csv")[:-2] + ["--master",
                                                                                      "spark://nohost:7077"]),
        ("job train_ctr: --output under a file", ctr("ctr.csv") + ["--output", os.path.join(f["ctr.csv"], "out")]),
        ("job train_ctr: Ctrl-C while training", ctr("ctr.csv")[:-4] + ["--epochs", "50"], {"interrupt_after": 20}),
    ]


def run_job(args, folder, pick=None, interrupt_after=None):
    command = [sys.executable, os.path.join(ROOT, "jobs", args[0] + ".py")] + args[1:]
    if "--output" not in args:
        command += ["--output", os.path.join(folder, "out-%d" % time.monotonic_ns())]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env.update(PYTHONPATH=ROOT, SPARK_LOCAL_IP="127.0.0.1")
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               cwd=folder)
    if interrupt_after:
        try:
            process.wait(timeout=interrupt_after)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=600)
    lines = [line for line in err.splitlines() if line.strip() and (pick is None or pick in line)]
    return (lines[-1].split("\r")[-1].strip() if lines else ""), process.returncode, time.monotonic() - started


def api_cases(spark, f):
    from sparkps.ctr.files import read_dummy, read_libffm
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    from sparkps.spark.submit.criteo import read_criteo

    def fit(frame, **settings):
        base = dict(labelCol="click", categoricalCols=["site"], model="lr", numEpochs=1, numWorkers=2, numServers=1)
        base.update(settings)
        return lambda: SparkpsCTRClassifier(**base).fit(frame)
    rows = [(float(i % 2), "s%d" % i, float(i)) for i in range(7)]
    good = spark.createDataFrame(rows, ["click", "site", "hour"])
    return [
        ("API read_criteo: line of 25 cells", lambda: read_criteo(spark, f["c25"])),
        ("API read_criteo: line of 41 cells", lambda: read_criteo(spark, f["c41"])),
        ("API read_criteo: abc in I6", lambda: read_criteo(spark, f["abc"])),
        ("API read_criteo: nan in I8", lambda: read_criteo(spark, f["nan"])),
        ("API read_criteo: label 2", lambda: read_criteo(spark, f["label2"])),
        ("API read_libffm: token 1:4 (no value)", lambda: read_libffm(f["bad.ffm"])),
        ("API read_dummy: index x", lambda: read_dummy(f["bad.dummy"])),
        ("API CTR estimator: string label of one value", fit(spark.createDataFrame([("yes", "a")],
                                                                                   ["click", "site"]))),
        ("API CTR estimator: label 2", fit(spark.createDataFrame(rows + [(2.0, "x", 1.0)], ["click", "site", "hour"])
                                           .coalesce(1))),
        ("API CTR estimator: null label", fit(spark.createDataFrame(rows + [(None, "x", 1.0)],
                                                                    "click double, site string, hour double")
                                              .coalesce(1))),
        ("API CTR estimator: every label 1", fit(spark.createDataFrame([(1.0, "s%d" % i, float(i)) for i in range(7)],
                                                                        ["click", "site", "hour"]))),
        ("API CTR estimator: missing column", fit(good, categoricalCols=["site", "app"])),
        ("API CTR estimator: string numeric column", fit(good, categoricalCols=["hour"], numericCols=["site"])),
        ("API CTR estimator: unknown strategy option", fit(good, kvstoreParams=["bogus=1"])),
        ("API CTR estimator: numWorkers=0", fit(good, numWorkers=0)),
        ("API CTR estimator: unknown kvstore", fit(good, kvstore="dist_sink")),
        ("API CTR estimator: network with multiValueCols", fit(good, network=os.path.join(ROOT, "jobs", "networks",
                                                                                          "deepfm.json"),
                                                               multiValueCols=["site"])),
        ("API CTR estimator: Angel network, wrong field count", fit(good, network=os.path.join(
            ROOT, "jobs", "networks", "deepfm.json"))),
    ]


def run_api(call):
    try:
        call()
    except Exception as exc:          # the message is what the table shows
        return "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[-1] if str(exc).strip() else ""), "-"
    return "(no error)", "-"


def cli_cases(f):
    return [
        ("CLI launch: foreign JSON as --symbol", ["launch", "-w", "1", "--", "train", "--symbol", f["angel.json"],
                                                  "--data", f["ok.libsvm"]]),
        ("CLI launch: missing --data", ["launch", "-w", "1", "--", "train", "--symbol", f["angel.json"],
                                        "--data", "missing.libsvm"]),
        ("CLI launch: not `train`", ["launch", "--", "predict"]),
        ("CLI status: no status file", ["status", "--status-file", "missing-status.json"]),
        ("CLI status: status file not JSON", ["status", "--status-file", f["notes.txt"]]),
        ("CLI launch: label 7 for a 2-class network", "LABELS"),
    ]


def run_cli(args, f, folder):
    if args == "LABELS":
        net = os.path.join(folder, "net.json")
        subprocess.run([sys.executable, "-m", "sparkps.cli", "symbol", "mlp", "--layers", "2,4,2", "-o", net],
                       check=True, capture_output=True, env=dict(os.environ, PYTHONPATH=ROOT))
        args = ["launch", "-w", "2", "--status-file", os.path.join(folder, "st.json"), "--", "train", "--symbol",
                net, "--data", f["labels.libsvm"], "--num-features", "2", "--epochs", "1", "--batch-size", "2"]
    done = subprocess.run([sys.executable, "-m", "sparkps.cli"] + args, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=ROOT), cwd=folder)
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    first = [line for line in lines if "the first failure" in line]
    return (first or lines or [""])[-1], done.returncode


SECTIONS = ("bad_input",)


def shown(message):
    """A message as the table shows it: the checkout's and the temporary folders' paths cut, pipes escaped."""
    message = message.replace("|", "\\|").replace(ROOT + "/", "").replace("`", "'")
    return re.sub(r"/tmp/[^/ :]+/", "", message)


def table(rows):
    out = ["| # | case | message | exit |", "|---|---|---|---|"]
    for k, (case, message, code) in enumerate(rows, 1):
        out.append("| %d | %s | `%s` | %s |" % (k, case, message, code))
    return "\n".join(out) + "\n"


def render(run):
    """The section of a run record (pure function of it): every case's message (paths already cut) and exit."""
    return table(run["data"]["rows"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write-docs", action="store_true", help="rewrite the table in docs/ctr.md")
    parser.add_argument("--only", help="the job cases whose name holds this text, printed only")
    args = parser.parse_args(argv)
    if args.only and args.write_docs:
        parser.error("--only prints some cases: drop --write-docs (the section holds every case)")
    run = report.Run("bad_input_table", argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bad-input-") as folder:
        f = files(folder)
        for case, job_args, *how in job_cases(f):
            if args.only and args.only not in case:
                continue
            message, code, seconds = run_job(job_args, folder, **(how[0] if how else {}))
            rows.append((case, shown(message), code))
            print("%-55s %5.1f s  exit %s  %s" % (case, seconds, code, message), flush=True)
        if args.only:
            print(table(rows))
            return 0
        for case, cli_args in cli_cases(f):
            message, code = run_cli(cli_args, f, folder)
            rows.append((case, shown(message), code))
            print("%-55s exit %s  %s" % (case, code, message), flush=True)
        from pyspark.sql import SparkSession
        os.environ["PYSPARK_PYTHON"] = sys.executable
        spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false").getOrCreate())
        spark.sparkContext.setLogLevel("FATAL")
        try:
            for case, call in api_cases(spark, f):
                message, code = run_api(call)
                rows.append((case, shown(message), code))
                print("%-55s %s" % (case, message), flush=True)
        finally:
            spark.stop()
    print(run.publish(args, "bad_input", {"rows": rows}, render, doc=DOC))
    return 0


if __name__ == "__main__":
    sys.exit(main())
