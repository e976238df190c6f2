"""The ops, grouped by kind. Importing this package registers every op."""
from . import (  # noqa: F401
    activation,
    broadcast,
    conv,
    cross,
    elemwise,
    embedding,
    linalg,
    loss,
    nn,
    norm,
    pooling,
    reduce,
    shape_ops,
    slicing,
    softmax,
    unary,
)
