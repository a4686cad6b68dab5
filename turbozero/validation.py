"""Field checks for configuration dataclasses: one-line `ValueError` naming the field.

A config is checked when it is built (`__post_init__`), so a bad value fails where it was
written, not deep inside a jitted call or the C++ binding. Two rules cover most fields:

* an integer field holds an integer (`2.5`, `"32"` and `True` are refused: a float count would
  be truncated somewhere or rejected by the C++ binding with a multi-line TypeError, a string
  fails a comparison with "'<' not supported");
* a real field holds a finite number (NaN passes every `x < 0` check and infinity most range
  checks, and either one then trains quietly into NaN).

An integer is also within int32 unless its field says otherwise (JAX holds integers as int32).
`tests/test_validation_rule.py` walks every public search config and env class with NaN, inf,
2.5, "7", True, -1 and 2**40 in each numeric field.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional


def _bounds(minimum, maximum, above) -> str:
    parts = []
    if above is not None:
        parts.append(f"> {above}")
    elif minimum is not None:
        parts.append(f">= {minimum}")
    if maximum is not None:
        parts.append(f"<= {maximum}")
    return " and ".join(parts)


# the integers JAX holds (int32 unless jax_enable_x64): a wider one overflows there, silently
# or deep inside a jitted call, so a field with no maximum of its own is bounded by these
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def check_int(name: str, value: Any, *, minimum: Optional[int] = None,
              maximum: Optional[int] = None, optional: bool = False) -> None:
    """`value` is an integer (not a bool) within [minimum, maximum]; None too if `optional`.
    Without a `maximum` (`minimum`) of its own it is within int32, as JAX holds it."""
    if value is None and optional:
        return
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if ok and minimum is not None and value < minimum:
        ok = False
    if ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        bounds = _bounds(minimum, maximum, None)
        none = " or None" if optional else ""
        raise ValueError(f"{name} must be an integer{' ' + bounds if bounds else ''}{none}, "
                         f"got {value!r}")
    if (maximum is None and value > INT32_MAX) or (minimum is None and value < INT32_MIN):
        raise ValueError(f"{name} must be an integer within int32 ({INT32_MIN} .. {INT32_MAX}), "
                         f"as JAX holds it, got {value!r}")


def check_real(name: str, value: Any, *, minimum: Optional[float] = None,
               maximum: Optional[float] = None, above: Optional[float] = None,
               optional: bool = False) -> None:
    """`value` is a finite real number (int or float, not a bool) with value >= minimum (or >
    above) and <= maximum; None too if `optional`."""
    if value is None and optional:
        return
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and \
        math.isfinite(float(value))
    if ok and above is not None and not value > above:
        ok = False
    if ok and minimum is not None and not value >= minimum:
        ok = False
    if ok and maximum is not None and not value <= maximum:
        ok = False
    if not ok:
        bounds = _bounds(minimum, maximum, above)
        none = " or None" if optional else ""
        raise ValueError(f"{name} must be a finite number{' ' + bounds if bounds else ''}{none}, "
                         f"got {value!r}")


def check_bounds(name: str, value: Any, *, limit: Optional[float] = None) -> None:
    """`value` is a pair (low, high) of finite numbers with low < high (within [-limit,
    limit] when given)."""
    try:
        low, high = value
    except (TypeError, ValueError):
        low = high = None
    ok = all(isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))
             for v in (low, high)) and low < high
    if ok and limit is not None and not (-limit <= low and high <= limit):
        ok = False
    if not ok:
        within = f" within [-{limit:g}, {limit:g}]" if limit is not None else ""
        raise ValueError(f"{name} must be (low, high), finite numbers with low < high{within}, "
                         f"got {value!r}")


def check_static_real(name: str, value: Any, **bounds) -> None:
    """`check_real` for an argument of a jittable function: checked when it is a Python or
    concrete number; a traced value (inside `jit`, unknown until run) is left alone."""
    import jax  # here: the config checks above stay importable without jax

    if isinstance(value, jax.core.Tracer):
        return
    if getattr(value, "shape", None) == ():
        value = value.item()
    check_real(name, value, **bounds)
