"""onnx is optional: sparkps.onnx imports without it, and export_model then raises the one error saying
``pip install onnx`` (runs whether or not onnx is installed: the import is made to fail)."""
import importlib
import sys

import pytest
from onnx_parity import bind_seeded

from sparkps.errors import ConfigError
from sparkps.nets.mlp import mlp_symbol


def test_without_onnx_importing_works_and_export_says_pip_install(monkeypatch, tmp_path):
    import sparkps
    monkeypatch.setattr(sparkps, "onnx", importlib.import_module("sparkps.onnx"), raising=False)
    monkeypatch.setitem(sys.modules, "onnx", None)           # `import onnx` now raises ImportError
    for name in [n for n in sys.modules if n == "sparkps.onnx" or n.startswith("sparkps.onnx.")]:
        monkeypatch.delitem(sys.modules, name)
    fresh = importlib.import_module("sparkps.onnx")
    net = mlp_symbol([3, 2])
    _, params = bind_seeded(net, {"data": (2, 3)})
    with pytest.raises(ConfigError, match=r"needs the onnx package: pip install onnx"):
        fresh.export_model(net, params, {"data": (2, 3)}, tmp_path / "x.onnx")
