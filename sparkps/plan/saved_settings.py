"""The settings ``sparkps plan`` can read from a saved CTR model or estimator (``write().save(path)``, or a
``jobs/train_ctr.py`` output folder, whose model is ``OUTPUT/model``): the optimizer it trains with and its
embedding width. Reads one small JSON file, pyspark.ml's ``metadata/part-00000``; needs no Spark.
"""
import glob
import json
import os


def saved_settings(path):
    """``{"optimizer": name, "dim": width}`` of the pyspark.ml model or estimator saved in local folder ``path``
    (the params it was given, else its defaults); ValueError naming ``path`` when it holds no such metadata.
    Blocks on reading one file."""
    folder = path[len("file:"):] if str(path).startswith("file:") else str(path)
    if not glob.glob(os.path.join(folder, "metadata", "part-*")) and os.path.isdir(os.path.join(folder, "model")):
        folder = os.path.join(folder, "model")        # a train_ctr output folder
    parts = sorted(glob.glob(os.path.join(folder, "metadata", "part-*")))
    if not parts:
        raise ValueError("--model %s holds no saved pyspark.ml model or estimator (no metadata/part-* file): give "
                         "a folder that write().save(path) wrote, or a train_ctr output folder" % path)
    try:
        with open(parts[0], encoding="utf-8") as handle:
            metadata = json.loads(handle.readline())
    except (OSError, ValueError) as exc:
        raise ValueError("--model %s: cannot read %s: %s" % (path, parts[0], exc)) from None
    params = {**metadata.get("defaultParamMap", {}), **metadata.get("paramMap", {})}
    settings = {}
    if params.get("optimizer"):
        settings["optimizer"] = str(params["optimizer"]).lower()
    if params.get("embeddingDim"):
        settings["dim"] = int(params["embeddingDim"])
    return settings
