"""Ablation for docs/learning.md: PyRat `small`, seed 0, with the spec's exploration term
sqrt(N) at a fresh node (0, so the first selection ignores the priors) instead of the kernel's
sqrt(max(N, 1)). Swaps `turbozero.search.mcgs._select` for this process only.

    python benchmarks/ablate_pyrat_first_selection.py   # writes /tmp/lc/pyrat-small-ablate
"""
import jax, jax.numpy as jnp, warnings
warnings.simplefilter("ignore")
import turbozero.search.mcgs as m
src_select = m._select
def old_select(g, node, cfg):
    q, mm = m._marginal_q(g, node, cfg)
    total = g.visits[node].sum().astype(jnp.float32)
    score = q + cfg.c_puct * g.prior[node] * jnp.sqrt(total) / (1.0 + mm)
    valid = jnp.arange(m.A)[None, :] < g.n_out[node][:, None]
    o = jnp.argmax(jnp.where(valid, score, -jnp.inf), axis=1).astype(jnp.int32)
    return o[0], o[1]
m._select = old_select
from turbozero.presets import get_preset
from turbozero.training import Trainer
t = Trainer(get_preset("pyrat", "small", seed=0, checkpoint_every=0), "/tmp/lc/pyrat-small-ablate")
t.run(progress=False)
