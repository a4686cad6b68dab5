"""Input checks at the Python boundary.

Every public function of `equity` also runs under `jit`, `vmap` and `grad`, where its inputs are
tracers whose values cannot be read. The checks below therefore look at values only when they
are concrete; shapes are static and are always checked.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

_TRACER_ERRORS = (
    jax.errors.TracerArrayConversionError,
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerBoolConversionError,
)


def concrete(x: Any) -> np.ndarray | None:
    """`x` as a NumPy array when its value is known, `None` when it is a tracer."""
    if isinstance(x, jax.core.Tracer):
        return None
    try:
        return np.asarray(x)
    except _TRACER_ERRORS:
        return None


def integer_values(name: str, x: Any) -> np.ndarray | None:
    """The concrete value of `x` as int64, after checking it holds whole numbers only."""
    arr = concrete(x)
    if arr is None:
        return None
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be an integer, got {x!r} of dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be a whole number, got {x!r}")
    return arr.astype(np.int64)


def last_axis_4(name: str, x: Any) -> None:
    """Shapes are static, so this check runs under `jit` too."""
    shape = np.shape(x)
    if len(shape) == 0 or shape[-1] != 4:
        raise ValueError(
            f"{name} must have shape (..., 4) = [win, gam_win_cond, gam_loss_cond, bg_rate], "
            f"got shape {tuple(shape)}")


def probabilities(name: str, x: Any) -> None:
    """Concrete probabilities must be finite and lie in [0, 1]."""
    arr = concrete(x)
    if arr is None:
        return
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0)
    if np.any(bad):
        raise ValueError(f"{name} must hold probabilities in [0, 1], got {arr[bad][:4]} "
                         f"(first bad entries)")
