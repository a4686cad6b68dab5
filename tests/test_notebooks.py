"""Notebooks run top to bottom with tiny settings."""

import os

import jax
import nbformat
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_notebook(name: str, **env: str) -> nbformat.NotebookNode:
    path = os.path.join(ROOT, "notebooks", name)
    nb = nbformat.read(path, as_version=4)
    # the kernel is another process: hand it the suite's persistent compilation cache
    env = dict(env, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir or "",
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.5")
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3",
                       resources={"metadata": {"path": ROOT}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def test_backgammon_4way_notebook():
    nb = run_notebook("backgammon_4way.ipynb", TURBOZERO_NOTEBOOK_ITERATIONS="2")
    text = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    assert "money equity" in text and "MWC" in text
