"""Shared test set-up: a persistent XLA compilation cache outside the repository."""

import os

import jax

_CACHE = os.environ.get(
    "TURBOZERO_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "turbozero-jax")
)
jax.config.update("jax_compilation_cache_dir", _CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
