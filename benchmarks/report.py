"""Write one benchmark's results into its own section of docs/benchmarks.md.

Each benchmark owns the text between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``; running it again
replaces only that section, so benchmarks can run in any order and in separate processes.
"""
import datetime
import os
import platform
import re

DOC = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "docs", "benchmarks.md")
HEADER = "# Benchmarks\n\nEach section is written by the script it names; rerun the script to refresh it.\n"


def machine_line():
    """A one-line description of where the numbers were taken."""
    return "%s, %s, %d cores, Python %s, %s" % (
        datetime.date.today().isoformat(), platform.machine(), os.cpu_count() or 0,
        platform.python_version(), platform.platform(terse=True))


def write_section(name, markdown, doc=DOC):
    """Replace (or append) the section ``name`` of docs/benchmarks.md with ``markdown``."""
    begin, end = "<!-- bench:%s -->" % name, "<!-- /bench:%s -->" % name
    block = "%s\n%s\n\n_Measured: %s_\n%s" % (begin, markdown.strip(), machine_line(), end)
    text = open(doc, encoding="utf-8").read() if os.path.exists(doc) else HEADER
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    with open(doc, "w", encoding="utf-8") as f:
        f.write(text)
