"""The PyRat / MCGS notebook runs top to bottom with small settings."""

import os

import jax
import nbformat
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pyrat_mcgs_notebook():
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "pyrat_mcgs.ipynb"), as_version=4)
    env = {"TURBOZERO_NOTEBOOK_SIMS": "24",
           "JAX_COMPILATION_CACHE_DIR": jax.config.jax_compilation_cache_dir or "",
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": ROOT}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert "root Q" in text and "transposition" in text and "scores after" in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 3  # maze, policies, game
