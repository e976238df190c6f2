"""Every generated section of docs/*.md (benchmarks/report.py's writer) names a command that regenerates it, that
command's benchmark parses its arguments, and no section was edited by hand since its command wrote it (the body
still has the SHA-256 its end marker records). Sections written before the writer recorded a digest are listed in
AWAITING with the command that regenerates them; the list must be exactly the sections without a valid digest, so
it only shrinks as they are regenerated. The benchmarks are imported and their argument parsers run; nothing else
of them runs."""
import argparse
import glob
import importlib
import os
import shlex
import sys

import pytest

from benchmarks import report

# section (docs file:name) -> the command that regenerates it, for each section not yet rewritten by the writer
# that records a digest. Remove an entry when its command has rewritten the section.
AWAITING = {
    "docs/benchmarks.md:gpu": "python -m benchmarks.bench_gpu --write-docs --repeats 11 --steps 50",
}


def all_sections():
    found = []
    for doc in sorted(glob.glob(os.path.join(report.ROOT, "docs", "*.md"))):
        found += report.read_sections(doc)
    return found


SECTIONS = all_sections()


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
