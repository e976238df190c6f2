"""The ops, grouped by kind. Importing this package registers every op."""
from . import (activation, broadcast, conv, elemwise, linalg, loss, nn, norm, pooling, reduce, shape_ops,  # noqa: F401
               slicing, softmax, unary)
