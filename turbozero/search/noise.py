"""Root Dirichlet noise over the legal actions only: the one definition (docs/search.md,
"Formulas, once"), used by the tree kernel's `PUCTRoot`, the mctx family's root and the graph
search; the C++ tree mixes a given draw the same way (`SearchTree.add_root_noise`,
tests/test_formulas_once.py).

mctx draws its noise over every action id and masks afterwards, so with few legal actions among
many ids almost none of its noise mass lands on a legal move (tests/search/test_root_noise.py). Drawing
one Gamma(alpha) variate per slot and normalising over the valid ones is a Dirichlet over
exactly those.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from turbozero.validation import check_static_real


def legal_dirichlet(key: jax.Array, valid: jax.Array, alpha: float) -> jax.Array:
    """float32[..., K]: Dirichlet(alpha) over the valid slots of each row, 0 elsewhere.

    valid: bool[..., K]. One Gamma(alpha) draw for the whole array (cheaper to compile than a
    vmapped one). Rows whose draws all underflow to 0 (alpha << 1) fall back to uniform over
    their valid slots; a row without valid slots is all 0."""
    # a negative or NaN alpha draws NaN "noise" (NaN priors downstream)
    check_static_real("alpha", alpha, above=0)
    g = jnp.where(valid, jax.random.gamma(key, alpha, valid.shape), 0.0)
    total = g.sum(-1, keepdims=True)
    uniform = valid / jnp.maximum(valid.sum(-1, keepdims=True), 1)
    return jnp.where(total > 0, g / jnp.where(total > 0, total, 1.0), uniform)


def mix_legal_noise(key: jax.Array, prior: jax.Array, valid: jax.Array, alpha: float,
                    fraction: float) -> jax.Array:
    """float32[..., K]: `(1 - fraction) * prior + fraction * legal_dirichlet(key, valid, alpha)`
    on the valid slots, 0 on the others (fraction 0: the prior, masked, and no draw)."""
    # outside [0, 1] the mixture has negative priors (their log: NaN)
    check_static_real("fraction", fraction, minimum=0, maximum=1)
    if isinstance(fraction, (int, float)) and fraction == 0:
        return jnp.where(valid, prior, 0.0)
    eta = legal_dirichlet(key, valid, alpha)
    return jnp.where(valid, (1.0 - fraction) * prior + fraction * eta, 0.0)
