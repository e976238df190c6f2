"""A program of its own (run by test_stored_models.py in a fresh, empty working directory): a SparkSession whose
Hadoop configuration mounts ``viewfs://cluster/models`` onto a local folder, as a user with no cluster at hand would
try a store Python's ``open()`` cannot read; then CTR and classifier models fitted, saved, loaded and scored
through ``viewfs://`` URIs only. Prints one JSON object of what it saw (the test asserts on it).

    python stored_models_run.py MOUNT_FOLDER MASTER
"""
import json
import os
import sys
import traceback

import numpy as np

MODELS = "viewfs://cluster/models"
COLUMNS = ["site", "app", "device"]


def session(mount, master):
    from pyspark.sql import SparkSession
    spark = (SparkSession.builder.master(master).appName("sparkps-stored-models")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.default.parallelism", "2").config("spark.ui.showConsoleProgress", "false")
             .config("spark.hadoop.fs.viewfs.mounttable.cluster.link./models", "file://" + mount)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def clicks(spark):
    rng = np.random.default_rng(3)
    rows = [(i, float(rng.random() < 0.3 + 0.4 * (i % 7 == 0)), "s%d" % rng.integers(60), "a%d" % rng.integers(40),
             "d%d" % (i % 9)) for i in range(800)]
    return spark.createDataFrame(rows, ["i", "click"] + COLUMNS).repartition(2).cache()


def ctr_classifier(**kwargs):
    from sparkps.spark.ml.classifier import SparkpsCTRClassifier
    settings = dict(labelCol="click", categoricalCols=COLUMNS, model="fm", embeddingDim=4, numEpochs=1,
                    batchSize=64, learningRate=0.05, numWorkers=2, numServers=2, validationFraction=0.0, seed=4)
    settings.update(kwargs)
    return SparkpsCTRClassifier(**settings)


def probabilities(model, frame):
    rows = model.transform(frame).select("i", "probability").collect()
    return [float(r.probability[1]) for r in sorted(rows, key=lambda r: r.i)]


def listing(folder):
    """Every file under ``folder``, relative, Hadoop's .crc files left out."""
    found = []
    for root, _, names in os.walk(folder):
        found += [os.path.relpath(os.path.join(root, n), folder) for n in names if not n.endswith(".crc")]
    return sorted(found)


def error_of(call):
    """'Type: message' of what ``call()`` raised, or None."""
    try:
        call()
    except Exception as exc:      # the test asserts on the type and the message
        return "%s: %s" % (type(exc).__name__, exc)
    return None


def main(mount, master):
    from sparkps.spark.ml.classifier import SparkpsCTRModel
    from sparkps.spark.model.spark_model import SparkModel
    spark = session(mount, master)
    out = {}
    spark.range(10).write.parquet(MODELS + "/spark-check")           # Spark's own writer lands in the mount
    out["spark_check"] = any(n.endswith(".parquet") for n in os.listdir(os.path.join(mount, "spark-check")))
    frame = clicks(spark)

    sharded = ctr_classifier(inlineTablesMB=0.0).fit(frame)            # tables stay the servers' shard files
    out["sharded_before"] = probabilities(sharded, frame)
    sharded.write().overwrite().save(MODELS + "/ctr-sharded")
    out["sharded_files"] = listing(os.path.join(mount, "ctr-sharded"))
    loaded = SparkpsCTRModel.load(MODELS + "/ctr-sharded")
    out["sharded_tables_folder"] = loaded.spark_model.tables_folder
    out["sharded_after"] = probabilities(loaded, frame)
    loaded.write().overwrite().save(MODELS + "/ctr-sharded-copy")    # from the store to the store
    out["sharded_copy_after"] = probabilities(SparkpsCTRModel.load(MODELS + "/ctr-sharded-copy"), frame)
    out["sharded_again"] = error_of(lambda: sharded.write().save(MODELS + "/ctr-sharded"))

    inline = ctr_classifier().fit(frame)                                # small tables: inside the model
    out["inline_before"] = probabilities(inline, frame)
    inline.write().save(MODELS + "/ctr-inline")
    out["inline_files"] = listing(os.path.join(mount, "ctr-inline"))
    out["inline_after"] = probabilities(SparkpsCTRModel.load(MODELS + "/ctr-inline"), frame)

    weights = SparkModel.load(MODELS + "/ctr-sharded/weights")         # a SparkModel by itself
    weights.save(MODELS + "/spark-model")
    out["spark_model_files"] = listing(os.path.join(mount, "spark-model"))
    again = SparkModel.load(MODELS + "/spark-model")
    out["spark_model_saved_path"] = again.saved_path
    out["spark_model_epoch"] = [weights.epoch, again.epoch]

    out["unknown_scheme"] = error_of(lambda: inline.write().save("nosuchfs://bucket/models/m"))
    out["missing_model"] = error_of(lambda: SparkpsCTRModel.load(MODELS + "/no-such-model"))
    out["missing_weights"] = error_of(lambda: SparkModel.load(MODELS + "/spark-check"))
    out["cwd_files"] = listing(os.getcwd())
    spark.stop()
    return out


if __name__ == "__main__":
    try:
        result = main(os.path.abspath(sys.argv[1]), sys.argv[2])
    except Exception:
        result = {"failed": traceback.format_exc()}
    print("RESULT " + json.dumps(result))
