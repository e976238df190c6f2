"""Count the MXNet 1.9.1 unit tests ported in tests/mxnet_compat (the figures of docs/mxnet.md).

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python tests/mxnet_compat/count_ported.py

Collects tests/mxnet_compat with ``pytest --collect-only``; a collected case counts as a port when its test
function names the MXNet test it ports ("MXNet: test_cast", "MXNet 1.0 test_symbol.py: test_load_000800");
the MXNet file is the one the sparkps test module ports. Prints, per MXNet file, the distinct MXNet tests
ported and the pytest cases that port them, then the other tests of the folder (sparkps's own checks).
"""
import ast
import collections
import re
import subprocess
import sys

PORTS = {"test_symbol": "test_symbol.py", "test_operator": "test_operator.py", "test_dtypes": "test_operator.py",
         "test_infer_shape": "test_infer_shape.py", "test_executor": "test_executor.py",
         "test_optimizer": "test_optimizer.py", "test_optimizer_multi": "test_optimizer.py",
         "test_metric": "test_metric.py", "test_init": "test_init.py", "test_mlp": "train/test_mlp.py",
         "test_operator_tail": "test_operator.py", "test_optimizer_sparse": "test_optimizer.py",
         "test_kvstore": "test_kvstore.py", "test_mkldnn": "mkl/test_mkldnn.py"}
NAMED = re.compile(r"MXNet(?: [0-9.]+)?(?: [a-z_/]+\.py)?(?::|::|: )? ?(?:[a-z_/]+\.py::)?(test_[a-z0-9_]+)")


def collected_cases():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "tests/mxnet_compat"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "::" in line]


def function_sources(path):
    """``{name: source}`` of the top-level functions of the file ``path``, decorators included (read, not imported:
    the test modules need not be importable from here)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    return {node.name: "".join(lines[min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1:node.end_lineno])
            for node in ast.parse(text, path).body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def main():
    names, cases, other = collections.defaultdict(set), collections.Counter(), collections.Counter()
    items, sources = collected_cases(), {}
    for item in items:
        path, function = item.split("::")[0], item.split("::")[1].split("[")[0]
        if path not in sources:
            sources[path] = function_sources(path)
        source = sources[path][function]
        short = path[:-3].rsplit("/", 1)[-1]
        found = NAMED.findall(source)
        if found and short in PORTS:
            names[PORTS[short]].update(found)
            cases[PORTS[short]] += 1
        else:
            other[short] += 1
    for mxnet_file in sorted(names):
        print(f"{mxnet_file}: {len(names[mxnet_file])} MXNet tests in {cases[mxnet_file]} cases: "
              f"{', '.join(sorted(names[mxnet_file]))}")
    print(f"ported: {sum(len(v) for v in names.values())} MXNet tests in {sum(cases.values())} pytest cases; "
          f"other checks: {sum(other.values())} cases {dict(other)}; collected {len(items)}")


if __name__ == "__main__":
    main()
