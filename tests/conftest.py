"""Shared test set-up: a persistent XLA compilation cache outside the repository, and the
fixtures that several test files share."""

import os

import jax
import pytest

_CACHE = os.environ.get(
    "TURBOZERO_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "turbozero-jax")
)
jax.config.update("jax_compilation_cache_dir", _CACHE)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


# Paco Ŝako fixtures shared by its three test files (one environment, one jitted init)
@pytest.fixture(scope="session")
def pacosako_env():
    import envs

    return envs.make("pacosako")


@pytest.fixture(scope="session")
def pacosako_start(pacosako_env):
    return jax.jit(pacosako_env.init)(jax.random.PRNGKey(0))
