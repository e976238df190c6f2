"""A program of its own (run by test_stored_models.py in a fresh, empty working directory): docs/spark.md's viewfs
example as written (its mount folder and master replaced): a SparkSession whose Hadoop configuration mounts
``viewfs://cluster/models`` onto a local folder, as a user with no cluster at hand would try a store Python's
``open()`` cannot read; then CTR models and a SparkModel fitted, saved, loaded and scored through ``viewfs://`` URIs
only. Prints one JSON object of what it saw (the test asserts on it).

    python stored_models_run.py MOUNT_FOLDER MASTER
"""
import json
import os
import re
import sys
import traceback

MODELS = "viewfs://cluster/models"
COLUMNS = ["site", "app"]
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "docs", "spark.md")


def docs_example(mount, master):
    """The namespace docs/spark.md's python block leaves, run with ``mount`` for its folder, on ``master``."""
    with open(DOCS, encoding="utf-8") as handle:
        block = re.findall(r"```python\n(.*?)```", handle.read(), re.S)[0]
    assert "file:///tmp/sparkps-store" in block and '"local[2]"' in block
    block = block.replace("file:///tmp/sparkps-store", "file://" + mount).replace('"local[2]"', json.dumps(master))
    namespace = {}
    exec(compile(block, "docs/spark.md[0]", "exec"), namespace)
    return namespace


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
    example = docs_example(mount, master)
    spark = example["spark"]
    spark.sparkContext.setLogLevel("ERROR")
    out = {"docs_check": any(n.endswith(".parquet") for n in os.listdir(os.path.join(mount, "check"))),
           "docs_files": listing(os.path.join(mount, "ctr"))}
    spark.range(10).write.parquet(MODELS + "/spark-check")           # Spark's own writer lands in the mount
    out["spark_check"] = any(n.endswith(".parquet") for n in os.listdir(os.path.join(mount, "spark-check")))
    from pyspark.sql import functions as F
    frame = example["clicks"].withColumn("i", F.monotonically_increasing_id()).cache()
    sharded = example["model"]                                          # tables stay the servers' shard files
    out["sharded_before"] = probabilities(sharded, frame)
    sharded.write().overwrite().save(MODELS + "/ctr-sharded")
    out["sharded_files"] = listing(os.path.join(mount, "ctr-sharded"))
    loaded = SparkpsCTRModel.load(MODELS + "/ctr-sharded")
    out["sharded_tables_folder"] = loaded.spark_model.tables_folder
    out["sharded_after"] = probabilities(loaded, frame)
    loaded.write().overwrite().save(MODELS + "/ctr-sharded-copy")    # from the store to the store
    out["sharded_copy_after"] = probabilities(SparkpsCTRModel.load(MODELS + "/ctr-sharded-copy"), frame)
    out["sharded_again"] = error_of(lambda: sharded.write().save(MODELS + "/ctr-sharded"))
    out["export_manifest"] = loaded.export_tables(MODELS + "/export")  # the tables' rows streamed from the store
    out["export_files"] = listing(os.path.join(mount, "export"))

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
    checkpoint = SparkModel.load(MODELS + "/spark-model/model", epoch=again.epoch, input_shape=again.input_shape)
    out["checkpoint_params"] = [sorted(checkpoint.arg_params), sorted(again.arg_params)]

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
