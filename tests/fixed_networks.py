"""A fixed random linear network for search tests on small games: deterministic, so that two
searches (the C++ tree, the JAX kernel) given it must visit alike."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def fixed_linear_network(env, seed: int = 0):
    """`net(params, obs) -> (logits [B, A], value [B] in (-1, 1))`, a random linear map of the
    flattened observation (params unused)."""
    rng = np.random.default_rng(seed)
    d = int(np.prod(env.init(jax.random.PRNGKey(0)).observation.shape))
    w = jnp.asarray(rng.normal(size=(d, env.num_actions)), jnp.float32)
    v = jnp.asarray(rng.normal(size=(d,)) * 0.5, jnp.float32)

    def net(params, obs):
        del params
        f = obs.reshape(obs.shape[0], -1).astype(jnp.float32)
        return f @ w, jnp.tanh(f @ v)

    return net
