"""The Paco Ŝako notebook runs top to bottom (nbclient, kernel python3)."""

import os

import jax
import nbformat
from nbclient import NotebookClient

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pacosako_notebook():
    nb = nbformat.read(os.path.join(ROOT, "notebooks", "pacosako.ipynb"), as_version=4)
    # the kernel is another process: hand it the suite's persistent compilation cache
    env = {"JAX_COMPILATION_CACHE_DIR": jax.config.jax_compilation_cache_dir or "",
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0.5",
           "PACOSAKO_NOTEBOOK_ACTIONS": "30"}
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
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))
    assert "expansion == observation: True" in text
    assert "in hand:" in text and "legal: ['place" in text
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    assert images, "the tensor layers were not drawn"
