"""The ops, grouped by kind. Importing this package registers every op."""
from . import activation, conv, elemwise, embedding, loss, nn, norm, reduce, shape_ops  # noqa: F401
