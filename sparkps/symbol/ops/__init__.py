"""The ops, grouped by kind. Importing this package registers every op."""
from . import (activation, broadcast, conv, cross, elemwise, linalg, loss, nn, norm, pooling, reduce,  # noqa: F401
               shape_ops, slicing, softmax, unary)
