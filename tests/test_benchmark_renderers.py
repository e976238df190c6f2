"""The benchmarks' renderers are pure functions of a run record: the same record renders the same section, after a
JSON round trip too, and the figures a section puts in bold come from the medians it shows. The records here are
made by hand in the shape each benchmark's main writes; nothing is measured."""
import argparse
import json

import pytest

from benchmarks import bench_ctr, bench_ctr_quality, bench_sparse, report


def record(module, section, data, command=None):
    """A run record of ``module`` holding ``data``, as report.Run.record makes it."""
    return json.loads(json.dumps({
        "section": section, "module": module, "command": command or report.command(module),
        "doc": "docs/benchmarks.md", "commit": "0123456789ab", "changed": [],
        "load": {"start": [1.0, 1.0, 1.0], "end": [3.0, 2.0, 1.0]}, "started": "2026-11-29 08:00 UTC",
        "finished": "2026-11-29 08:10 UTC", "machine": report.machine(), "data": data}))


def sparse_record():
    index = {"build_s": 2.0, "lookup_s": 0.001, "insert_s": 0.002, "bytes_per_id": 24.0, "lookup_ids": 20000,
             "lookup_runs": [0.001] * 3, "insert_runs": [0.002] * 3}
    step = {"unique_rows": 20405, "numpy_s": 0.0301, "table_s": 0.0344,             # medians: 0.0301 / 0.0344
            "numpy_runs": [0.0301, 0.0400, 0.0250], "table_runs": [0.0344, 0.0300, 0.0300]}
    memory = {"rows": 1000, "bytes": 160000, "rss": 200000, "raw": 128000, "goal": 182400, "save_s": 0.1,
              "load_s": 0.2}
    options = {"rows": 1000, "batch": 64, "fields": 4, "repeat": 3, "seed": 0, "tcp_only": False}
    return record("bench_sparse", "sparse", {"options": options, "index": {"HashRowIndex": index,
                                                                          "SortedRowIndex": index},
                                             "step": step, "memory": memory})


def test_the_sparse_sections_bold_ratio_is_the_ratio_of_the_medians_it_shows():
    text = bench_sparse.render(sparse_record())
    assert "| numpy baseline | 30.1 |" in text and "| SparseTable.pull + push | 34.4 |" in text
    assert "**0.88**" in text                                 # 0.0301 / 0.0344, not a median of per-round ratios
    assert "(per-round ratios 0.83–1.33 over 3 rounds)" in text
    assert "1.0 at the start of the run, 3.0 at its end" in text


def test_a_renderer_gives_the_same_section_for_the_same_record():
    run = sparse_record()
    again = json.loads(json.dumps(run))
    assert bench_sparse.render(run) == bench_sparse.render(again)
    block = report.run_block(run, bench_sparse.render(run))
    assert block == report.rendered_block(again)
    assert "load 1.00 1.00 1.00 at start, 3.00 2.00 1.00 at end" in block


def quality_rows():
    def row(model, variant, runs):
        runs = [dict(r, seed=s, logloss=0.5, epochs=3) for s, r in enumerate(runs)]
        return {"model": model, "variant": variant, "summary": bench_ctr_quality.summarise(runs), "note": "",
                "runs": runs}
    return [row("sparkps fm", "default", [{"auc": 0.80, "fit_s": 5.0}, {"auc": 0.81, "fit_s": 4.0},
                                          {"auc": 0.79, "fit_s": 6.0}]),
            row("MLlib LogisticRegression", "default", [{"auc": 0.785, "fit_s": 6.0}, {"auc": 0.80, "fit_s": 7.0},
                                                        {"auc": 0.78, "fit_s": 8.0}])]


def test_the_quality_section_gives_medians_and_the_seeds_spread_against_each_target():
    args = bench_ctr_quality.parse_args(["--seeds", "0,1,2", "--noise", "0", "--movielens", "off"])
    data = {"options": report.options(args), "kind": "quality", "grids": bench_ctr_quality.grids_of_run(),
            "rows": quality_rows(),
            "dataset": {"name": "planted, noise 0", "slug": "planted_noise0", "noise": 0.0, "ceiling": 0.83,
                        "pipeline_s": 2.0, "train_rows": 1000, "test_rows": 250}}
    text = bench_ctr_quality.render(record("bench_ctr_quality", "ctr_quality_planted_noise0", data))
    assert "| sparkps fm | default | 0.8000 | 0.0200 | 0.5000 | 3.0 | 5.0 [4.0–6.0] |" in text
    # per seed: margins +0.015, +0.010, +0.010; speed (6+2)/5, (7+2)/4, (8+2)/6
    assert "- sparkps fm: AUC +0.0100 [+0.0100, +0.0150] against MLlib's best; 1.67x [1.60–2.25] MLlib " \
           "LogisticRegression's fit + pipeline; missed; the seeds' spread crosses the speed target" in text
    assert "the race's rounds" in text


def test_a_published_ctr_quality_race_needs_three_seeds_and_no_cache_of_earlier_runs():
    with pytest.raises(SystemExit):
        bench_ctr_quality.parse_args(["--seeds", "0,1", "--write-docs"])
    with pytest.raises(SystemExit):
        bench_ctr_quality.parse_args(["--seeds", "0,1,2", "--write-docs", "--mllib-cache", "runs.json"])


def test_the_ctr_sections_fit_column_gives_the_rounds_spread():
    args = bench_ctr.parse_args(["--rows", "1000", "--candidates", "1", "--systems", "numpy,mllib"])
    def round_(fit, mllib_fit):
        return [{"system": "one process, hand-written numpy FM loop", "settings": "s", "auc": 0.7, "fit_s": fit,
                 "samples_per_s": 100.0},
                {"system": "MLlib LogisticRegression (one-hot pipeline)", "settings": "maxIter 9, regParam 0.0001",
                 "auc": 0.69, "fit_s": mllib_fit, "pipeline_s": 1.0, "samples_per_s": 10.0, "valid_auc": 0.7}]
    data = {"options": report.options(args), "planted_auc": 0.75,
            "rounds": [round_(1.0, 9.0), round_(3.0, 7.0), round_(2.0, 8.0)]}
    text = bench_ctr.render(record("bench_ctr", "bench_ctr", data))
    assert "| one process, hand-written numpy FM loop | s |  | 0.7000 | 2.0 [1.0–3.0] |" in text
    assert "| 8.0 [7.0–9.0] (1.0) |" in text
    assert "**Interleaved**: 3 rounds" in text
    assert "Machine load at the start and end of the run (`uptime`): 1.0 1.0 1.0 / 3.0 2.0 1.0." in text
    assert isinstance(argparse.Namespace(**data["options"]).lr_iter, int)


def cold_child(cold_fit, warm_fit):
    parts = lambda whole: [["whole fit", whole], ["before the stage (checks, statistics)", whole / 2]]  # noqa: E731
    from benchmarks.profile_ctr_fit import PROCESS_PARTS
    return {"process": dict.fromkeys(PROCESS_PARTS, 5.0), "cold": parts(cold_fit), "warm": parts(warm_fit)}


def test_the_cold_fit_table_gives_each_parts_median_and_range_and_the_ratio():
    from benchmarks import profile_ctr_fit
    options = {"rows": 4000, "epochs": 1, "batch_size": 512, "vocab": 1000, "lr": 0.02, "model": "fm",
               "validation_fraction": 0.1, "cold": True, "cold_repeat": 4}
    runs = {"machine's kernel cache": [cold_child(13.0, 10.0), cold_child(12.0, 10.0)],
            "empty kernel cache": [cold_child(40.0, 10.0), cold_child(30.0, 10.0)]}
    text = profile_ctr_fit.render(record("profile_ctr_fit", "profile_ctr_fit", {
        "options": options, "parts": [["whole fit", 10.0]], "jobs": 3, "cold": runs}))
    assert text.index("#### machine's kernel cache (2 processes)") < text.index("#### empty kernel cache (2 processes)")
    assert text.index("| process start (") < text.index("| JVM and session start |")     # as measured, not sorted
    assert "| whole fit | 12.50 [12.00-13.00] | 10.00 [10.00-10.00] |" in text
    assert "| - before the stage (checks, statistics) | 6.25 [6.00-6.50] | 5.00 [5.00-5.00] |" in text
    assert "Cold fit / warm fit: 1.25x [1.20x-1.30x]" in text and "Cold fit / warm fit: 3.50x [3.00x-4.00x]" in text
    without = profile_ctr_fit.render(record("profile_ctr_fit", "profile_ctr_fit", {
        "options": options, "parts": [["whole fit", 10.0]], "jobs": 3}))
    assert "cold fit" not in without.lower()


def test_the_scoring_sections_ratio_is_the_ratio_of_the_median_passes():
    from benchmarks import bench_scoring
    models = {"sparkps FM, tables as shard files": {"seconds": [2.0, 4.0, 1.0], "rows": 1000, "worker_peak": 2**29},
              "MLlib LogisticRegression": {"seconds": [1.0, 1.0, 8.0], "rows": 1000, "worker_peak": 0}}
    run = record("bench_scoring", "bench_scoring", {"repeats": 3, "notes": ["MovieLens 100K: not run."], "sets": [
        {"set": "generated, 1000000 ids", "rows": 1000, "table_rows": 1200000, "models": models,
         "driver_peak": 2**30}]})
    text = bench_scoring.render(run)
    assert text == bench_scoring.render(json.loads(json.dumps(run)))
    assert "| generated, 1000000 ids | 1200000 | 1000 | sparkps FM, tables as shard files | 500 | 250-1000 | 0.50x " \
           "| 512 MB | 1024 MB |" in text                     # median 2 s against MLlib's median 1 s
    assert "| MLlib LogisticRegression | 1000 | 125-1000 | 1.00x |" in text and "MovieLens 100K: not run." in text
