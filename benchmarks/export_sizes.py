"""The sizes of the demo models in every export form: ``make demo``'s MLP and ``make demo-ctr``'s DeepFM.

Trains both demos exactly as the Makefile does (``jobs/train_classifier.py --demo`` and ``jobs/train_ctr.py --demo
--model deepfm --embedding-dim 4 --epochs 3``, as subprocesses on local[2]), then exports each: the saved model
folder as it is, the network as ONNX (``sparkps.onnx.export_model``; the CTR network cut after its table reads),
and for the CTR model its tables as Parquet with the manifest and the featurization (``model.export_tables``).
Prints a table of files and bytes; ``--write-docs`` puts it into docs/export.md between ``<!-- bench:export_sizes
-->`` and ``<!-- /bench:export_sizes -->``.

    python -m benchmarks.export_sizes [--write-docs]

Blocks for a few minutes (two jobs, then one local[1] SparkSession to load the CTR model).
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

from benchmarks import report

DOC = os.path.join(report.ROOT, "docs", "export.md")
MLP_JOB = ["jobs/train_classifier.py", "--demo"]
CTR_JOB = ["jobs/train_ctr.py", "--demo", "--model", "deepfm", "--embedding-dim", "4", "--epochs", "3"]


def run_job(args, output):
    """Run a demo job into ``output``; raises with its last lines when it fails."""
    done = subprocess.run([sys.executable] + args + ["--overwrite", "--output", output], cwd=report.ROOT,
                          env=report.child_env(), capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise SystemExit("%s failed (exit %d):\n%s" % (" ".join(args), done.returncode, done.stderr[-3000:]))


def folder_bytes(path):
    """Bytes of every file below ``path``."""
    return sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(path) for name in names)


def mlp_rows(folder):
    """(what, bytes) of the MLP demo: its saved SparkModel folder and its ONNX graph."""
    from sparkps.onnx import export_model
    model_dir = os.path.join(folder, "model")
    params = sorted(glob.glob(os.path.join(model_dir, "model-*.params")))[-1]
    onnx_path = export_model(os.path.join(model_dir, "model-symbol.json"), params, {"data": (1, 64)},
                             os.path.join(folder, "mlp.onnx"))
    return [("MLP 64-64-10: saved model folder (`model/`)", folder_bytes(model_dir)),
            ("MLP 64-64-10: `mlp.onnx`", os.path.getsize(onnx_path))]


def ctr_rows(folder):
    """(what, bytes) of the CTR demo: its saved pipeline model, its ONNX graph, and each export_tables file."""
    from pyspark.sql import SparkSession

    from sparkps.onnx import export_model
    from sparkps.spark.ml import SparkpsCTRModel
    from sparkps.spark.ml.ctr_classifier import stats_from_json
    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    try:
        model_dir = os.path.join(folder, "model")
        model = SparkpsCTRModel.load(model_dir)
        tables = os.path.join(folder, "tables")
        manifest = model.export_tables(tables, overwrite=True)
        spec = model.feature_spec(stats_from_json(model.getOrDefault("numericStats")))
        weights = model.spark_model
        onnx_path = export_model(weights.symbol, (weights.arg_params, weights.aux_params), spec.input_shapes(1),
                                 os.path.join(folder, "ctr.onnx"), fields=spec)
    finally:
        spark.stop()
    shapes = ", ".join("%s %d rows × %d" % (name, t["rows"], t["dim"])
                       for name, t in sorted(manifest["tables"].items()))
    rows = [("DeepFM (%s): saved pipeline model (`model/`)" % shapes, folder_bytes(model_dir)),
            ("DeepFM: `ctr.onnx` (no table rows)", os.path.getsize(onnx_path))]
    rows += [("DeepFM: `export_tables` %s" % name, os.path.getsize(os.path.join(tables, name)))
             for name in sorted(os.listdir(tables))]
    return rows


SECTIONS = ("export_sizes",)


def render(run):
    """The section of a run record (pure function of it)."""
    return markdown(run["data"]["rows"], run["command"])


def markdown(rows, command):
    lines = ["Written by `%s`." % command, "",
             "| what | bytes |", "|---|---|"]
    lines += ["| %s | %d |" % (what, size) for what, size in rows]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = report.add_output_args(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    args = parser.parse_args(argv)
    run = report.Run("export_sizes", argv)
    with tempfile.TemporaryDirectory(prefix="sparkps-export-sizes-") as folder:
        mlp, ctr = os.path.join(folder, "mlp"), os.path.join(folder, "ctr")
        run_job(MLP_JOB, mlp)
        run_job(CTR_JOB, ctr)
        rows = mlp_rows(mlp) + ctr_rows(ctr)
    print(run.publish(args, "export_sizes", {"rows": rows}, render, doc=DOC))


if __name__ == "__main__":
    main()
