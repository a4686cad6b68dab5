"""Timing shared by the benchmark scripts (run as `python benchmarks/<script>.py`)."""

from __future__ import annotations

import statistics
import time
from typing import Any, Callable

import jax


def median_time(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Median wall time of `fn()` in seconds over `repeats` calls, after one call that compiles
    and warms up; every call waits for its JAX results."""
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
