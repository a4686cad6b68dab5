"""Fixed networks for search tests: a random linear network for small games (deterministic, so
that two searches, the C++ tree and the JAX kernel, given it must visit alike), and a game's own
small untrained network."""

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


def small_game_network(env, hidden_sizes=(16,)):
    """`(evaluator, variables)`: the game's own network (`turbozero.games.build_network`) with
    `hidden_sizes`, untrained (seed 1), as the search families take it."""
    from turbozero.games import build_network, game_spec
    from turbozero.search.api import NetworkEvaluator

    spec = game_spec(env.id)
    module = build_network(spec, env, {"hidden_sizes": tuple(hidden_sizes)})
    obs = env.init(jax.random.PRNGKey(0)).observation[None]
    variables = module.init(jax.random.PRNGKey(1), obs)
    evaluator = NetworkEvaluator(lambda v, o: module.apply(v, o, train=False), spec.value_format)
    return evaluator, variables
