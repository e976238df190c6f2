"""The ops, grouped by kind. Importing this package registers every op."""
from . import activation, elemwise, loss, nn  # noqa: F401
