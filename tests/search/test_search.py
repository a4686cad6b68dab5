"""The mctx search interface on real dynamics: legality, sign conventions, baselines."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.networks import MLPNet, WDLValue
from turbozero.search import NetworkEvaluator, MctxConfig, greedy_actions, random_actions, search
from turbozero.search.mctx_policies import _discount

ENV = envs.make("pgx/tic_tac_toe")
NET = MLPNet(num_actions=ENV.num_actions, value_format=WDLValue(), hidden_sizes=(8,))


def _zero_net_variables():
    # all-zero parameters: uniform priors and value 0, so only the search decides
    v = NET.init(jax.random.PRNGKey(0), jnp.zeros((1,) + ENV.observation_shape))
    return jax.tree_util.tree_map(jnp.zeros_like, v)


EVAL = NetworkEvaluator(NET.apply, WDLValue())


@functools.partial(jax.jit, static_argnums=(3,))
def _search(variables, states, key, config):
    return search(ENV, EVAL, variables, states, key, config)


def _play(actions):
    s = ENV.init(jax.random.PRNGKey(0))
    for a in actions:
        s = ENV.step(s, a)
    return s


def _batch(*states):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


@pytest.mark.parametrize("algorithm", ["muzero", "gumbel"])
def test_search_returns_legal_actions_only(algorithm):
    key = jax.random.PRNGKey(1)
    states = jax.vmap(ENV.init)(jax.random.split(key, 8))
    # advance the games a few random moves so that masks differ
    for i in range(4):
        states = jax.vmap(ENV.step)(states, random_actions(states, jax.random.PRNGKey(i)))
    config = MctxConfig(num_simulations=16, algorithm=algorithm)
    out = _search(_zero_net_variables(), states, jax.random.PRNGKey(9), config)
    mask = np.asarray(states.legal_action_mask)
    live = ~np.asarray(states.terminated)
    a = np.asarray(out.action)
    assert np.all(mask[np.arange(8), a][live])
    w = np.asarray(out.policy)
    assert np.all(w[~mask] == 0)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-5)


# X (player to move first) takes cells; board index = row*3+col.
WIN_FOR_X = [0, 3, 1, 4]  # X: 0,1  O: 3,4 ; X to move wins with 2
WIN_FOR_O = [0, 3, 1, 4, 8]  # X: 0,1,8 O: 3,4 ; O to move wins with 5 (and must not allow 2)


@pytest.mark.parametrize("moves,winning", [(WIN_FOR_X, 2), (WIN_FOR_O, 5)])
def test_search_finds_win_in_one_for_either_side(moves, winning):
    s = _play(moves)
    config = MctxConfig(num_simulations=64, dirichlet_fraction=0.0)
    out = _search(_zero_net_variables(), _batch(s, s), jax.random.PRNGKey(3), config)
    assert list(np.asarray(out.action)) == [winning, winning]
    assert float(out.root_value[0]) > 0.5


def test_search_blocks_mate_threat():
    # X: 0, 1 ; O: 4 ; O to move must block at 2 (else X wins next move)
    s = _play([0, 4, 1])
    config = MctxConfig(num_simulations=200, dirichlet_fraction=0.0)
    out = _search(_zero_net_variables(), _batch(s), jax.random.PRNGKey(4), config)
    assert int(out.action[0]) == 2


def test_greedy_takes_immediate_win():
    s = _play(WIN_FOR_X)
    a = jax.jit(lambda v, st: greedy_actions(ENV, EVAL, v, st))(_zero_net_variables(), _batch(s))
    assert int(a[0]) == 2


def test_discount_convention():
    class S:  # minimal stand-in with the fields _discount reads
        def __init__(self, cp, term):
            self.current_player = jnp.asarray(cp)
            self.terminated = jnp.asarray(term)
            self.truncated = jnp.zeros_like(self.terminated)

    d = _discount(S([0, 1, 1], [False, False, True]), jnp.asarray([0, 0, 0]))
    np.testing.assert_array_equal(np.asarray(d), [1.0, -1.0, 0.0])


def test_search_config_validation():
    with pytest.raises(ValueError, match="num_simulations"):
        MctxConfig(num_simulations=0)
    with pytest.raises(ValueError, match="algorithm"):
        MctxConfig(algorithm="alphabeta")
