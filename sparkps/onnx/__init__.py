"""ONNX export of sparkps networks, MXNet's ``mx.onnx``: ``export_model(sym, params, input_shapes, path)``.

``onnx`` is optional: importing this package never imports it; ``export_model`` without it raises a
ConfigError saying ``pip install onnx``. A CTR network is cut after its sparse table reads (the serving side
looks the rows up); see docs/export.md.
"""
from sparkps.onnx.export import export_model
from sparkps.onnx.translations import UnsupportedOp, exportable_ops

__all__ = ["export_model", "exportable_ops", "UnsupportedOp"]
