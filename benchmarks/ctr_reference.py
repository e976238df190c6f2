"""What the CTR quality benchmarks share: a data set's rows as arrays (hashed ids, standardised numbers, labels),
the PyTorch reference fits (``benchmarks/torch_deepfm.py`` in a Python with torch) and a JSON cache of runs."""
import os

import numpy as np

from benchmarks import report


def featurised(dataset):
    """{'train', 'test'}: (inputs builder args) of a bench_ctr_quality data set: hashed ids, standardised numbers
    (training statistics, log-mapped as the estimator does) and labels."""
    from sparkps.ctr.hashing import hash_fields
    from sparkps.ctr.numeric import NumericStats
    cats, nums = dataset["categorical"], dataset["numeric"]

    def arrays(frame):
        ids = hash_fields(cats, [frame[c].to_numpy(object) for c in cats])
        numeric = frame[nums].to_numpy(np.float64) if nums else None
        return ids, numeric, frame["label"].to_numpy(np.float32)
    train, test = arrays(dataset["train"]), arrays(dataset["test"])
    if nums:
        stats = NumericStats.fit(train[1], nums, log=True)
        train = (train[0], stats.transform(train[1]).astype(np.float32), train[2])
        test = (test[0], stats.transform(test[1]).astype(np.float32), test[2])
    return {"train": train, "test": test}


def torch_ready(python):
    """Whether ``python`` imports torch (the PyTorch reference rows); prints why not."""
    import subprocess
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        print("bench_ctr_quality: no PyTorch rows: %s cannot import torch (a development extra: install it into a "
              "separate environment and pass --torch-python)" % python, flush=True)
    return probe.returncode == 0


def torch_run(python, dataset, model, epochs, seed, embeddings="dense"):
    """The PyTorch reference (benchmarks/torch_deepfm.py) of zoo model ``model`` ('fm' or 'deepfm') at the
    estimator's default width, batch and learning rate, trained ``epochs`` epochs on every training row, 2
    threads: {auc, logloss, epochs, fit_s}. ``embeddings`` 'dense': ``nn.Embedding`` under Adam, no
    regularisation; 'sparse': ``nn.Embedding(sparse=True)`` under SparseAdam with the estimator's default dropout
    and embeddingL2 (torch_deepfm.py's ``--embeddings``). Blocks on the subprocess."""
    import json
    import subprocess
    import tempfile

    from sparkps.nets.ctr_defaults import CTR_DEFAULTS as d
    arrays = featurised(dataset)
    (train_ids, train_num, train_y), (test_ids, test_num, test_y) = arrays["train"], arrays["test"]
    hashed = np.concatenate([train_ids, test_ids])
    _, ids = np.unique(hashed, return_inverse=True)
    rows = len(train_y)
    numeric = np.concatenate([train_num, test_num]) if train_num is not None else np.zeros((len(hashed), 0))
    labels = np.concatenate([train_y, test_y])
    with tempfile.TemporaryDirectory(prefix="bench-ctr-quality-torch-") as folder:
        path = os.path.join(folder, "rows.npz")
        np.savez(path, ids=ids.reshape(hashed.shape).astype(np.int64), numeric=numeric.astype(np.float32),
                 labels=labels, train_rows=rows)
        done = subprocess.run([python, os.path.join(report.ROOT, "benchmarks", "torch_deepfm.py"), path, "--model",
                               model, "--dim", str(d["embeddingDim"]), "--hidden", ",".join(map(str, d["hiddenUnits"])),
                               "--epochs", str(epochs), "--batch-size", str(d["batchSize"]), "--lr",
                               str(d["learningRate"]), "--seed", str(seed), "--threads", "2",
                               "--embeddings", embeddings]
                              + (["--dropout", str(d["dropout"]), "--embedding-l2", str(d["embeddingL2"])]
                                 if embeddings == "sparse" else []),
                              capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("torch_deepfm.py failed: %s" % done.stderr.strip()[-2000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return {"auc": out["auc"], "logloss": out["logloss"], "epochs": epochs, "fit_s": out["fit_s"]}


class RunCache:
    """Runs by key (here MLlib's: data set, training rows, estimator, variant, seed, FM factor sizes), kept in a
    JSON file (``--mllib-cache``) so a later run of the same data sets reuses them: MLlib's do not depend on
    sparkps. No path: nothing kept."""

    def __init__(self, path):
        import json
        self.path, self.runs = path, {}
        if path and os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                self.runs = json.load(f)

    def get(self, key):
        return self.runs.get(repr(key))

    def put(self, key, run):
        import json
        self.runs[repr(key)] = run
        if self.path:
            with open(self.path, "w", encoding="utf-8") as f:
                json.dump(self.runs, f, indent=1)
