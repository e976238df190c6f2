"""The layering of docs/architecture.md, read from the source with ``ast`` (every import, including those
inside functions): a folder imports only folders on the layers below it, no two folders import each other,
and what a role reaches through other modules (transitively) never includes the other role.

Each check runs over the real tree, and each is shown to fail on a planted import.
"""
import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Top to bottom. A folder may import folders of lower layers only; folders on one layer never import each other.
LAYERS = [
    ["sparkps.cli"],
    ["sparkps.plan"],                  # the sizing model behind `sparkps plan`: arithmetic over the constants
    ["sparkps.spark"],                 # the package's lazy names, and sparkps.spark.ctr: 0.1's saved class path
    ["sparkps.spark.ml"],
    ["sparkps.spark.submit", "sparkps.spark.driver"],
    ["sparkps.spark.task"],
    ["sparkps.spark.model"],
    ["sparkps.spark.common"],
    ["sparkps.worker"],
    ["sparkps.runtime", "sparkps.server", "sparkps.scheduler"],
    ["sparkps.nets", "sparkps.model",      # sparkps.model: MXNet's mx.model names (FeedForward, model files)
     "sparkps.onnx"],                      # MXNet's mx.onnx: ONNX export, beside the model files it reads
    ["sparkps.train"],
    ["sparkps.kvstore", "sparkps.callback", "sparkps.metric", "sparkps.ctr", "sparkps.io"],
    ["sparkps.model_files"],
    ["sparkps.symbol"],
    ["sparkps.rows"],
    ["sparkps.optimizer", "sparkps.nd", "sparkps.initializer", "sparkps.param_group"],
    ["sparkps.lr_scheduler"],
    ["sparkps.backend", "sparkps.comm"],
    ["sparkps.errors", "sparkps"],
]
# (importing module, imported module, why): the only imports that run up a layer, each looked up on first use.
ALLOWED_UP = set()
# Third-party packages only one folder may import.
OWNED = {"pyspark": "sparkps.spark", "py4j": "sparkps.spark", "cupy": "sparkps.backend", "cupyx": "sparkps.backend",
         "zmq": None}
ZMQ_USERS = ["sparkps.comm", "sparkps.scheduler", "sparkps.server", "sparkps.worker", "sparkps.runtime",
             "sparkps.spark", "sparkps.cli"]
# Never reachable from the first, through any chain of imports.
NEVER_REACHES = [
    ("sparkps.worker", "sparkps.server"), ("sparkps.server", "sparkps.worker"),
    ("sparkps.scheduler", "sparkps.server"), ("sparkps.scheduler", "sparkps.worker"),
    ("sparkps.comm", "sparkps.symbol"), ("sparkps.symbol", "sparkps.comm"), ("sparkps.symbol", "zmq"),
    ("sparkps.train", "sparkps.comm"), ("sparkps.kvstore", "sparkps.comm"),
]


def module_name(path, root):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(root, dotted):
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(path, root):
    """Every module ``path`` imports (absolute dotted names; relative imports resolved, and
    ``from package import module`` counted as the module)."""
    return _imports(path, root, path.read_text(encoding="utf-8"))


@functools.cache
def _imports(path, root, text):
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(text, str(path))):
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


def folder_of(name):
    """The most specific folder of LAYERS that holds ``name`` (None outside sparkps)."""
    best = None
    for layer in LAYERS:
        for folder in layer:
            if under(name, folder) and (best is None or len(folder) > len(best)):
                best = folder
    return best


def layer_of(folder):
    return next(i for i, layer in enumerate(LAYERS) if folder in layer)


def graph(root):
    """{module: set of imported modules} for every module under sparkps/, the allowed upward imports left out."""
    allowed = {(a, b) for a, b, _ in ALLOWED_UP}
    edges = {}
    for path in sorted((root / "sparkps").rglob("*.py")):
        name, imported = imports_of(path, root)
        edges[name] = {t for t in imported if (name, t) not in allowed}
    return edges


def upward_imports(root):
    """[(module, imported)] where a module imports a folder on its own layer or above it."""
    found = []
    for name, imported in graph(root).items():
        here = folder_of(name)
        for target in sorted(imported):
            there = folder_of(target) if under(target, "sparkps") else None
            if there is None or there == here or here is None:
                continue
            if layer_of(there) <= layer_of(here):
                found.append((name, target))
    return found


def folder_loops(root):
    """Folder-level cycles: [[folder, ..., folder]] found by a depth-first walk of the folder graph."""
    folders = {}
    for name, imported in graph(root).items():
        for target in imported:
            a, b = folder_of(name), folder_of(target) if under(target, "sparkps") else None
            if a and b and a != b:
                folders.setdefault(a, set()).add(b)
    loops, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(folders.get(node, ())):
            if state.get(nxt) == "open":
                loops.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for start in sorted(folders):
        if start not in state:
            visit(start, [start])
    return loops


def reachable(root, start):
    """Every module (and third-party top-level name) reachable from modules under ``start``."""
    edges = graph(root)
    todo = [n for n in edges if under(n, start)]
    seen = set(todo)
    while todo:
        for target in edges.get(todo.pop(), ()):
            key = target if target in edges or not under(target, "sparkps") else target.rpartition(".")[0]
            if target not in seen:
                seen.add(target)
                if target in edges:
                    todo.append(target)
                elif key in edges and key not in seen:
                    seen.add(key)
                    todo.append(key)
    return seen


def third_party_owners(root):
    """[(module, package)] where a module imports a third-party package another folder owns."""
    found = []
    for name, imported in graph(root).items():
        for target in imported:
            top = target.split(".")[0]
            if top == "zmq" and not any(under(name, u) for u in ZMQ_USERS):
                found.append((name, target))
            elif OWNED.get(top) and not under(name, OWNED[top]):
                found.append((name, target))
    return found


def test_no_import_runs_up_a_layer():
    assert upward_imports(ROOT) == []


def test_no_two_folders_import_each_other():
    assert folder_loops(ROOT) == []


@pytest.mark.parametrize("start,never", NEVER_REACHES, ids=["%s-%s" % p for p in NEVER_REACHES])
def test_a_role_never_reaches_the_other(start, never):
    assert sorted(n for n in reachable(ROOT, start) if under(n, never)) == []


def test_pyspark_cupy_and_zmq_stay_in_their_folders():
    assert third_party_owners(ROOT) == []


def test_every_sparkps_module_has_a_layer_and_every_layer_is_real():
    names = {module_name(p, ROOT) for p in (ROOT / "sparkps").rglob("*.py")}
    assert sorted(n for n in names if folder_of(n) is None) == []
    for layer in LAYERS:
        for folder in layer:
            assert any(under(n, folder) for n in names), folder


def test_allowed_upward_imports_are_real():
    for module, target, _ in ALLOWED_UP:
        name, imported = imports_of(ROOT.joinpath(*module.split(".")).with_suffix(".py"), ROOT)
        assert target in imported, (module, target)


def plant(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    for parent in path.relative_to(root).parents:
        if str(parent) != ".":
            (root / parent / "__init__.py").touch()
    path.write_text(text)


@pytest.fixture
def tiny_tree(tmp_path):
    for module in ("server/tables.py", "worker/kvworker.py", "comm/van.py", "symbol/graph.py", "train/step.py",
                   "kvstore/base.py", "spark/task/barrier_task.py"):
        plant(tmp_path, f"sparkps/{module}", "")
    plant(tmp_path, "sparkps/errors.py", "")
    return tmp_path


@pytest.mark.parametrize("relative,text,check,culprit", [
    ("sparkps/symbol/graph.py", "from sparkps.worker import kvworker\n", "up", "sparkps.worker.kvworker"),
    ("sparkps/comm/van.py", "def f():\n    from ..server import tables\n", "up", "sparkps.server.tables"),
    ("sparkps/server/tables.py", "import sparkps.scheduler\n", "up", "sparkps.scheduler"),
    ("sparkps/train/step.py", "import pyspark.sql\n", "owned", "pyspark.sql"),
    ("sparkps/kvstore/base.py", "import zmq\n", "owned", "zmq"),
])
def test_a_planted_forbidden_import_is_caught(tiny_tree, relative, text, check, culprit):
    plant(tiny_tree, "sparkps/scheduler/__init__.py", "")
    plant(tiny_tree, relative, text)
    found = upward_imports(tiny_tree) if check == "up" else third_party_owners(tiny_tree)
    assert [target for _, target in found] == [culprit], found


def test_a_planted_folder_loop_and_a_reach_through_a_third_folder_are_caught(tiny_tree):
    plant(tiny_tree, "sparkps/kvstore/base.py", "from sparkps.train import step\n")
    plant(tiny_tree, "sparkps/train/step.py", "from sparkps.kvstore import base\n")
    assert ["sparkps.kvstore", "sparkps.train", "sparkps.kvstore"] in folder_loops(tiny_tree)
    plant(tiny_tree, "sparkps/worker/kvworker.py", "from sparkps.spark.task import barrier_task\n")
    plant(tiny_tree, "sparkps/spark/task/barrier_task.py", "from sparkps.server import tables\n")
    assert "sparkps.server.tables" in reachable(tiny_tree, "sparkps.worker")


def test_test_modules_have_unique_basenames():
    """pytest imports the test folders (no __init__.py) by basename: two ``test_model.py`` stop collection."""
    seen = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if (path.parent / "__init__.py").exists():
            continue
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
