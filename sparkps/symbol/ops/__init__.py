"""The ops, grouped by kind. Importing this package registers every op."""
from . import activation, broadcast, conv, elemwise, embedding, linalg, loss, nn, norm, reduce, shape_ops, unary  # noqa: F401
