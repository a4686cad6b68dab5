"""Observations on demand (docs/chess.md): `init_state` / `transition` are `init` / `step`
without the observation, and `observe` computes it later.

For random playouts of every registered env and a pgx game:
`observe(transition(s, a, k)) == step(s, a, k).observation`, every other field equal, and the
fast path's states carry no observation (`None`). Playouts run inside one jitted scan per env,
with ply caps short enough that finished (absorbing) states are stepped too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs

BATCH = 4
PLIES = 40

# small configurations with caps under PLIES, so capped games absorb further steps
CONFIGS = {
    "backgammon": {},
    "chess": {"max_plies": 30},
    "pacosako": {"max_episode_steps": 30},
    "pyrat": {"width": 7, "height": 7, "cheese_count": 5, "max_episode_steps": 20},
    "gomoku": {"size": 9, "win_length": 4, "view": 5, "max_steps": 30},
    "pgx/tic_tac_toe": {},
}


def test_configs_cover_every_registered_env():
    assert set(envs.available_envs()) <= set(CONFIGS)


def _random_action(env, state, key):
    """Uniform legal action(s); one per player for simultaneous games."""
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)


def _playout(env):
    """Jitted: play PLIES random plies on BATCH games along the fast path; at every ply compare
    the slow path's result with the fast one, observed on demand."""

    def body(state, key):
        k_act, k_step = jax.random.split(key)
        acts = jax.vmap(lambda s, k: _random_action(env, s, k))(
            state, jax.random.split(k_act, BATCH))
        keys = jax.random.split(k_step, BATCH)
        fast = jax.vmap(env.transition)(state, acts, keys)
        slow = jax.vmap(env.step)(state, acts, keys)
        # entries that differ (observations may be bool, as pgx's)
        obs_gap = jnp.sum(jax.vmap(env.observe)(fast) != slow.observation)
        same = jax.tree.map(lambda a, b: jnp.all(a == b),
                            fast, slow.replace(observation=None))
        fields_equal = jnp.all(jnp.stack(jax.tree.leaves(same)))
        done = slow.terminated | slow.truncated
        return fast, (obs_gap, fields_equal, jnp.sum(done))

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        init_keys = jax.random.split(k0, BATCH)
        bare = jax.vmap(env.init_state)(init_keys)
        full = jax.vmap(env.init)(init_keys)
        init_gap = jnp.sum(jax.vmap(env.observe)(bare) != full.observation)
        _, (gap, equal, done) = jax.lax.scan(body, bare, jax.random.split(k1, PLIES))
        return init_gap, gap, equal, done

    return run


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_observe_of_transition_equals_step(name):
    env = envs.make(name, **CONFIGS[name])
    init_gap, gap, equal, done = _playout(env)(jax.random.PRNGKey(7))
    assert int(init_gap) == 0
    np.testing.assert_array_equal(np.asarray(gap), 0)
    assert np.asarray(equal).all(), f"{name}: transition and step differ outside observation"
    if name not in ("backgammon",):  # backgammon games outlast PLIES plies
        assert int(np.asarray(done).sum()) > 0, f"{name}: no game finished; absorb not covered"


def test_fast_path_states_carry_no_observation():
    env = envs.make("pgx/tic_tac_toe")
    s = env.init_state(jax.random.PRNGKey(0))
    assert s.observation is None
    t = jax.jit(env.transition)(s, jnp.int32(4))
    assert t.observation is None
    # a bare state becomes a full one with one call, and `step` accepts either kind
    full = jax.jit(env.step)(s, jnp.int32(4))
    np.testing.assert_array_equal(np.asarray(env.observe(t)), np.asarray(full.observation))
    again = jax.jit(env.transition)(full, jnp.int32(0))
    assert again.observation is None


def test_stochastic_transition_needs_a_key():
    env = envs.make("backgammon")
    s = jax.eval_shape(env.init_state, jax.random.PRNGKey(0))  # the check needs no values
    with pytest.raises(ValueError, match="PRNG key"):
        env.transition(s, jnp.int32(0))
