"""`turbozero.search.search` checks its inputs (issue 45 item 6): at trace time a batch of
states and an evaluator of the env's width, one ValueError line each (was: an error deep inside
JAX); under TURBOZERO_CHECK_EVALUATOR=1, NaN logits and non-finite values named (was: a NaN
root value and action 0, silently)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.search import (MctxConfig, NetworkEvaluator, OnePlyConfig, PUCTRoot,
                              TreeSearchConfig, random_actions, search)
from turbozero.search import checks
from turbozero.networks.value_formats import WDLValue

TTT = envs.make("pgx/tic_tac_toe")
CONFIGS = [
    TreeSearchConfig(num_simulations=4, root=PUCTRoot(dirichlet_fraction=0.0)),
    MctxConfig(num_simulations=4, dirichlet_fraction=0.0),
    OnePlyConfig(),
]
IDS = ["tree", "mctx", "one-ply"]


def _apply(width=9, value=0.1, batched_value=True):
    def apply(variables, obs):
        del variables
        b = obs.shape[0]
        flat = obs.reshape(b, -1).astype(jnp.float32)
        logits = jnp.sin(flat[:, :1] + jnp.arange(float(width)))
        v = jnp.full((b,), value) if batched_value else jnp.asarray(value)
        return logits, v
    return apply


@pytest.fixture(scope="module")
def states():
    s = jax.vmap(TTT.init)(jax.random.split(jax.random.PRNGKey(0), 4))
    return jax.vmap(TTT.step)(s, random_actions(s, jax.random.PRNGKey(1)))


def _one_line(err) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_wrong_logit_width_is_one_line_at_trace_time(states, config):
    evaluator = NetworkEvaluator(_apply(width=7))
    with pytest.raises(ValueError) as err:  # inside jit: found while tracing
        jax.jit(lambda s, k: search(TTT, evaluator, None, s, k, config))(
            states, jax.random.PRNGKey(2))
    assert _one_line(err) == ("search: the evaluator's policy logits have shape (4, 7) for a "
                              "batch of 4 states; pgx/tic_tac_toe has 9 actions, so [4, 9] is "
                              "expected")


@pytest.mark.parametrize("config", CONFIGS, ids=IDS)
def test_an_unbatched_state_is_one_line(config):
    state = TTT.init(jax.random.PRNGKey(0))
    with pytest.raises(ValueError) as err:
        search(TTT, NetworkEvaluator(_apply()), None, state, jax.random.PRNGKey(2), config)
    assert _one_line(err).startswith(
        "search: states must be a batch of pgx/tic_tac_toe states with a leading batch axis B; "
        "current_player has shape () and legal_action_mask (9,)")


def test_value_outputs_that_do_not_fit_are_one_line(states):
    config = CONFIGS[0]
    with pytest.raises(ValueError) as err:  # a value without the batch axis
        search(TTT, NetworkEvaluator(_apply(batched_value=False)), None, states,
               jax.random.PRNGKey(2), config)
    assert _one_line(err) == ("search: the evaluator's value output has shape (); a leading "
                              "batch axis of 4 is expected")
    # a scalar value given to a WDL value format (which wants three logits per position)
    with pytest.raises(ValueError) as err:
        search(TTT, NetworkEvaluator(_apply(), WDLValue()), None, states,
               jax.random.PRNGKey(2), config)
    assert _one_line(err) == ("search: the evaluator's value output has shape (4,); its value "
                              "format wdl gives (4, 3) for a batch of 4")


def test_an_evaluator_that_fails_is_one_line(states):
    def broken(variables, obs):
        return jnp.dot(obs.reshape(obs.shape[0], -1), jnp.ones((5, 9))), jnp.zeros(obs.shape[0])

    with pytest.raises(ValueError) as err:
        search(TTT, NetworkEvaluator(broken), None, states, jax.random.PRNGKey(2), CONFIGS[0])
    assert _one_line(err).startswith("search: the evaluator fails on a batch of observations "
                                     "of shape (4, 3, 3, 2): TypeError: ")


def test_nan_values_are_named_under_the_debug_switch(states, monkeypatch):
    """Called eagerly, search raises the ValueError itself."""
    evaluator = NetworkEvaluator(_apply(value=float("nan")))
    monkeypatch.setenv(checks.ENV_VAR, "1")
    with pytest.raises(ValueError) as err:
        search(TTT, evaluator, None, states, jax.random.PRNGKey(2), OnePlyConfig())
    assert _one_line(err) == ("the evaluator returned a NaN or infinite value at 36 of 36 "
                              "positions (the first: position 0) in the one-ply search "
                              f"({checks.ENV_VAR}=1)")


@pytest.mark.parametrize("config", [CONFIGS[0], pytest.param(CONFIGS[1], marks=pytest.mark.slow)],
                         ids=IDS[:2])
def test_nan_values_are_named_inside_the_callers_jit(states, config, monkeypatch):
    """Traced inside the caller's jit, the compiled call raises (jax wraps the host error);
    the line is found in it (`cli.main` prints it alone). Without the switch: nothing said."""
    evaluator = NetworkEvaluator(_apply(value=float("nan")))
    key = jax.random.PRNGKey(2)
    monkeypatch.delenv(checks.ENV_VAR, raising=False)
    quiet = jax.jit(lambda s, k: search(TTT, evaluator, None, s, k, config))(states, key)
    assert np.isnan(np.asarray(quiet.root_value)).all()
    monkeypatch.setenv(checks.ENV_VAR, "1")
    with pytest.raises(Exception) as err:
        jax.block_until_ready(
            jax.jit(lambda s, k: search(TTT, evaluator, None, s, k, config))(states, key))
    line = checks.evaluator_error_line(err.value)
    assert line.startswith("the evaluator returned a NaN or infinite value at 4 of 4 positions "
                           "(the first: position 0)"), line
    assert line.endswith(f"in the {type(config).family} search ({checks.ENV_VAR}=1)")


@pytest.mark.slow
def test_the_debug_switch_passes_finite_outputs(states, monkeypatch):
    run = lambda: jax.jit(lambda s, k: search(TTT, NetworkEvaluator(_apply()), None, s, k,  # noqa: E731
                                              CONFIGS[0]))(states, jax.random.PRNGKey(2))
    monkeypatch.setenv(checks.ENV_VAR, "1")
    a = run()
    monkeypatch.delenv(checks.ENV_VAR)
    b = run()
    np.testing.assert_array_equal(np.asarray(a.action), np.asarray(b.action))
    np.testing.assert_array_equal(np.asarray(a.policy), np.asarray(b.policy))


def test_nan_logits_are_named_with_the_first_position():
    with pytest.raises(checks.NonFiniteEvaluation) as err:
        checks._report("tree", np.array([[0.0, 1.0], [np.nan, 0.0], [np.nan, 1.0]]),
                       np.zeros(3))
    assert str(err.value) == (checks.MARK + "the evaluator returned NaN policy logits at 2 of 3 "
                              "positions (the first: position 1) in the tree search "
                              f"({checks.ENV_VAR}=1)")
