"""The ops, grouped by kind. Importing this package registers every op."""
from . import (activation, broadcast, conv, cross, elemwise, embedding, linalg, loss, nn, norm,  # noqa: F401
               pooling, reduce, shape_ops, slicing, softmax, unary)
