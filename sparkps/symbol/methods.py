"""The operators and fluent methods of ``Symbol`` (``x ** 2``, ``x > y``, ``x.reshape((0, -1))``,
``x.sum(axis=1)``), each a call of the registered op of MXNet's name. Symbol mixes this class in;
it supplies ``_apply(op_name, args, kwargs)``."""
from numbers import Number


class SymbolMethods:
    """Python operators and MXNet's fluent methods, as thin calls of ops."""

    __slots__ = ()
    __hash__ = object.__hash__       # == builds a Symbol (as MXNet), so hashing stays by identity

    def _apply(self, op_name, args, kwargs, hint=None):
        """Apply the op registered as ``op_name``; ``hint`` names unnamed nodes ('flip0')."""
        raise NotImplementedError

    def _arith(self, other, both, scalar, reflected=False):
        if isinstance(other, SymbolMethods):
            return self._apply(both, [other, self] if reflected else [self, other], {})
        if isinstance(other, Number) and not isinstance(other, bool):
            return self._apply(scalar, [self], {"scalar": float(other)})
        return NotImplemented

    # ---- arithmetic beyond + - * / ---------------------------------------------------------------
    def __pow__(self, other):
        return self._arith(other, "_Power", "_PowerScalar")

    def __rpow__(self, other):
        return self._arith(other, "_Power", "_RPowerScalar", reflected=True)

    def __mod__(self, other):
        return self._arith(other, "_Mod", "_ModScalar")

    def __rmod__(self, other):
        return self._arith(other, "_Mod", "_RModScalar", reflected=True)

    def __abs__(self):
        return self._apply("abs", [self], {})

    # ---- comparisons: 1.0 where true, 0.0 where false ----------------------------------------
    def __eq__(self, other):
        return self._arith(other, "_equal", "_equal_scalar")

    def __ne__(self, other):
        return self._arith(other, "_not_equal", "_not_equal_scalar")

    def __gt__(self, other):
        return self._arith(other, "_greater", "_greater_scalar")

    def __ge__(self, other):
        return self._arith(other, "_greater_equal", "_greater_equal_scalar")

    def __lt__(self, other):
        return self._arith(other, "_lesser", "_lesser_scalar")

    def __le__(self, other):
        return self._arith(other, "_lesser_equal", "_lesser_equal_scalar")

    # ---- fluent methods (positional parameters in MXNet's order) ------------------------------
    def reshape(self, *args, **kwargs):
        """``x.reshape((0, -1))`` or ``x.reshape(0, -1)`` or ``x.reshape(shape=...)``."""
        if args and all(isinstance(a, int) for a in args):
            args = (tuple(args),)
        return self._apply("Reshape", [self, *args], kwargs)

    def reshape_like(self, *args, **kwargs):
        return self._apply("reshape_like", [self, *args], kwargs)

    def flatten(self, *args, **kwargs):
        return self._apply("Flatten", [self, *args], kwargs)

    def expand_dims(self, *args, **kwargs):
        return self._apply("expand_dims", [self, *args], kwargs)

    def squeeze(self, *args, **kwargs):
        return self._apply("squeeze", [self, *args], kwargs)

    def transpose(self, *args, **kwargs):
        return self._apply("transpose", [self, *args], kwargs)

    def swapaxes(self, *args, **kwargs):
        return self._apply("SwapAxis", [self, *args], kwargs, "swapaxes")

    def flip(self, *args, **kwargs):
        return self._apply("reverse", [self, *args], kwargs, "flip")

    def split(self, *args, **kwargs):
        return self._apply("SliceChannel", [self, *args], kwargs, "split")

    def slice_axis(self, *args, **kwargs):
        return self._apply("slice_axis", [self, *args], kwargs)

    def broadcast_to(self, *args, **kwargs):
        return self._apply("broadcast_to", [self, *args], kwargs)

    def broadcast_axes(self, *args, **kwargs):
        return self._apply("broadcast_axis", [self, *args], kwargs, "broadcast_axes")

    def broadcast_like(self, *args, **kwargs):
        return self._apply("broadcast_like", [self, *args], kwargs)

    def pick(self, *args, **kwargs):
        return self._apply("pick", [self, *args], kwargs)

    def zeros_like(self, *args, **kwargs):
        return self._apply("zeros_like", [self, *args], kwargs)

    def ones_like(self, *args, **kwargs):
        return self._apply("ones_like", [self, *args], kwargs)

    def clip(self, *args, **kwargs):
        return self._apply("clip", [self, *args], kwargs)

    def sum(self, *args, **kwargs):
        return self._apply("sum", [self, *args], kwargs)

    def mean(self, *args, **kwargs):
        return self._apply("mean", [self, *args], kwargs)

    def max(self, *args, **kwargs):
        return self._apply("max", [self, *args], kwargs)

    def min(self, *args, **kwargs):
        return self._apply("min", [self, *args], kwargs)

    def prod(self, *args, **kwargs):
        return self._apply("prod", [self, *args], kwargs)

    def nansum(self, *args, **kwargs):
        return self._apply("nansum", [self, *args], kwargs)

    def nanprod(self, *args, **kwargs):
        return self._apply("nanprod", [self, *args], kwargs)

    def norm(self, *args, **kwargs):
        return self._apply("norm", [self, *args], kwargs)

    def softmax(self, *args, **kwargs):
        return self._apply("softmax", [self, *args], kwargs)

    def log_softmax(self, *args, **kwargs):
        return self._apply("log_softmax", [self, *args], kwargs)

    def abs(self, *args, **kwargs):
        return self._apply("abs", [self, *args], kwargs)

    def sign(self, *args, **kwargs):
        return self._apply("sign", [self, *args], kwargs)

    def square(self, *args, **kwargs):
        return self._apply("square", [self, *args], kwargs)

    def sqrt(self, *args, **kwargs):
        return self._apply("sqrt", [self, *args], kwargs)

    def rsqrt(self, *args, **kwargs):
        return self._apply("rsqrt", [self, *args], kwargs)

    def cbrt(self, *args, **kwargs):
        return self._apply("cbrt", [self, *args], kwargs)

    def reciprocal(self, *args, **kwargs):
        return self._apply("reciprocal", [self, *args], kwargs)

    def exp(self, *args, **kwargs):
        return self._apply("exp", [self, *args], kwargs)

    def expm1(self, *args, **kwargs):
        return self._apply("expm1", [self, *args], kwargs)

    def log(self, *args, **kwargs):
        return self._apply("log", [self, *args], kwargs)

    def log1p(self, *args, **kwargs):
        return self._apply("log1p", [self, *args], kwargs)

    def log2(self, *args, **kwargs):
        return self._apply("log2", [self, *args], kwargs)

    def log10(self, *args, **kwargs):
        return self._apply("log10", [self, *args], kwargs)

    def sin(self, *args, **kwargs):
        return self._apply("sin", [self, *args], kwargs)

    def cos(self, *args, **kwargs):
        return self._apply("cos", [self, *args], kwargs)

    def tanh(self, *args, **kwargs):
        return self._apply("tanh", [self, *args], kwargs)

    def relu(self, *args, **kwargs):
        return self._apply("relu", [self, *args], kwargs)

    def sigmoid(self, *args, **kwargs):
        return self._apply("sigmoid", [self, *args], kwargs)

    def round(self, *args, **kwargs):
        return self._apply("round", [self, *args], kwargs)

    def rint(self, *args, **kwargs):
        return self._apply("rint", [self, *args], kwargs)

    def fix(self, *args, **kwargs):
        return self._apply("fix", [self, *args], kwargs)

    def floor(self, *args, **kwargs):
        return self._apply("floor", [self, *args], kwargs)

    def ceil(self, *args, **kwargs):
        return self._apply("ceil", [self, *args], kwargs)

    def trunc(self, *args, **kwargs):
        return self._apply("trunc", [self, *args], kwargs)
