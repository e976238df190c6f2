"""The executor's checks of its inputs: every fed argument is finite, every needed one was given.

A NaN or inf in an input is a DataError naming the input and its first bad element. The check is one BLAS dot
of the array with itself (its sum of squares); an input whose every reader propagates a non-finite element to
its output (FullyConnected's data) is checked on that smaller output instead, after the reader ran.
"""
from functools import partial

import numpy as np

from .. import backend
from ..errors import DataError


class InputChecks:
    """Input checks of :class:`sparkps.symbol.executor.Executor` (a mixin over its ``forward_nodes``,
    ``arg_dict``, runtime and check tables)."""

    def _inputs_checked_downstream(self):
        """Inputs whose NaN/inf check can run on a smaller output instead: every forward reader
        propagates a non-finite input element into its output (FullyConnected's data: one NaN or inf
        in a row makes that whole output row non-finite). Returns {name: [reader nodes]}."""
        readers = {}
        for node in self.forward_nodes:
            for pos, (src, _) in enumerate(node.inputs):
                if src.op is None:
                    readers.setdefault(src.name, []).append((node, pos))
        return {name: [n for n, _ in uses] for name, uses in readers.items()
                if all(pos in n.op.propagates_nonfinite for n, pos in uses)}

    def _downstream_checks(self, node):
        checks = []
        for name, readers in self._deferred_checks.items():
            if node in readers:
                output = self._arrays[(node, 0)].reshape(-1)
                checks.append(partial(self._check_downstream, name, partial(self.xp.dot, output, output)))
        return checks

    def _check_downstream(self, name, square_sum):
        if name in self._rt.host_inputs:     # checked on its host copy as it was fed
            return
        with np.errstate(over="ignore", invalid="ignore"):
            if self.xp.isfinite(square_sum()):
                return
        if not bool(self.xp.isfinite(self.arg_dict[name]).all()):
            self._raise_nonfinite(name)

    def _raise_nonfinite(self, name, values=None):
        """DataError naming input ``name`` and its first NaN/inf (in ``values``, default its bound array)."""
        values = backend.asnumpy(self.arg_dict[name] if values is None else values)
        bad = np.flatnonzero(~np.isfinite(values))[0]
        raise DataError("forward: input '%s' holds NaN or inf (first at flat index %d)" % (name, int(bad)))

    def _inputs_read_by_forward(self):
        """Arguments some forward op reads (labels of loss heads are read only by backward)."""
        read = set()
        for node in self.forward_nodes:
            for pos, (src, _) in enumerate(node.inputs):
                if src.op is None and pos not in node.op.label_inputs:
                    read.add(src.name)
        return read

    def _finite(self, name):
        """False when the argument holds NaN or inf. Quick test: the sum of squares (one BLAS dot of
        the array with itself, no second operand to stream through the cache) is finite; only when
        it is not (NaN, inf, or a harmless overflow) do we look element by element."""
        check = self._finite_checks.get(name)
        if check is None:
            array = self.arg_dict[name]
            if array.dtype.kind != "f":
                check = float  # float() is 0.0: integer arrays are always finite
            else:
                flat = array.reshape(-1)
                check = partial(self.xp.dot, flat, flat)
            self._finite_checks[name] = check
        with np.errstate(over="ignore", invalid="ignore"):
            if self.xp.isfinite(check()):
                return True
        return bool(self.xp.isfinite(self.arg_dict[name]).all())

    def _check_given(self, is_train):
        for name in sorted(self._unverified):
            if not is_train and name not in self._forward_inputs:
                continue
            if not self._finite(name):
                raise DataError("forward: input '%s' was never given; pass forward(%s=...) or fill "
                                "exe.arg_dict['%s']" % (name, name, name))
            self._unverified.discard(name)


def host_finite(array):
    """True when a host array holds no NaN or inf: the sum of squares first (one BLAS dot), element by element only
    when that is not finite (NaN, inf, or a harmless overflow)."""
    flat = array.reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.dot(flat, flat)):
            return True
    return bool(np.isfinite(flat).all())
