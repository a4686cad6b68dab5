"""Root Dirichlet noise is mixed over the legal actions only (alphazero-chess.md §5.6).

mctx draws its noise over every action id and masks the illegal ones afterwards; at the chess
start 20 of 4,672 actions are legal, so almost none of its noise reached a legal move and the
search looked the same with and without noise. These tests fail on that behaviour.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.networks import WDLValue
from turbozero.search import NetworkEvaluator, MctxConfig, search
from turbozero.search.mctx_policies import noised_prior_logits
from turbozero.search.noise import legal_dirichlet, mix_legal_noise

CHESS = envs.make("chess")


def _uniform(variables, obs):
    # uniform priors and value 0: only the noise can make one legal move stand out
    b = obs.shape[0]
    return jnp.zeros((b, CHESS.num_actions)), jnp.zeros((b, 3))


EVAL = NetworkEvaluator(_uniform, WDLValue())


@functools.partial(jax.jit, static_argnums=(2,))
def _chess_search(states, key, config):
    return search(CHESS, EVAL, None, states, key, config)


def test_noise_is_a_dirichlet_over_legal_actions_only():
    legal = jnp.array([[True, False, True, True, False], [False, False, False, False, True]])
    noise = np.asarray(legal_dirichlet(jax.random.PRNGKey(0), legal, 0.3))
    assert np.all(noise[~np.asarray(legal)] == 0)
    np.testing.assert_allclose(noise.sum(-1), 1.0, rtol=1e-6)
    assert noise[1, 4] == pytest.approx(1.0)  # one legal action takes all the noise
    # the mixture keeps (1 - eps) of the prior: with a uniform prior over 3 legal actions every
    # legal probability is at least 0.75 / 3
    logits = noised_prior_logits(jax.random.PRNGKey(1), jnp.zeros((2, 5)), legal, 0.3, 0.25)
    p = np.asarray(jax.nn.softmax(logits))
    assert np.all(p[0, [0, 2, 3]] >= 0.75 / 3 - 1e-6)
    assert np.all(p[~np.asarray(legal)] < 1e-30)
    # the mctx root's logits are the log of the one mixture (turbozero.search.noise), and the
    # tree kernel's PUCTRoot mixes the same numbers
    uniform = jnp.where(legal, 1.0 / legal.sum(-1, keepdims=True), 0.0)
    mixed = np.asarray(mix_legal_noise(jax.random.PRNGKey(1), uniform, legal, 0.3, 0.25))
    np.testing.assert_allclose(p, mixed, rtol=1e-6, atol=1e-30)
    assert np.all(mixed[~np.asarray(legal)] == 0)


def test_dirichlet_alpha_must_be_positive():
    with pytest.raises(ValueError, match="dirichlet_alpha"):
        MctxConfig(dirichlet_alpha=0.0)


def test_noise_shows_in_the_visits_at_the_chess_start():
    """Uniform priors, 256 simulations: without noise every one of the 20 moves gets ~1/20 of
    the visits; with Dir(0.3) noise at 25% the favoured move takes about twice that."""
    states = jax.vmap(CHESS.init)(jax.random.split(jax.random.PRNGKey(0), 8))
    quiet = MctxConfig(num_simulations=256, dirichlet_fraction=0.0)
    noisy = MctxConfig(num_simulations=256, dirichlet_fraction=0.25, dirichlet_alpha=0.3)
    top_quiet = np.asarray(_chess_search(states, jax.random.PRNGKey(1), quiet).policy).max(-1)
    top_noisy = np.asarray(_chess_search(states, jax.random.PRNGKey(1), noisy).policy).max(-1)
    assert top_quiet.max() < 0.06, top_quiet
    assert top_noisy.mean() > 0.09, top_noisy
    assert top_noisy.mean() > 1.6 * top_quiet.mean()
