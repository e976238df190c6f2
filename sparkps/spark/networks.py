"""The networks the Spark side trains: the shared builder of :mod:`sparkps.nets.mlp`, under its old import path."""
from sparkps.nets.mlp import ACTIVATIONS, mlp_symbol, parse_layers

__all__ = ["ACTIVATIONS", "mlp_symbol", "parse_layers"]
