"""The layering rules of docs/architecture.md, read from the source with ``ast`` (every import, including
those inside functions): arrows point down only.

A rule names the modules it covers (by dotted prefix), the imports they may not make, and what is allowed
anyway. A rule is checked over the real tree, and the checker itself is shown to fail on a planted import.
"""
import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# (rule, modules covered, forbidden import prefixes, allowed exceptions as {(module, imported)})
RULES = [
    ("only sparkps.spark imports pyspark", ["sparkps"], ["pyspark", "py4j"], set()),
    ("only sparkps.backend imports cupy", ["sparkps"], ["cupy", "cupyx"], set()),
    ("symbol never imports the parameter server or the layers above it", ["sparkps.symbol"],
     ["sparkps.ps", "sparkps.kvstore", "sparkps.train", "sparkps.spark", "sparkps.runtime", "sparkps.cli",
      "sparkps.nets", "zmq"], set()),
    ("comm imports only zmq, msgpack, numpy, the standard library and sparkps.errors", ["sparkps.ps.comm"],
     ["sparkps.ps.scheduler", "sparkps.ps.server", "sparkps.ps.worker", "sparkps.symbol", "sparkps.train",
      "sparkps.kvstore", "sparkps.spark", "sparkps.runtime", "sparkps.backend"], set()),
    ("the parameter server never imports training (but the optimizers it applies), Spark or the entry points",
     ["sparkps.ps"], ["sparkps.train", "sparkps.spark", "sparkps.runtime", "sparkps.cli", "sparkps.symbol"],
     {("sparkps.ps.server", "sparkps.train.optimizer")}),
    ("training never imports the parameter server, Spark or the entry points", ["sparkps.train"],
     ["sparkps.ps", "sparkps.spark", "sparkps.runtime", "sparkps.cli"], set()),
    ("the worker side never imports sparkps.ps.server", ["sparkps.ps.worker", "sparkps.kvstore", "sparkps.train"],
     ["sparkps.ps.server"], set()),
    ("the protocol under both sides imports neither side",
     ["sparkps.ps.protocol", "sparkps.ps.layout", "sparkps.ps.manifest", "sparkps.ps.settings"],
     ["sparkps.ps.server", "sparkps.ps.worker", "sparkps.ps.scheduler", "sparkps.kvstore", "sparkps.train",
      "sparkps.symbol", "sparkps.spark", "sparkps.runtime", "zmq"], set()),
]


def module_name(path, root):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(root, dotted):
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


@functools.cache
def imports_of(path, root):
    """Every module ``path`` imports (absolute dotted names; relative imports resolved, and
    ``from package import module`` counted as the module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(target if alias.name != "*" and is_module(root, target) else base)
    return name, found


def under(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def violations(root, covered, forbidden, allowed, exempt=()):
    """[(module, imported)] of modules under ``covered`` prefixes importing a ``forbidden`` prefix, except
    the ``allowed`` (module prefix, import prefix) pairs."""
    found = []
    for path in sorted((root / "sparkps").rglob("*.py")):
        name, imported = imports_of(path, root)
        if not any(under(name, c) for c in covered) or any(under(name, e) for e in exempt):
            continue
        for target in sorted(imported):
            if any(under(target, f) for f in forbidden) and \
                    not any(under(name, m) and under(target, t) for m, t in allowed):
                found.append((name, target))
    return found


def exempt_for(rule):
    if "pyspark" in rule:
        return ("sparkps.spark",)
    if "cupy" in rule:
        return ("sparkps.backend",)
    return ()


@pytest.mark.parametrize("rule,covered,forbidden,allowed", RULES, ids=[r[0] for r in RULES])
def test_the_tree_keeps_the_rule(rule, covered, forbidden, allowed):
    assert violations(ROOT, covered, forbidden, allowed, exempt_for(rule)) == [], rule


def plant(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if str(parent) != ".":
            (root / parent / "__init__.py").touch()
    path.write_text(text)


@pytest.mark.parametrize("relative,text,rule_index,culprit", [
    ("sparkps/train/feedforward.py", "def fit():\n    import pyspark.sql\n", 0, "pyspark.sql"),
    ("sparkps/symbol/graph.py", "from sparkps.ps.worker import kvworker\n", 2, "sparkps.ps.worker.kvworker"),
    ("sparkps/symbol/ops/nn.py", "from ...ps import server\n", 2, "sparkps.ps.server"),
    ("sparkps/ps/worker/kvworker.py", "from sparkps.ps.server.store import ServerStore\n", 6,
     "sparkps.ps.server.store"),
    ("sparkps/ps/comm/van.py", "from ..scheduler import state\n", 3, "sparkps.ps.scheduler.state"),
])
def test_a_planted_forbidden_import_is_caught(tmp_path, relative, text, rule_index, culprit):
    rule, covered, forbidden, allowed = RULES[rule_index]
    plant(tmp_path, "sparkps/spark/trainer.py", "import pyspark\n")          # allowed where it belongs
    for module in ("ps/server/store.py", "ps/scheduler/state.py", "ps/worker/kvworker.py"):
        plant(tmp_path, f"sparkps/{module}", "")
    plant(tmp_path, relative, text)
    found = violations(tmp_path, covered, forbidden, allowed, exempt_for(rule))
    assert [target for _, target in found] == [culprit], found


def test_every_sparkps_module_parses_and_the_rules_cover_real_packages():
    names = {module_name(p, ROOT) for p in (ROOT / "sparkps").rglob("*.py")}
    for rule, covered, _, _ in RULES:
        assert all(any(under(n, c) for n in names) for c in covered), rule
