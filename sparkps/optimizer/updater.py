"""MXNet's updater: an optimizer applied to (index, grad, weight) triples with the per-index state kept inside,
as ``mx.optimizer.get_updater`` gives it. The update runs in place on the caller's thread."""


class Updater:
    """Apply an optimizer to (index, grad, weight) triples, keeping per-index state (MXNet's updater)."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}

    def __call__(self, index, grad, weight):
        if index not in self.states:
            self.states[index] = self.optimizer.create_state_multi_precision(index, weight)
        self.optimizer.update_multi_precision(index, weight, grad, self.states[index])


def get_updater(optimizer):
    """Return an ``Updater`` for ``optimizer`` (as ``mx.optimizer.get_updater``)."""
    return Updater(optimizer)
