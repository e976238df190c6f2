"""The zoo's regularisation settings: weight-decay multipliers per part of a CTR network and dropout on its deep
part (docs/regularisation.md).

    build('deepfm', spec, embedding_wd_mult=1.0, deep_wd_mult=0.0, dropout=0.2)
    fit_ctr(net, inputs, labels, optimizer='adam', wd=1e-5)    # L2 1e-5 on the embedding rows a batch reads

A multiplier is the ``__wd_mult__`` of the part's weight Variables: the optimizer's ``wd`` times it is the L2
coefficient of those weights (biases never decay). None leaves MXNet's rule (every ``*_weight``, the tables
too, at 1). Parts: ``embedding`` (the field embedding tables), ``linear`` (the first-order tables and the
numeric columns' weights of the linear term), ``deep`` (the MLP tower, DCN's cross layers and joining layer).
A sparse table decays only in the steps that read its rows, and only those rows (``optimizer.rowwise``).
Pure settings: nothing here blocks.
"""
import numbers
from dataclasses import dataclass

from sparkps.errors import ConfigError


def _multiplier(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
        raise ConfigError("CTR model setting %s must be a number >= 0 (or None), got %r" % (name, value))
    return float(value)


@dataclass(frozen=True)
class Regularisation:
    """Weight-decay multipliers per part (None: MXNet's rule) and the deep part's dropout rate in [0, 1)."""
    embedding_wd_mult: float = None
    linear_wd_mult: float = None
    deep_wd_mult: float = None
    dropout: float = 0.0

    def __post_init__(self):
        for name in ("embedding_wd_mult", "linear_wd_mult", "deep_wd_mult"):
            object.__setattr__(self, name, _multiplier(name, getattr(self, name)))
        p = self.dropout
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 <= p < 1:
            raise ConfigError("CTR model setting dropout must be a rate in [0, 1), got %r" % (p,))
        object.__setattr__(self, "dropout", float(p))

    def wd_mult(self, part):
        """The multiplier of ``part`` ('embedding', 'linear' or 'deep'); None when not set."""
        parts = {"embedding": self.embedding_wd_mult, "linear": self.linear_wd_mult, "deep": self.deep_wd_mult}
        if part not in parts:
            raise ConfigError("a CTR model's weight-decay part is 'embedding', 'linear' or 'deep', got %r" % (part,))
        return parts[part]
