"""The 4-way value format: the spec's unit tables, properties, jit/vmap/grad, bad input.

Match play against gnubg lives in tests/equity/test_met.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from equity import (
    OUTCOME_POINTS,
    equity_to_normalized,
    gnubg_to_value_outputs,
    match_winning_chance,
    money_equity,
    normalized_to_equity,
    outcome_match_winning_chances,
    outcome_probabilities,
    reward_to_value_targets,
    value_outputs_to_equity,
    value_outputs_to_gnubg,
)

# backgammon-4way-value-head.md, "Testing", item 1, verbatim.
SPEC_TARGETS = {
    1: ([1, 0, 0, 0], [1, 1, 0, 0]),
    2: ([1, 1, 0, 0], [1, 1, 0, 1]),
    3: ([1, 1, 0, 1], [1, 1, 0, 1]),
    -1: ([0, 0, 0, 0], [1, 0, 1, 0]),
    -2: ([0, 0, 1, 0], [1, 0, 1, 1]),
    -3: ([0, 0, 1, 1], [1, 0, 1, 1]),
}

# Item 2 of the same list.
SPEC_EQUITIES = [
    ([1, 0, 0, 0], 1.0),
    ([1, 1, 0, 0], 2.0),
    ([1, 1, 0, 1], 3.0),
    ([0, 0, 0, 0], -1.0),
]


@pytest.mark.parametrize("reward", sorted(SPEC_TARGETS))
def test_reward_targets_spec_table(reward):
    targets, masks = reward_to_value_targets(reward)
    want_t, want_m = SPEC_TARGETS[reward]
    np.testing.assert_array_equal(np.asarray(targets), want_t)
    np.testing.assert_array_equal(np.asarray(masks), want_m)
    assert targets.dtype == jnp.float32 and masks.dtype == jnp.float32


def test_reward_targets_batched_any_shape_and_float_rewards():
    rewards = np.array([[1, 2, 3], [-1, -2, -3]])
    for r in (rewards, rewards.astype(np.float32)):
        targets, masks = reward_to_value_targets(jnp.asarray(r))
        assert targets.shape == masks.shape == (2, 3, 4)
        for idx in np.ndindex(2, 3):
            want_t, want_m = SPEC_TARGETS[int(rewards[idx])]
            np.testing.assert_array_equal(np.asarray(targets[idx]), want_t)
            np.testing.assert_array_equal(np.asarray(masks[idx]), want_m)


@pytest.mark.parametrize("probs,want", SPEC_EQUITIES)
def test_money_equity_spec_table(probs, want):
    assert float(value_outputs_to_equity(jnp.array(probs, jnp.float32))) == pytest.approx(want)


def test_money_equity_intermediate_by_hand():
    # [0.5, 0.2, 0.3, 0.1]: wins 0.5 of which gammons 0.5*0.2 = 0.1, backgammons 0.1*0.1 = 0.01;
    # losses 0.5, gammons 0.5*0.3 = 0.15, backgammons 0.15*0.1 = 0.015.
    # wins:   single 0.4*1 + gammon-only 0.09*2 + bg 0.01*3   = 0.61
    # losses: single 0.35*1 + gammon-only 0.135*2 + bg 0.015*3 = 0.665
    v = jnp.array([0.5, 0.2, 0.3, 0.1])
    assert float(value_outputs_to_equity(v)) == pytest.approx(0.61 - 0.665, abs=1e-6)
    np.testing.assert_allclose(np.asarray(outcome_probabilities(v)),
                               [0.4, 0.09, 0.01, 0.35, 0.135, 0.015], atol=1e-7)


def test_gnubg_format_round_trip_and_gnubg_money_formula():
    v = jnp.array([[0.5, 0.2, 0.3, 0.1], [0.9, 0.4, 0.0, 0.25], [0.0, 0.0, 0.7, 1.0]])
    g = value_outputs_to_gnubg(v)
    np.testing.assert_allclose(np.asarray(g[0]), [0.5, 0.1, 0.01, 0.15, 0.015], atol=1e-7)
    np.testing.assert_allclose(np.asarray(gnubg_to_value_outputs(g)), np.asarray(v), atol=1e-6)
    # gnubg's own cubeless money utility: 2w - 1 + wg - lg + wbg - lbg.
    w, wg, wbg, lg, lbg = np.moveaxis(np.asarray(g, np.float64), -1, 0)
    np.testing.assert_allclose(np.asarray(money_equity(v)), 2 * w - 1 + wg - lg + wbg - lbg,
                               atol=1e-6)


def test_match_play_uses_met_and_money_is_default():
    v = jnp.array([0.6, 0.3, 0.2, 0.1])
    assert float(value_outputs_to_equity(v, None)) == pytest.approx(float(money_equity(v)))
    assert float(value_outputs_to_equity(v, (2, 3, 7))) == pytest.approx(
        float(match_winning_chance(v, (2, 3, 7))))


def test_normalized_endpoints():
    np.testing.assert_allclose(np.asarray(equity_to_normalized(jnp.array([-3.0, 0.0, 3.0]))),
                               [0.0, 0.5, 1.0])
    np.testing.assert_allclose(np.asarray(normalized_to_equity(jnp.array([0.0, 0.5, 1.0]))),
                               [-3.0, 0.0, 3.0])


# ---------------------------------------------------------------- properties (hypothesis)

prob = st.floats(0.0, 1.0, allow_nan=False, width=32)
four = st.tuples(prob, prob, prob, prob)


@st.composite
def scores(draw):
    length = draw(st.integers(1, 25))
    return (draw(st.integers(0, length - 1)), draw(st.integers(0, length - 1)), length)


@settings(max_examples=60, deadline=None)
@given(st.lists(four, min_size=1, max_size=8))
def test_money_equity_in_range_and_outcomes_are_a_distribution(rows):
    v = jnp.array(rows, jnp.float32)
    eq = np.asarray(value_outputs_to_equity(v))
    assert np.all(eq >= -3.0 - 1e-5) and np.all(eq <= 3.0 + 1e-5)
    p = np.asarray(outcome_probabilities(v))
    assert np.all(p >= 0.0)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(eq, p @ np.array(OUTCOME_POINTS, np.float32), atol=1e-5)


@settings(max_examples=60, deadline=None)
@given(four, prob, scores())
def test_monotone_in_win(row, other_win, score):
    lo, hi = sorted([row[0], other_win])
    v = jnp.array([[lo, *row[1:]], [hi, *row[1:]]], jnp.float32)
    eq = np.asarray(value_outputs_to_equity(v))
    assert eq[0] <= eq[1] + 1e-5
    mwc = np.asarray(value_outputs_to_equity(v, score))
    assert np.all(mwc >= -1e-6) and np.all(mwc <= 1.0 + 1e-6)
    assert mwc[0] <= mwc[1] + 1e-6


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-3.0, 3.0, allow_nan=False, width=32), min_size=1, max_size=8))
def test_normalized_round_trip(values):
    eq = jnp.array(values, jnp.float32)
    n = equity_to_normalized(eq)
    assert np.all(np.asarray(n) >= 0.0) and np.all(np.asarray(n) <= 1.0)
    np.testing.assert_allclose(np.asarray(normalized_to_equity(n)), values, atol=1e-5)
    np.testing.assert_allclose(np.asarray(equity_to_normalized(normalized_to_equity(n))),
                               np.asarray(n), atol=1e-6)


# ---------------------------------------------------------------- jit / vmap / grad

@pytest.fixture(scope="module")
def transformed():
    """Each function is traced once for the module."""

    @jax.jit
    def f(value_probs, reward, my_score, opp_score, length):
        targets, masks = reward_to_value_targets(reward)
        money = value_outputs_to_equity(value_probs)
        mwc = value_outputs_to_equity(value_probs, (my_score, opp_score, length))
        # Gradients of the summed equities with respect to the probabilities.
        g_money = jax.grad(lambda v: value_outputs_to_equity(v).sum())(value_probs)
        g_mwc = jax.grad(
            lambda v: value_outputs_to_equity(v, (my_score, opp_score, length)).sum())(value_probs)
        per_score = jax.vmap(lambda s: value_outputs_to_equity(value_probs[0], (s, opp_score[0],
                                                                                length[0])))(
            jnp.arange(7))
        return targets, masks, money, mwc, g_money, g_mwc, per_score

    return f


def test_jit_vmap_grad_match_eager(transformed):
    v = jnp.array([[0.5, 0.2, 0.3, 0.1], [0.7, 0.4, 0.1, 0.2], [0.2, 0.0, 0.6, 0.5]])
    reward = jnp.array([3, -2, 1])
    my, opp, length = jnp.array([0, 2, 6]), jnp.array([0, 4, 3]), jnp.array([7, 7, 7])
    targets, masks, money, mwc, g_money, g_mwc, per_score = transformed(v, reward, my, opp, length)
    for i in range(3):
        want_t, want_m = SPEC_TARGETS[int(reward[i])]
        np.testing.assert_array_equal(np.asarray(targets[i]), want_t)
        np.testing.assert_array_equal(np.asarray(masks[i]), want_m)
        score = (int(my[i]), int(opp[i]), 7)
        assert float(mwc[i]) == pytest.approx(float(value_outputs_to_equity(v[i], score)), abs=1e-6)
    np.testing.assert_allclose(np.asarray(money), np.asarray(value_outputs_to_equity(v)), atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(per_score),
        [float(value_outputs_to_equity(v[0], (s, 0, 7))) for s in range(7)], atol=1e-6)

    # Analytic gradient of money equity in win: 1 + gw(1 + bg) + 1 + gl(1 + bg).
    w, gw, gl, bg = (np.asarray(v[:, k], np.float64) for k in range(4))
    np.testing.assert_allclose(np.asarray(g_money[:, 0]),
                               2 + gw * (1 + bg) + gl * (1 + bg), atol=1e-5)
    np.testing.assert_allclose(np.asarray(g_money[:, 1]), w * (1 + bg), atol=1e-5)
    np.testing.assert_allclose(np.asarray(g_money[:, 2]), -(1 - w) * (1 + bg), atol=1e-5)
    np.testing.assert_allclose(np.asarray(g_money[:, 3]), w * gw - (1 - w) * gl, atol=1e-5)

    # MWC is linear in `win`: its derivative is E[MWC | win] - E[MWC | loss].
    m = np.asarray(outcome_match_winning_chances((my, opp, length)), np.float64)
    e_win = (1 - gw) * m[:, 0] + gw * (1 - bg) * m[:, 1] + gw * bg * m[:, 2]
    e_loss = (1 - gl) * m[:, 3] + gl * (1 - bg) * m[:, 4] + gl * bg * m[:, 5]
    np.testing.assert_allclose(np.asarray(g_mwc[:, 0]), e_win - e_loss, atol=1e-5)
    assert np.all(np.isfinite(np.asarray(g_mwc)))


def test_traced_bad_input_is_read_as_documented():
    """Traced values cannot be checked: rewards are read by sign/size, scores clipped."""
    v = jnp.array([0.6, 0.3, 0.2, 0.1])

    @jax.jit
    def f(reward, length, my_score):
        return reward_to_value_targets(reward), value_outputs_to_equity(v, (my_score, 0, length))

    (targets, masks), mwc = f(jnp.array([0, 5]), 30, 40)
    np.testing.assert_array_equal(np.asarray(targets), [SPEC_TARGETS[-1][0], SPEC_TARGETS[3][0]])
    np.testing.assert_array_equal(np.asarray(masks), [SPEC_TARGETS[-1][1], SPEC_TARGETS[3][1]])
    # length 30 -> 25, my_score 40 -> 24: I am 1 away, the opponent 25 away (Crawford game).
    assert float(mwc) == pytest.approx(float(value_outputs_to_equity(v, (24, 0, 25))), abs=1e-6)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("reward", [0, 4, -4, 1.5, float("nan"), [1, 2, 0]])
def test_bad_reward(reward):
    with pytest.raises(ValueError, match="reward"):
        reward_to_value_targets(jnp.asarray(reward) if isinstance(reward, list) else reward)


@pytest.mark.parametrize("shape", [(3,), (2, 5), (4, 1), ()])
def test_bad_value_probs_shape(shape):
    with pytest.raises(ValueError, match="value_probs"):
        value_outputs_to_equity(jnp.full(shape, 0.5))
    with pytest.raises(ValueError, match="value_probs"):
        value_outputs_to_equity(jnp.full(shape, 0.5), (0, 0, 5))


def test_bad_value_probs_shape_under_jit():
    with pytest.raises(ValueError, match="value_probs"):
        jax.jit(value_outputs_to_equity)(jnp.full((2, 3), 0.5))


@pytest.mark.parametrize("probs", [[1.5, 0, 0, 0], [0.5, -0.1, 0, 0], [0.5, 0.5, float("nan"), 0]])
def test_bad_value_probs_values(probs):
    with pytest.raises(ValueError, match="value_probs"):
        value_outputs_to_equity(jnp.array(probs))


@pytest.mark.parametrize("score,name", [
    ((7, 0, 7), "my_score"), ((0, 7, 7), "opp_score"), ((0, 9, 7), "opp_score"),
    ((0, 0, -3), "match_length"), ((0, 0, 0), "match_length"), ((0, 0, 26), "match_length"),
    ((-1, 0, 7), "my_score"), ((1.5, 0, 7), "my_score"), ((0, 0), "match_score"),
    ((0, 0, 7, 1), "match_score"), (None, None),
])
def test_bad_match_score(score, name):
    v = jnp.array([0.5, 0.2, 0.3, 0.1])
    if score is None:  # a bare int is not a score
        with pytest.raises(ValueError, match="match_score"):
            value_outputs_to_equity(v, 7)
        return
    with pytest.raises(ValueError, match=name):
        value_outputs_to_equity(v, score)


def test_gnubg_conversion_gradient_finite_where_conditions_are_empty():
    # win = 1 (no losses) and no gammons: the conditionals are 0/0, set to 0 with a finite grad.
    g = jnp.array([1.0, 0.0, 0.0, 0.0, 0.0])
    v = gnubg_to_value_outputs(g)
    np.testing.assert_array_equal(np.asarray(v), [1.0, 0.0, 0.0, 0.0])
    grad = jax.grad(lambda x: gnubg_to_value_outputs(x).sum())(g)
    assert np.all(np.isfinite(np.asarray(grad)))
