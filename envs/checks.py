"""Constructor checks of the envs: the library's one rule (turbozero/validation.py, restated
here so that `envs` imports nothing of `turbozero`): an integer option is an integer (not a
bool, not 2.7 truncated to 2, not "100" read as 100) within int32, as JAX holds it, and a real
option a finite number; a mistake is one `ValueError` line naming the env and the option."""

from __future__ import annotations

import math
import numbers
from typing import Any, Optional

INT32_MAX = 2**31 - 1


def integer(env: str, name: str, value: Any, *, minimum: Optional[int] = None,
            maximum: int = INT32_MAX) -> int:
    """`value` as an int, or a ValueError naming `env` and `name`."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not ok or (minimum is not None and value < minimum) or value > maximum:
        low = f">= {minimum} and " if minimum is not None else ""
        raise ValueError(f"{env}: {name} must be an integer {low}<= {maximum}, got {value!r}")
    return int(value)


def real(env: str, name: str, value: Any, *, minimum: Optional[float] = None,
         maximum: Optional[float] = None) -> float:
    """`value` as a float, or a ValueError naming `env` and `name` (NaN, infinity, a string
    or a bool is refused)."""
    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(float(value)))
    if ok and ((minimum is not None and value < minimum)
               or (maximum is not None and value > maximum)):
        ok = False
    if not ok:
        bounds = " and ".join(b for b in (f">= {minimum}" if minimum is not None else "",
                                          f"<= {maximum}" if maximum is not None else "") if b)
        raise ValueError(f"{env}: {name} must be a finite number{' ' + bounds if bounds else ''}"
                         f", got {value!r}")
    return float(value)
