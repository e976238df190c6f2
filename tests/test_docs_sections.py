"""Every generated section of docs/*.md (benchmarks/report.py's writer) names a command that regenerates it, that
command's benchmark parses its arguments, and no section was edited by hand since its command wrote it (the body
still has the SHA-256 its end marker records). Sections written before the writer recorded a digest are listed in
AWAITING with the command that regenerates them; the list must be exactly the sections without a valid digest, so
it only shrinks as they are regenerated. The benchmarks are imported and their argument parsers run; nothing else
of them runs.

A section comes from a run: benchmarks/results/NAME.json holds the run's raw data, and the section must be exactly
what its benchmark's renderer makes of that file (header included: command, commit, load at start and end,
machine), a section its module declares it writes, from a run without uncommitted changes to sparkps/ or
benchmarks/. Sections written before runs left their data are listed by name in AWAITING_RUN_DATA; the list must be
exactly the sections without a run file, so it only shrinks as sections are regenerated."""
import argparse
import glob
import importlib
import os
import shlex
import subprocess
import sys

import pytest

from benchmarks import report

# section (docs file:name) -> the command that regenerates it, for each section not yet rewritten by the writer
# that records a digest. Remove an entry when its command has rewritten the section.
AWAITING = {
    "docs/benchmarks.md:gpu": "python -m benchmarks.bench_gpu --write-docs --repeats 11 --steps 50",
}


# sections written before their runs left run data in benchmarks/results/; drop an entry when its command has
# rewritten the section (the test below fails until it is dropped)
AWAITING_RUN_DATA = [
    "docs/benchmarks.md:ps", "docs/benchmarks.md:executor", "docs/benchmarks.md:vs_mllib",
    "docs/benchmarks.md:ps_floor", "docs/benchmarks.md:sparse_embedding", "docs/benchmarks.md:sparse",
    "docs/benchmarks.md:strategies", "docs/benchmarks.md:sparse_tcp", "docs/benchmarks.md:bench_ctr",
    "docs/benchmarks.md:resume", "docs/benchmarks.md:sparse_compaction", "docs/benchmarks.md:gpu",
    "docs/benchmarks.md:ctr_quality_planted_noise0.3", "docs/benchmarks.md:ctr_quality_planted_noise0",
    "docs/benchmarks.md:ctr_quality_movielens", "docs/benchmarks.md:fused_step",
    "docs/benchmarks.md:ctr_sweep_planted_noise0.3", "docs/benchmarks.md:ctr_sweep_movielens",
    "docs/benchmarks.md:ctr_quality_workers_movielens_fm", "docs/benchmarks.md:ctr_quality_workers_movielens_deepfm",
    "docs/benchmarks.md:ctr_quality_planted_noise0_10k", "docs/benchmarks.md:ctr_sweep_planted_noise0",
    "docs/benchmarks.md:ctr_quality_planted_noise0_1m", "docs/benchmarks.md:profile_ctr_steps",
    "docs/benchmarks.md:nonfinite", "docs/benchmarks.md:bench_big_table",
    "docs/ctr.md:same_seed", "docs/export.md:mlflow_log",
    "docs/scale.md:scale", "docs/scale.md:many_nodes", "docs/scale.md:many_nodes_spark",
    "docs/security.md:frame_attack", "docs/security.md:security", "docs/tables.md:inline_threshold",
]


def all_sections():
    found = []
    for doc in sorted(glob.glob(os.path.join(report.ROOT, "docs", "*.md"))):
        found += report.read_sections(doc)
    return found


SECTIONS = all_sections()
RUNS = report.read_runs()


class Parsed(Exception):
    """Raised in place of running a benchmark once its argument parser accepted the arguments."""


def parse_command(line, monkeypatch):
    """Run the argument parser of the benchmark ``line`` (``python -m benchmarks.NAME ...``) names, and nothing
    after it; returns the parsed namespace. A parser that refuses the arguments exits (SystemExit)."""
    words = shlex.split(line)
    assert words[:2] == ["python", "-m"] and words[2].startswith("benchmarks."), line
    assert "--write-docs" in words[3:], "%s: no --write-docs" % line
    module = importlib.import_module(words[2])
    original = argparse.ArgumentParser.parse_args

    def parse_then_stop(self, args=None, namespace=None):
        raise Parsed(original(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    monkeypatch.setattr(sys, "argv", [words[2]] + words[3:])
    entry = getattr(module, "parse_args", None) or module.main
    with pytest.raises(Parsed) as parsed:
        entry()
    return parsed.value.args[0]


def test_docs_hold_generated_sections():
    assert len(SECTIONS) >= 30
    keys = [s.key for s in SECTIONS]
    assert len(keys) == len(set(keys)), "a section name appears twice in one file"


@pytest.mark.parametrize("doc", sorted(glob.glob(os.path.join(report.ROOT, "docs", "*.md"))),
                         ids=os.path.basename)
def test_every_marker_belongs_to_a_section(doc):
    """A marker edited out of shape would hide its section from the checks above."""
    text = open(doc, encoding="utf-8").read()
    parsed = report.read_sections(doc)
    legacy = sum(1 for s in parsed if s.name in report.LEGACY and report.LEGACY[s.name][0] in text)
    assert text.count("<!-- bench:") == text.count("<!-- /bench:") == len(parsed) - legacy
    for begin, end in report.LEGACY.values():
        assert text.count(begin) == text.count(end) <= 1


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.key)
def test_a_sections_command_exists_and_parses(section, monkeypatch):
    line = section.command if section.intact else AWAITING.get(section.key)
    assert line, "%s: no valid digest and no command in AWAITING" % section.key
    args = parse_command(line, monkeypatch)
    assert args.write_docs


def test_the_awaiting_list_is_exactly_the_sections_without_a_valid_digest():
    unchecked = {s.key for s in SECTIONS if not s.intact}
    assert not unchecked - set(AWAITING), "edited by hand or written without a digest: %s" % sorted(
        unchecked - set(AWAITING))
    assert not set(AWAITING) - unchecked, "regenerated or gone, drop from AWAITING: %s" % sorted(
        set(AWAITING) - unchecked)


@pytest.mark.parametrize("section", [s for s in SECTIONS if s.intact], ids=lambda s: s.key)
def test_a_regenerated_section_has_a_header_line(section):
    head = report.GENERATED.match(section.body)
    assert head and head.group("command") == section.command
    assert head.group("commit") and head.group("load") and head.group("date")


def test_an_edit_by_hand_breaks_the_digest(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Title\n\nProse.\n")
    report.write_section("speed", "| x | s |\n|---|---|\n| a | 1.25 |", doc=str(doc),
                         command="python -m benchmarks.bench_executor --write-docs")
    (written,) = report.read_sections(str(doc))
    assert written.intact and written.command == "python -m benchmarks.bench_executor --write-docs"
    doc.write_text(doc.read_text().replace("1.25", "1.20"))
    (edited,) = report.read_sections(str(doc))
    assert not edited.intact


def test_rewriting_replaces_the_section_in_place(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("before\n\n<!-- bad-input -->\nold table\n<!-- /bad-input -->\n\nafter\n")
    report.write_section("bad_input", "new table", doc=str(doc),
                         command="python -m benchmarks.bad_input_table --write-docs")
    report.write_section("bad_input", "newer table", doc=str(doc),
                         command="python -m benchmarks.bad_input_table --write-docs")
    text = doc.read_text()
    assert text.startswith("before\n\n<!-- bench:bad_input -->\n_Generated by ") and text.endswith(" -->\n\nafter\n")
    assert "old table" not in text and "new table" not in text and text.count("newer table") == 1
    (section,) = report.read_sections(str(doc))
    assert section.intact


def test_a_section_is_written_without_trailing_blanks(tmp_path):
    doc = tmp_path / "doc.md"
    report.write_section("speed", "| a | 1.25 |  \nnote \n", doc=str(doc),
                         command="python -m benchmarks.bench_executor --write-docs")
    assert not [line for line in doc.read_text().splitlines() if line != line.rstrip()]
    (written,) = report.read_sections(str(doc))
    assert written.intact


def test_a_section_written_outside_a_git_checkout_still_names_its_command(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "commit", lambda: "unknown")
    doc = tmp_path / "doc.md"
    report.write_section("speed", "1.0", doc=str(doc), command="python -m benchmarks.bench_executor --write-docs")
    (written,) = report.read_sections(str(doc))
    assert written.intact and written.command == "python -m benchmarks.bench_executor --write-docs"


def test_a_section_needs_a_command(tmp_path):
    with pytest.raises(ValueError, match="no command regenerates it"):
        report.write_section("speed", "1.0", doc=str(tmp_path / "doc.md"))


def test_a_parser_that_refuses_the_arguments_fails(monkeypatch):
    with pytest.raises(SystemExit):
        parse_command("python -m benchmarks.bench_executor --write-docs --no-such-option", monkeypatch)


# run data: every section is rendered from its run file, or awaits regeneration by name

def test_every_section_is_rendered_from_run_data_or_awaits_regeneration():
    names = [s.name for s in SECTIONS]
    assert len(names) == len(set(names)), "a section name appears in two docs files (run files are named by section)"
    assert len(AWAITING_RUN_DATA) == len(set(AWAITING_RUN_DATA))
    with_data = {s.key for s in SECTIONS if s.name in RUNS}
    without = {s.key for s in SECTIONS} - with_data
    assert not without - set(AWAITING_RUN_DATA), "no run data and not awaiting regeneration: %s" % sorted(
        without - set(AWAITING_RUN_DATA))
    assert not with_data & set(AWAITING_RUN_DATA), "rendered from run data now, drop from AWAITING_RUN_DATA: %s" % (
        sorted(with_data & set(AWAITING_RUN_DATA)))
    assert not set(AWAITING_RUN_DATA) - {s.key for s in SECTIONS}, "gone, drop from AWAITING_RUN_DATA: %s" % sorted(
        set(AWAITING_RUN_DATA) - {s.key for s in SECTIONS})


def test_every_run_file_has_its_section():
    keys = {s.key for s in SECTIONS}
    orphans = ["%s:%s" % (run["doc"], name) for name, run in RUNS.items() if "%s:%s" % (run["doc"], name) not in keys]
    assert not orphans, "run data without its section: %s" % orphans


@pytest.mark.parametrize("section", [s for s in SECTIONS if s.name in RUNS], ids=lambda s: s.key)
def test_a_section_is_its_run_data_rendered(section):
    run = RUNS[section.name]
    assert run["doc"] == os.path.relpath(section.doc, report.ROOT)
    assert report.run_problems(run, section) == []


def section_writers():
    """{module name: source} of every benchmark module that writes a section."""
    found = {}
    for path in sorted(glob.glob(os.path.join(report.ROOT, "benchmarks", "*.py"))):
        source = open(path, encoding="utf-8").read()
        name = os.path.basename(path)[:-3]
        if name != "report" and (".publish(" in source or "write_section(" in source):
            found[name] = source
    return found


def test_every_benchmark_that_writes_a_section_renders_it_from_run_data():
    writers = section_writers()
    assert len(writers) >= 20
    for name, source in writers.items():
        assert "write_section(" not in source, "%s writes a section without its run data" % name
        assert "report.Run(" in source, "%s publishes no run record" % name
        module = importlib.import_module("benchmarks." + name)
        assert module.SECTIONS and callable(module.render), name


def section_module(section):
    line = section.command if section.intact else AWAITING.get(section.key)
    return shlex.split(line)[2][len("benchmarks."):]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda s: s.key)
def test_a_section_is_one_its_command_declares_it_writes(section):
    name = section_module(section)
    assert report.declares(importlib.import_module("benchmarks." + name), section.name), (
        "%s: benchmarks.%s does not declare it writes it" % (section.key, name))


def test_check_names_stale_and_loaded_sections(tmp_path):
    head = report.tree_state()[0]
    doc = tmp_path / "doc.md"
    def git(*args):
        return subprocess.run(["git", "-C", report.ROOT, *args], capture_output=True, text=True,
                              check=True).stdout.strip()
    last = git("log", "-1", "--format=%H", "--", "benchmarks/bench_executor.py")
    old = git("rev-parse", "--short=12", last + "^")      # the commit before bench_executor.py last changed
    doc.write_text("\n\n".join(
        "<!-- bench:%s -->\n_Generated by `python -m benchmarks.bench_executor --write-docs`; commit %s; "
        "load %s 1.00 1.00; 2026-11-28 09:00 UTC; x86_64, 2 cores, Python 3.11.7, Linux_\n\nbody\n"
        "<!-- /bench:%s -->" % (name, commit, load, name)
        for name, commit, load in (("fresh", head, "0.50"), ("loaded", head, "2.50"), ("old", old, "0.50"))))
    found = dict(report.check(docs=[str(doc)], runs={}))
    key = os.path.relpath(str(doc), report.ROOT) + ":"
    assert set(found) == {key + "loaded", key + "old"}
    assert "one-minute load 2.50 on 2 cores" in found[key + "loaded"]
    assert found[key + "old"].startswith("stale") and "benchmarks/bench_executor.py" in found[key + "old"]


def test_measured_files_follow_imports_transitively():
    files = report.measured_files("bench_ps")
    assert "benchmarks/bench_ps.py" in files and "benchmarks/report.py" in files
    assert "sparkps/server/kvserver.py" in files          # through sparkps.kvstore and the server it spawns
    assert "sparkps/spark/ml/ctr_classifier.py" not in files
