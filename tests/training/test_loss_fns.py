"""Loss functions: the spec's BCE, masking, NaN safety, and the AlphaZero losses."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from turbozero.networks import FourWayValue, MLPNet, ScalarValue, WDLValue
from turbozero.training.loss_fns import (
    az_loss_fn,
    az_loss_fn_4way,
    four_way_value_loss,
    outcome_to_wdl,
    policy_cross_entropy,
    scalar_value_loss,
    wdl_value_loss,
)
from turbozero.training.types import Experience, TrainState

floats = st.floats(-30.0, 30.0, allow_nan=False, width=32)


def bce_float64(logits, targets, masks):
    x = np.asarray(logits, np.float64)
    t = np.asarray(targets, np.float64)
    m = np.asarray(masks, np.float64)
    p = 1.0 / (1.0 + np.exp(-x))
    # the direct form -[t log p + (1-t) log(1-p)], in float64 (clipped away from log(0))
    eps = 1e-300
    bce = -(t * np.log(np.maximum(p, eps)) + (1 - t) * np.log(np.maximum(1 - p, eps)))
    return (bce * m).sum() / max(m.sum(), 1.0)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float32, (5, 4), elements=st.floats(-15, 15, width=32)),
    hnp.arrays(np.float32, (5, 4), elements=st.sampled_from([0.0, 1.0])),
    hnp.arrays(np.float32, (5, 4), elements=st.sampled_from([0.0, 1.0])),
)
def test_four_way_bce_matches_float64_reference(logits, targets, masks):
    got = float(four_way_value_loss(jnp.asarray(logits), jnp.asarray(targets), jnp.asarray(masks)))
    assert got == pytest.approx(bce_float64(logits, targets, masks), rel=1e-4, abs=1e-5)


def test_four_way_bce_is_stable_for_extreme_logits():
    logits = jnp.array([[100.0, -100.0, 80.0, -80.0]])
    targets = jnp.array([[0.0, 1.0, 1.0, 0.0]])
    loss = four_way_value_loss(logits, targets, jnp.ones_like(logits))
    assert np.isfinite(float(loss))
    assert float(loss) == pytest.approx((100 + 100 + 0 + 0) / 4, rel=1e-5)


@settings(max_examples=30, deadline=None)
@given(hnp.arrays(np.float32, (3, 4), elements=floats), st.integers(0, 2**12 - 1))
def test_masked_entries_get_zero_gradient(logits, bits):
    masks = jnp.asarray([(bits >> i) & 1 for i in range(12)], jnp.float32).reshape(3, 4)
    targets = jnp.ones((3, 4)) * 0.5
    grad = jax.grad(four_way_value_loss)(jnp.asarray(logits), targets, masks)
    assert np.all(np.asarray(grad)[np.asarray(masks) == 0] == 0.0)


def test_all_masked_gives_zero_not_nan():
    loss = four_way_value_loss(jnp.ones((2, 4)), jnp.ones((2, 4)), jnp.zeros((2, 4)))
    assert float(loss) == 0.0


def test_policy_cross_entropy_nan_safe_with_illegal_and_zero_targets():
    logits = jnp.array([[1.0, 2.0, 3.0, -jnp.inf]])
    target = jnp.array([[0.0, 0.25, 0.75, 0.0]])
    mask = jnp.array([[False, True, True, False]])
    loss = policy_cross_entropy(logits, target, mask)
    expected = -(0.25 * np.log(np.exp(2) / (np.exp(2) + np.exp(3))) + 0.75 * np.log(np.exp(3) / (np.exp(2) + np.exp(3))))
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    g = jax.grad(lambda lg: policy_cross_entropy(lg, target, mask))(jnp.array([[1.0, 2.0, 3.0, 4.0]]))
    assert np.all(np.isfinite(np.asarray(g)))


def test_wdl_and_scalar_losses():
    outcome = jnp.array([1.0, 0.0, -1.0])
    np.testing.assert_array_equal(outcome_to_wdl(outcome), np.eye(3))
    logits = jnp.array([[5.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 5.0]])
    ref = optax.softmax_cross_entropy(logits, jnp.eye(3)).mean()
    assert float(wdl_value_loss(logits, outcome)) == pytest.approx(float(ref))
    assert float(scalar_value_loss(jnp.array([0.5, -0.5]), jnp.array([1.0, -1.0]))) == pytest.approx(0.25)


def test_graded_outcomes_give_soft_wdl_targets_whose_expectation_is_the_outcome():
    outcome = jnp.array([0.4, -0.75, 2.0, -3.0])  # beyond +-1 clips to a certain result
    np.testing.assert_allclose(outcome_to_wdl(outcome), [[0.4, 0.6, 0.0], [0.0, 0.25, 0.75],
                                                         [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    # the heads' losses clip such targets and say how many they clipped
    returns = jnp.stack([outcome, -outcome], axis=-1)  # [4, 2] in seat order
    mover = jnp.array([0, 0, 1, 0])  # 0.4, -0.75, -2.0, -3.0: two beyond 1
    for fmt, out in ((WDLValue(), jnp.zeros((4, 3))), (ScalarValue(), jnp.zeros(4))):
        _, metrics = fmt.loss(out, returns, mover)
        assert float(metrics["value_targets_clipped"]) == pytest.approx(0.5), fmt
        _, metrics = fmt.loss(out, jnp.clip(returns, -1, 1), mover)
        assert float(metrics["value_targets_clipped"]) == 0.0, fmt


@pytest.fixture(scope="module")
def tiny_setup():
    net = MLPNet(num_actions=6, value_format=FourWayValue(), hidden_sizes=(16,))
    obs = jnp.ones((8, 10))
    params = net.init(jax.random.PRNGKey(0), obs)["params"]
    ts = TrainState.create(apply_fn=net.apply, params=params, tx=optax.adam(1e-3))
    exp = Experience(
        observation=jax.random.normal(jax.random.PRNGKey(1), (8, 10)),
        policy=jax.nn.softmax(jax.random.normal(jax.random.PRNGKey(2), (8, 6))),
        legal_action_mask=jnp.ones((8, 6), bool),
        returns=jnp.array([[1, -1], [-2, 2], [3, -3], [-1, 1]] * 2, jnp.float32),
        current_player=jnp.array([0, 1, 0, 1, 1, 0, 1, 0], jnp.int32),
    )
    return ts, exp


def test_az_loss_fn_4way_parts_and_metrics(tiny_setup):
    ts, exp = tiny_setup
    loss, (metrics, _) = jax.jit(az_loss_fn_4way)(ts.params, ts, exp)
    assert float(loss) == pytest.approx(
        float(metrics["policy_loss"] + metrics["value_loss"] + metrics["l2_reg"]), rel=1e-6
    )
    # the value target is the reward of the player to move: rows 0..3 give +1, +2, +3, +1
    assert float(metrics["target_win"]) == pytest.approx(0.5)
    for k in ("pred_win", "pred_gam_win_cond", "pred_gam_loss_cond", "pred_bg_rate"):
        assert 0.0 < float(metrics[k]) < 1.0
    grads = jax.grad(lambda p: az_loss_fn_4way(p, ts, exp)[0])(ts.params)
    assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree_util.tree_leaves(grads))


def test_az_loss_fn_rejects_unknown_head(tiny_setup):
    ts, exp = tiny_setup
    with pytest.raises(ValueError, match="value_format must be a ValueFormat"):
        az_loss_fn(ts.params, ts, exp, value_format=2)
