"""The persistent XLA compilation cache, on by default for the CLI and the Trainer.

Where: `$TURBOZERO_JAX_CACHE`, default `~/.cache/turbozero-jax`; `TURBOZERO_JAX_CACHE=none`
turns it off. A cache directory the user already gave jax (`jax_compilation_cache_dir`) is
kept as it is. Every compile is cached, however short: a warm start of
`turbozero train chess --preset tiny` went from 28 s to 17 s when the small compiles were
cached too (docs/benchmarks.md, "Start-up and compile time").
"""

from __future__ import annotations

import os
from typing import Optional

import jax

ENV_VAR = "TURBOZERO_JAX_CACHE"


def cache_dir() -> Optional[str]:
    """The directory turbozero caches compiles in (None: turned off by the variable)."""
    path = os.environ.get(ENV_VAR, os.path.join(os.path.expanduser("~"), ".cache",
                                                "turbozero-jax"))
    return None if path.strip().lower() == "none" else path


def enable_compilation_cache() -> Optional[str]:
    """Turn the persistent cache on at `cache_dir()` unless the user configured jax's own or
    turned it off; returns the directory in use (None: no cache)."""
    configured = jax.config.jax_compilation_cache_dir
    if configured:
        return configured
    path = cache_dir()
    if path is None:
        return None
    # also after earlier compiles in the process (tests/test_compile_cache.py checks it)
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
