"""Op parameters: parse Python values or the strings found in MXNet-style JSON, and print them back."""
import ast

from ..errors import ConfigError

REQUIRED = object()


def _text(value):
    return value.strip() if isinstance(value, str) else value


def to_int(value):
    return int(_text(value))


def to_float(value):
    return float(_text(value))


def to_bool(value):
    value = _text(value)
    if isinstance(value, str):
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0"):
            return False
        raise ValueError("not a boolean: %r" % value)
    return bool(value)


def to_shape(value):
    """A tuple of ints from (1, 2), [1, 2], '(1, 2)' or '1'."""
    value = _text(value)
    if isinstance(value, str):
        value = ast.literal_eval(value) if value else ()
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value)


def to_axis(value):
    """None (all axes), an int, or a tuple of ints."""
    value = _text(value)
    if value is None or value in ("None", "()", ""):
        return None
    if isinstance(value, str):
        value = ast.literal_eval(value)
    if isinstance(value, (list, tuple)):
        return tuple(int(v) for v in value) or None
    return int(value)


def to_dtype(value):
    """A dtype's name ('float16') from a name, a numpy type or dtype, MXNet's type code ('2') or the
    "<class 'numpy.float16'>" text older files hold; None stays None."""
    from .dtypes import parse_dtype
    value = _text(value)
    if value is None or value == "None":
        return None
    return parse_dtype(value).name


def choice(*allowed):
    def parse(value):
        value = _text(value)
        if value not in allowed:
            raise ValueError("must be one of %s" % ", ".join(repr(a) for a in allowed))
        return value
    parse.__name__ = "choice"
    return parse


def render(value):
    """MXNet's string form of a parameter value: True, 0.5, (2, 3)."""
    if isinstance(value, tuple):
        return "(%s)" % ", ".join(str(v) for v in value) if len(value) != 1 else "(%s,)" % value[0]
    return str(value)


def parse_params(op_name, spec, given):
    """Check ``given`` against ``spec`` ({name: (parser, default)}) and return the parsed values."""
    unknown = sorted(set(given) - set(spec))
    if unknown:
        raise ConfigError("%s has no parameter %s (it takes: %s)"
                          % (op_name, ", ".join(repr(u) for u in unknown), ", ".join(sorted(spec)) or "none"))
    parsed = {}
    for name, (parser, default) in spec.items():
        if name not in given or given[name] is None and default is not REQUIRED:
            if default is REQUIRED:
                raise ConfigError("%s needs the parameter %r" % (op_name, name))
            parsed[name] = default
            continue
        try:
            parsed[name] = parser(given[name])
        except (TypeError, ValueError, SyntaxError) as exc:
            raise ConfigError("%s: bad value %r for parameter %r (%s)"
                              % (op_name, given[name], name, exc)) from exc
    return parsed
