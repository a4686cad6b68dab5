"""The persistent compilation cache the CLI and the Trainer turn on (turbozero/compile_cache.py):
where it goes, how it is turned off, and that a cache the user configured is kept. Each case
runs in a fresh process: jax's cache settings are process-wide."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = """
import sys, jax, jax.numpy as jnp
if len(sys.argv) > 1:
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.jit(lambda x: x + 1)(jnp.ones(3)).block_until_ready()  # a compile before it is turned on
from turbozero.compile_cache import enable_compilation_cache
print(enable_compilation_cache())
jax.jit(lambda x: jnp.sin(x) * 2)(jnp.ones(5)).block_until_ready()
"""


def _run(env_value, *args):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("TURBOZERO_JAX_CACHE", None)
    if env_value is not None:
        env["TURBOZERO_JAX_CACHE"] = env_value
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("case", ["variable", "none", "configured"])
def test_compilation_cache_location_and_switch(tmp_path, case):
    cache = tmp_path / "cache"
    if case == "variable":
        # on even after an earlier compile, and the small compile after it is cached too
        assert _run(str(cache)) == str(cache)
        assert cache.is_dir() and len(os.listdir(cache)) >= 1
    elif case == "none":
        assert _run("NONE") == "None"
        assert not cache.exists()
    else:
        own = tmp_path / "own"
        assert _run(str(cache), str(own)) == str(own)  # the user's own setting is kept
        assert not cache.exists()
