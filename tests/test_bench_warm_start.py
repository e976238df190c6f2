"""benchmarks/bench_warm_start without Spark: its drifting stream (new ids appear and old ones fade, the click model
moves a little each day) and its renderer, a pure function of a run record (made by hand; nothing is measured)."""
import json

import numpy as np

from benchmarks import bench_warm_start, report


def test_the_stream_slides_its_user_window_and_keeps_its_sites():
    frames, active = bench_warm_start.drifting_days(3, 5000, users=1000, shift=400, seed=1)
    assert len(frames) == len(active) == 4 and all(len(f) == 5000 for f in frames)
    assert not active[0] & active[3]                                   # the first day's users are gone by day 4
    assert active[1] & active[0] and active[1] - active[0]             # day 2 keeps some, adds new ones
    assert set(frames[0]["site"]) & set(frames[3]["site"])             # sites stay
    assert 0.05 < frames[0]["click"].mean() < 0.6


def day(auc, seconds, rows, added=None, dropped=None):
    return {"auc": auc, "fit_s": seconds, "epochs": 1, "table_rows": rows, "added": added, "kept": 0,
            "dropped": dropped, "driver_rss": 300 * 2**20}


def test_the_renderer_shows_each_days_cold_and_warm_fit():
    data = {"options": {"cold_epochs": 3, "warm_epochs": 1, "forget_days": 2}, "stream": "a drifting stream",
            "days": [{"day": 1, "cold": day(0.70, 30.0, 900), "active_users": 800},
                     {"day": 2, "cold": day(0.71, 30.0, 950), "warm": day(0.74, 12.0, 1200, 300, 0),
                      "forget": day(0.739, 12.5, 1000, 300, 200), "active_users": 1000}]}
    run = json.loads(json.dumps({"section": "warm_start", "module": "bench_warm_start",
                                 "command": report.command("bench_warm_start"), "data": data}))
    text = bench_warm_start.render(run)
    assert "| 2 | 0.7100 | 0.7400 | +0.0300 | 30.0 | 12.0 | 0.40 | 1200 | 300 | 0 | 0.7390, 1000, 200 | 1000 |" \
        in text
    assert text == bench_warm_start.render(json.loads(json.dumps(run)))
    assert bench_warm_start.parse_args(["--quick"]).days == 2 and np.isfinite(bench_warm_start.SETTINGS["seed"])
