"""Shared test set-up: a persistent XLA compilation cache outside the repository, and the
fixtures that several test files share."""

import os

import jax
import pytest

_CACHE = os.environ.get(
    "TURBOZERO_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "turbozero-jax")
)
jax.config.update("jax_compilation_cache_dir", _CACHE)
# every compile cached, however short: warm, tests/search/test_root_noise.py and
# tests/training/test_stored_policies.py took 70 s against 135 s with only compiles of 0.5 s
# or more cached (load 5), as the CLI found (turbozero/compile_cache.py)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
# no stored (exported) Trainer functions here, nor in the CLI runs the tests start: tests patch
# code that a Trainer traces, and a function stored by an earlier test with the same config and
# source would not see the patch; tests/test_stored_functions.py turns them on where it tests them
os.environ.setdefault("TURBOZERO_STORED_FUNCTIONS", "none")


# Paco Ŝako fixtures shared by its three test files (one environment, one jitted init)
@pytest.fixture(scope="session")
def pacosako_env():
    import envs

    return envs.make("pacosako")


@pytest.fixture(scope="session")
def pacosako_start(pacosako_env):
    return jax.jit(pacosako_env.init)(jax.random.PRNGKey(0))


@pytest.fixture(scope="module", autouse=True)
def _release_compiled_code():
    """After each test file, drop the in-memory jit caches (the persistent cache on disk stays,
    so a later file that needs an executable again reads it back): three full default-suite
    runs on 2026-11-23 crashed inside XLA (abort or segfault, in compile or cache read) at the
    same test near the end, after ~690 tests had kept every executable they compiled in one
    process; suspected memory exhaustion (2.5 GB resident after three training test files)."""
    yield
    import gc

    jax.clear_caches()
    gc.collect()
