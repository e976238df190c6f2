"""The terms the CTR and MLP benchmarks race on: the validation split, the tuning grids and the pick by validation
AUC (benchmarks/bench_ctr.py), the PyTorch reference's sparse variant (benchmarks/torch_deepfm.py) and the
networks bench_vs_mllib names per row. No Spark; the PyTorch checks run where ``$SPARKPS_TORCH_PYTHON`` imports
torch."""
import json
import os
import subprocess

import numpy as np
import pytest

from benchmarks import bench_ctr, bench_vs_mllib, report, torch_deepfm

TORCH_PYTHON = os.environ.get("SPARKPS_TORCH_PYTHON", "")
HAS_TORCH = bool(TORCH_PYTHON) and subprocess.run([TORCH_PYTHON, "-c", "import torch"],
                                                  capture_output=True).returncode == 0


def test_the_validation_rows_are_the_last_tenth_of_the_training_rows():
    split = bench_ctr.split_rows(1000)
    assert (split.fit, split.train, split.total, split.valid, split.test) == (900, 1000, 1250, 100, 250)
    with pytest.raises(ValueError, match="--rows"):
        bench_ctr.split_rows(10)


def test_a_grid_is_centred_on_the_base_value_and_the_fm_grid_holds_mllibs_default():
    assert bench_ctr.grid(0.02, 3, 4.0) == [0.005, 0.02, 0.08]
    assert bench_ctr.grid(0.02, 1, 4.0) == [0.02]
    assert 1.0 in bench_ctr.grid(0.25, 3, 4.0)
    for bad in (0, 2):
        with pytest.raises(ValueError, match="--candidates"):
            bench_ctr.grid(0.02, bad, 4.0)


def test_every_system_keeps_the_candidate_with_the_best_validation_auc():
    runs = [{"setting": s, "valid_auc": a, "fit_s": 1.0} for s, a in ((1, 0.7), (2, 0.8), (3, 0.8), (4, 0.6))]
    assert bench_ctr.pick(runs)["setting"] == 2          # the first of equals
    row = bench_ctr.tuned(runs, "knob")
    assert row["setting"] == 2 and row["tuning_s"] == 4.0 and [c[0] for c in row["candidates"]] == [1, 2, 3, 4]


def test_the_parser_refuses_an_even_budget_and_unknown_torch_variants():
    assert bench_ctr.parse_args(["--rows", "1000"]).torch_embeddings == ["dense", "sparse"]
    for argv in (["--candidates", "2"], ["--torch-embeddings", "lazy"], ["--systems", "numpy,tf"]):
        with pytest.raises(SystemExit):
            bench_ctr.parse_args(argv)


def row(system, auc, valid=None, **extra):
    return dict({"system": system, "auc": auc, "valid_auc": valid, "fit_s": 10.0, "samples_per_s": 1000.0,
                 "settings": "s"}, **extra)


def test_the_section_states_the_warm_up_and_the_tuning_budget():
    args = bench_ctr.parse_args(["--rows", "1000"])
    run = {"load": {"start": [0.0, 0.0, 0.0], "end": [0.0, 0.0, 0.0]}}      # what the table reads of its run record
    results = [row("sparkps fm (dist_sync)", 0.8, 0.81, setting=0.02, knob="Adam learning rate",
                   candidates=[(0.005, 0.7, 9.0), (0.02, 0.81, 10.0), (0.08, 0.75, 11.0)], tuning_s=30.0),
               row("MLlib FMClassifier (one-hot pipeline)", 0.75, 0.76, setting=1.0, knob="stepSize",
                   candidates=[(0.0625, 0.7, 5.0), (0.25, 0.74, 5.0), (1.0, 0.76, 5.0)], tuning_s=20.0)]
    text = bench_ctr.table(results, args, 0.88, run)
    assert "Warm-up: every system" in text and "3 candidate settings per system" in text
    assert "**0.02: 0.8100 (10.0)**" in text and "**1: 0.7600 (5.0)**" in text
    single = bench_ctr.parse_args(["--rows", "1000", "--candidates", "1"])
    assert "**No tuning**" in bench_ctr.table(results, single, 0.88, run)


def test_the_torch_reference_takes_the_sparse_variant_and_sparkps_regularisation():
    args = torch_deepfm.parse_args(["x.npz", "--embeddings", "sparse", "--dropout", "0.5", "--embedding-l2", "1e-4"])
    assert (args.embeddings, args.dropout, args.embedding_l2) == ("sparse", 0.5, 1e-4)
    for argv in (["x.npz", "--embeddings", "lazy"], ["x.npz", "--dropout", "1"], ["x.npz", "--embedding-l2", "-1"]):
        with pytest.raises(SystemExit):
            torch_deepfm.parse_args(argv)


GRADIENT_CHECK = r"""
import sys, numpy as np, torch
sys.path.insert(0, sys.argv[1])
import torch_deepfm
args = torch_deepfm.parse_args(["x.npz", "--embeddings", "sparse", "--embedding-l2", "0.5", "--model", "fm"])
torch.manual_seed(0)
model, optimizers = torch_deepfm.build(torch, args, 6, 2, 1)
ids, num = torch.tensor([[0, 1], [1, 2]]), torch.zeros(2, 1)
l2 = model(ids, num)[1]
l2.backward()
grad = model.rows.weight.grad.to_dense()
rows = model.rows.weight.detach()
print(float((grad[:3] - 0.5 * rows[:3]).abs().max()), float(grad[3:].abs().max()),
      type(optimizers[0]).__name__, type(optimizers[1]).__name__, model.linear_rows.weight.grad is None)
"""


@pytest.mark.skipif(not HAS_TORCH, reason="needs $SPARKPS_TORCH_PYTHON with torch")
def test_the_sparse_variant_decays_each_read_row_once_and_no_other():
    done = subprocess.run([TORCH_PYTHON, "-c", GRADIENT_CHECK, os.path.join(report.ROOT, "benchmarks")],
                          capture_output=True, text=True, check=True)
    read, unread, tables, dense, linear_untouched = done.stdout.split()
    assert float(read) < 1e-6 and float(unread) == 0.0
    assert (tables, dense, linear_untouched) == ("SparseAdam", "Adam", "True")


@pytest.mark.skipif(not HAS_TORCH, reason="needs $SPARKPS_TORCH_PYTHON with torch")
@pytest.mark.parametrize("embeddings", ["dense", "sparse"])
def test_the_torch_reference_scores_the_validation_rows(tmp_path, embeddings):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 50, (600, 3))
    labels = (rng.random(600) < 1 / (1 + np.exp(-((ids[:, 0] % 2) * 2 - 1)))).astype(np.float32)
    np.savez(tmp_path / "rows.npz", ids=ids, numeric=rng.standard_normal((600, 2)).astype(np.float32),
             labels=labels, train_rows=400, valid_rows=100)
    done = subprocess.run([TORCH_PYTHON, os.path.join(report.ROOT, "benchmarks", "torch_deepfm.py"),
                           str(tmp_path / "rows.npz"), "--embeddings", embeddings, "--batch-size", "64",
                           "--dropout", "0.5", "--embedding-l2", "1e-4", "--warmup-rows", "100", "--threads", "1"],
                          capture_output=True, text=True, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["embeddings"] == embeddings and 0.5 < out["valid_auc"] <= 1.0 and 0.5 < out["auc"] <= 1.0


def vs_mllib_run(fits, numpy_rates=(3.0,)):
    """A run record of bench_vs_mllib holding ``fits`` ({series: [fit with its round]})."""
    return {"command": "python -m benchmarks.bench_vs_mllib --write-docs",
            "load": {"start": [1.0] * 3, "end": [1.5] * 3},
            "machine": {"cores": 2}, "data": {"options": vars(bench_vs_mllib.parse_args([])), "rows": [60000, 10000],
                                              "rounds_per_epoch": 59, "numpy_rates": list(numpy_rates), "fits": fits}}


def test_vs_mllib_names_each_rows_activations_and_precision():
    fit = {"passes": 1, "seconds": 5.0, "accuracy": 0.6, "samples_per_s": 1.0, "steady_samples_per_s": 2.0}
    rounds = [dict(fit, round=r) for r in range(3)]
    text = bench_vs_mllib.render(vs_mllib_run({"sparkps relu": rounds, "sparkps sigmoid": rounds, "MLlib": rounds}))
    assert "| sparkps sigmoid | sigmoid hidden, softmax output, float32 |" in text
    assert "| sparkps relu | relu hidden, softmax output, float32 |" in text
    assert "| MLlib MLP | sigmoid hidden, softmax output, float64 |" in text
    assert bench_vs_mllib.parse_args(["--activations", "sigmoid,relu"]).activations == ["relu", "sigmoid"]
    with pytest.raises(SystemExit):
        bench_vs_mllib.parse_args(["--activations", "tanh"])


def test_vs_mllib_gives_medians_with_their_spread_and_mllib_the_same_budget_in_updates():
    def fit(passes, seconds, accuracy, steady=None, round_=0):
        return {"passes": passes, "seconds": seconds, "accuracy": accuracy, "samples_per_s": 1.0,
                "steady_samples_per_s": steady, "round": round_}
    relu = [fit(1, s, 0.9, steady, r) for r, (s, steady) in enumerate([(4.0, 1.0), (6.0, 2.0), (5.0, 1.8)])]
    mllib = [fit(59, s, 0.8, round_=r) for r, s in enumerate([30.0, 20.0, 25.0])]
    text = bench_vs_mllib.render(vs_mllib_run({"sparkps relu": relu, "MLlib": mllib}, numpy_rates=[2.0, 3.0]))
    assert "| sparkps relu | relu hidden, softmax output, float32 | 1 epoch(s) | 5.0 [4.0–6.0] | 0.9000 |" in text
    assert "| MLlib MLP | sigmoid hidden, softmax output, float64 | maxIter 59 | 25.0 [20.0–30.0] | 0.8000 |" in text
    assert "**5.0x** less time (rounds 3.3–7.5x)" in text               # each round's MLlib fit over its sparkps fit
    assert "| **0.60** (rounds 0.33–0.67; the spread crosses the goal) |" in text     # steady / best numpy rate
    assert bench_vs_mllib.rounds_per_epoch(60000) == 59                   # 2 workers x batch 512 a dist_sync update
    assert bench_vs_mllib.parse_args([]).mllib_iters is None              # derived from the epochs by main
    with pytest.raises(SystemExit):
        bench_vs_mllib.parse_args(["--repeats", "2"])


def test_bench_ctr_gives_mllib_sparkps_budget_in_updates_and_races_in_rounds(spark):
    args = bench_ctr.parse_args(["--rows", "1000", "--epochs", "2", "--batch-size", "100"])
    assert args.lr_iter == args.fm_iter == 2 * 9 and args.repeats == 3     # 900 fit rows: 9 batches an epoch
    heads = bench_ctr.mllib_heads(args)
    fm = heads[1][2][0][2]
    assert fm.getMaxIter() == 18 and fm.getMiniBatchFraction() == pytest.approx(100 / 900)
    with pytest.raises(SystemExit):
        bench_ctr.parse_args(["--rows", "1000", "--repeats", "1"])
    rounds = [[{"system": "sparkps fm (dist_sync)", "fit_s": s, "auc": 0.8, "samples_per_s": 10.0}] for s in (3, 1, 2)]
    (row,) = bench_ctr.combine(rounds)
    assert row["fit_s"] == 2 and row["fit_runs"] == [3, 1, 2]
    slow, fast = {"fit_s": 20.0, "fit_runs": [12.0, 30.0, 20.0]}, {"fit_s": 2.0, "fit_runs": [2.0, 2.0, 2.0]}
    assert bench_ctr.round_ratio(slow, fast, 10.0) == "10.0× (rounds 6.0–15.0×; the spread crosses the 10× target)"
