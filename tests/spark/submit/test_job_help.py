"""The jobs' ``--help`` shows each flag's default once: written in the help text, or added by argparse
(``flags.DefaultsOnceFormatter``), never both."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def flag_helps(job):
    """{flag: its help text, joined} of ``jobs/JOB.py --help`` (no Spark: the job stops after printing it)."""
    done = subprocess.run([sys.executable, os.path.join(ROOT, "jobs", job + ".py"), "--help"], capture_output=True,
                          text=True, timeout=60, env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    entries, current = {}, None
    for line in done.stdout.splitlines():
        found = re.match(r"^  (-[-\w]+)", line)
        if found:
            current = found.group(1)
            entries[current] = line
        elif current and line.startswith("      "):
            entries[current] += " " + line.strip()
        else:
            current = None
    return entries


@pytest.mark.parametrize("job", ["train_ctr", "train_classifier"])
def test_each_flag_shows_its_default_once(job):
    helps = flag_helps(job)
    assert "--max-restarts" in helps and "--epochs" in helps
    twice = {flag: text for flag, text in helps.items() if len(re.findall(r"\bdefault\b", text, re.I)) > 1}
    assert not twice, twice
    assert "(default: 2)" not in helps["--max-restarts"] and "default 2" in helps["--max-restarts"]
