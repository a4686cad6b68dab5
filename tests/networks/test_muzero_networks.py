"""MuZero's networks (turbozero/networks/muzero.py, docs/gomoku.md "MuZero networks").

On 3-player gomoku observations through a 5x5 view: the shapes and dtypes of every part, the
min-max scaled hidden states (checked against numpy), the value and reward ranges, a dynamics
that tells actions apart, gradients reaching every parameter through a 3-step unroll (this
file's own loss and the library's `muzero_loss`), jit, the training loop's `train=False`
convention, and the ValueErrors of bad settings and bad inputs.
"""

from __future__ import annotations

import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import envs
from turbozero.networks.muzero import MIN_HIDDEN_RANGE, MuZeroNet, normalize_hidden

P = 3
VIEW = 5
A = VIEW * VIEW
ENV = envs.make("gomoku", size=7, win_length=4, num_players=P, view=VIEW)
SETTINGS = dict(num_actions=A, num_players=P, hidden_shape=(VIEW, VIEW), channels=8,
                representation_blocks=1, dynamics_blocks=1, prediction_blocks=1,
                projection_dim=16, head_hidden=16)
K = 3  # unroll steps of the gradient tests
B = 4  # positions per batch


def _positions(num: int, moves: int, seed: int):
    """`num` observations of random legal play, `moves` stones in, with the actions played."""
    step, observe = jax.jit(ENV.step), jax.jit(ENV.observe)
    rng = np.random.default_rng(seed)
    obs, actions = [], []
    for _ in range(num):
        s = ENV.init(jax.random.PRNGKey(int(rng.integers(1 << 30))))
        seq_obs, seq_act = [], []
        for _ in range(moves):
            seq_obs.append(observe(s))
            a = int(rng.choice(np.flatnonzero(np.asarray(s.legal_action_mask))))
            seq_act.append(a)
            s = step(s, jnp.int32(a))
        seq_obs.append(observe(s))
        obs.append(jnp.stack(seq_obs))
        actions.append(seq_act)
    return jnp.stack(obs), jnp.asarray(actions, jnp.int32)  # [num, moves + 1, ...], [num, moves]


@pytest.fixture(scope="module")
def setup():
    net = MuZeroNet(**SETTINGS)
    obs, actions = _positions(B, K, seed=0)  # float32[B, K + 1, 5, 5, 10], int32[B, K]
    variables = net.init(jax.random.PRNGKey(1), obs[:, 0])
    return net, variables, obs, actions


# ----------------------------------------------------------------- shapes, ranges, init
def test_every_method_has_the_documented_shapes_and_dtypes(setup):
    net, variables, obs, actions = setup
    assert obs.shape == (B, K + 1, VIEW, VIEW, 2 * P + 4) and obs.dtype == jnp.float32
    hidden = net.apply(variables, obs[:, 0], method=MuZeroNet.represent)
    assert hidden.shape == (B, VIEW, VIEW, 8) and hidden.dtype == jnp.float32
    nxt, reward = net.apply(variables, hidden, actions[:, 0], method=MuZeroNet.dynamics)
    assert nxt.shape == hidden.shape and nxt.dtype == jnp.float32
    assert reward.shape == (B, P) and reward.dtype == jnp.float32
    logits, value = net.apply(variables, hidden, method=MuZeroNet.predict)
    assert logits.shape == (B, A) and logits.dtype == jnp.float32
    assert value.shape == (B, P) and value.dtype == jnp.float32
    for predictor in (False, True):
        z = net.apply(variables, hidden, predictor, method=MuZeroNet.project)
        assert z.shape == (B, 16) and z.dtype == jnp.float32
    # the call is prediction on the representation
    logits_c, value_c = net.apply(variables, obs[:, 0])
    np.testing.assert_allclose(logits_c, logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(value_c, value, rtol=1e-6, atol=1e-6)
    # parameters are float32
    assert {leaf.dtype for leaf in jax.tree_util.tree_leaves(variables)} == {jnp.dtype("float32")}


def test_init_creates_the_parameters_of_all_four_parts(setup):
    """`init` through `__call__` alone creates what every method needs (apply would raise on a
    missing parameter), and nothing but parameters (no BatchNorm statistics)."""
    net, variables, obs, actions = setup
    assert set(variables) == {"params"}
    names = set(variables["params"])
    for part in ("repr_stem", "repr_tower", "dyn_stem", "dyn_tower", "reward", "pred_tower",
                 "policy", "value", "proj_0", "proj_2", "predictor_0", "predictor_1"):
        assert part in names, part
    # the predictor's layers are used only by project(..., True): init must still make them
    hidden = net.apply(variables, obs[:, 0], method="represent")
    net.apply(variables, hidden, True, method="project")
    net.apply(variables, hidden, actions[:, 0], method="dynamics")


def _unroll_hidden(net, variables, obs, actions):
    """Hidden states of the root and of K dynamics steps: K + 1 arrays [B, H, W, C]."""
    hidden = [net.apply(variables, obs[:, 0], method="represent")]
    rewards = []
    for k in range(actions.shape[1]):
        h, r = net.apply(variables, hidden[-1], actions[:, k], method="dynamics")
        hidden.append(h)
        rewards.append(r)
    return hidden, rewards


def test_hidden_states_are_min_max_scaled_per_sample(setup):
    """After representation and after every dynamics step each sample spans exactly [0, 1]."""
    net, variables, obs, actions = setup
    hidden, _ = _unroll_hidden(net, variables, obs, actions)
    for h in hidden:
        flat = np.asarray(h).reshape(B, -1)
        np.testing.assert_allclose(flat.min(axis=1), 0.0, atol=1e-6)
        np.testing.assert_allclose(flat.max(axis=1), 1.0, atol=1e-6)


def test_normalize_hidden_against_numpy_and_its_zero_range_guard():
    rng = np.random.default_rng(3)
    scales = np.array([1.0, 10.0, 1e-3]).reshape(3, 1, 1, 1)  # one per sample
    x = (rng.normal(size=(3, 4, 4, 2)) * scales).astype(np.float32)
    flat = x.reshape(3, -1)
    want = (flat - flat.min(1, keepdims=True)) / (flat.max(1, keepdims=True)
                                                   - flat.min(1, keepdims=True))
    np.testing.assert_allclose(np.asarray(normalize_hidden(jnp.asarray(x))).reshape(3, -1), want,
                               rtol=1e-5, atol=1e-5)
    # a constant sample (no range) maps to zeros, not NaN; its neighbours are unaffected
    x[1] = 7.0
    out = np.asarray(normalize_hidden(jnp.asarray(x)))
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out[1], 0.0)
    np.testing.assert_allclose(out[0].reshape(-1), want[0], rtol=1e-5, atol=1e-5)
    # a range just under the floor is divided by the floor (so stays within [0, 1))
    y = jnp.zeros((1, 2, 2, 1)).at[0, 0, 0, 0].set(MIN_HIDDEN_RANGE / 2)
    assert float(normalize_hidden(y).max()) == pytest.approx(0.5)


def test_values_and_rewards_lie_in_the_open_unit_interval(setup):
    net, variables, obs, actions = setup
    hidden, rewards = _unroll_hidden(net, variables, obs, actions)
    for h in hidden:
        _, value = net.apply(variables, h, method="predict")
        assert np.all(np.abs(np.asarray(value)) < 1.0)
    for r in rewards:
        assert np.all(np.abs(np.asarray(r)) < 1.0)


def test_dynamics_tells_every_action_apart(setup):
    """From one hidden state, the A actions lead to A different hidden states."""
    net, variables, obs, _ = setup
    hidden = net.apply(variables, obs[:1, 1], method="represent")  # [1, H, W, C]
    nxt, _ = net.apply(variables, jnp.repeat(hidden, A, axis=0), jnp.arange(A, dtype=jnp.int32),
                       method="dynamics")
    flat = np.asarray(nxt).reshape(A, -1)
    gaps = np.abs(flat[:, None] - flat[None]).max(axis=-1)  # [A, A]
    off_diagonal = gaps[~np.eye(A, dtype=bool)]
    assert off_diagonal.min() > 1e-4, off_diagonal.min()


# ----------------------------------------------------------------- gradients through an unroll
def _cosine_distance(p, t):
    p = p / jnp.linalg.norm(p, axis=-1, keepdims=True)
    t = t / jnp.linalg.norm(t, axis=-1, keepdims=True)
    return 2.0 - 2.0 * jnp.sum(p * t, axis=-1)


def _unroll_loss(params, net, obs, actions, policy, value, reward):
    """A K-step MuZero loss written here: every head against fixed targets, and the
    consistency of the dynamics' projection with the representation's (target branch
    stopped)."""
    variables = {"params": params}
    hidden = net.apply(variables, obs[:, 0], method="represent")
    loss = 0.0
    for k in range(actions.shape[1] + 1):
        logits, v = net.apply(variables, hidden, method="predict")
        loss += -jnp.mean(jnp.sum(policy[:, k] * jax.nn.log_softmax(logits), axis=-1))
        loss += jnp.mean(jnp.sum((v - value[:, k]) ** 2, axis=-1))
        if k == actions.shape[1]:
            break
        hidden, r = net.apply(variables, hidden, actions[:, k], method="dynamics")
        loss += jnp.mean(jnp.sum((r - reward[:, k]) ** 2, axis=-1))
        online = net.apply(variables, hidden, True, method="project")
        real = net.apply(variables, obs[:, k + 1], method="represent")
        target = jax.lax.stop_gradient(net.apply(variables, real, False, method="project"))
        loss += jnp.mean(_cosine_distance(online, target))
    return loss


@pytest.fixture(scope="module")
def targets():
    rng = np.random.default_rng(5)
    policy = jax.nn.softmax(jnp.asarray(rng.normal(size=(B, K + 1, A)), jnp.float32) * 2.0)
    value = jnp.asarray(rng.uniform(-1, 1, size=(B, K + 1, P)), jnp.float32)
    reward = jnp.asarray(rng.uniform(-1, 1, size=(B, K, P)), jnp.float32)
    return policy, value, reward


def _zero_leaves(grads):
    flat = jax.tree_util.tree_flatten_with_path(grads)[0]
    return [jax.tree_util.keystr(path) for path, g in flat if not np.any(np.asarray(g) != 0.0)]


def test_gradients_reach_every_parameter_through_a_three_step_unroll(setup, targets):
    net, variables, obs, actions = setup
    loss_fn = jax.jit(functools.partial(_unroll_loss, net=net))
    loss, grads = jax.value_and_grad(lambda p: loss_fn(p, obs=obs, actions=actions,
                                                       policy=targets[0], value=targets[1],
                                                       reward=targets[2]))(variables["params"])
    assert np.isfinite(float(loss))
    assert _zero_leaves(grads) == []
    assert all(np.all(np.isfinite(np.asarray(g))) for g in jax.tree_util.tree_leaves(grads))


def test_the_library_muzero_loss_reaches_every_parameter(setup, targets):
    """The training loss (`turbozero.training.muzero.muzero_loss`, methods called by name)
    runs on this network, and its gradient too reaches every parameter."""
    from turbozero.training.muzero import MuZeroBatch, MuZeroConfig, muzero_loss

    net, variables, obs, actions = setup
    batch = MuZeroBatch(observation=obs, action=actions, policy=targets[0], value=targets[1],
                        reward=targets[2], valid=jnp.ones((B, K + 1), jnp.bool_))
    state = types.SimpleNamespace(apply_fn=net.apply)
    config = MuZeroConfig(unroll_steps=K)
    grad_fn = jax.jit(jax.grad(
        lambda p: muzero_loss(p, state, batch, config=config)[0]))
    grads = grad_fn(variables["params"])
    assert _zero_leaves(grads) == []


def test_a_few_adam_steps_fit_a_fixed_unroll_batch(setup, targets):
    """Trainable, not just differentiable: 40 Adam steps at lr 3e-3 cut this file's unroll
    loss on one batch of 4 windows by at least a third."""
    net, variables, obs, actions = setup
    opt = optax.adam(3e-3)
    loss_fn = functools.partial(_unroll_loss, net=net, obs=obs, actions=actions,
                                policy=targets[0], value=targets[1], reward=targets[2])

    @jax.jit
    def train(params):
        def body(carry, _):
            params, opt_state = carry
            loss, g = jax.value_and_grad(loss_fn)(params)
            updates, opt_state = opt.update(g, opt_state)
            return (optax.apply_updates(params, updates), opt_state), loss
        _, losses = jax.lax.scan(body, (params, opt.init(params)), None, length=40)
        return losses

    losses = np.asarray(train(variables["params"]))
    assert np.all(np.isfinite(losses))
    assert losses[-1] < losses[0] * (2.0 / 3.0), (losses[0], losses[-1])


# ----------------------------------------------------------------- jit and the loop's convention
def test_jitted_methods_match_eager_ones_and_accept_train_false(setup):
    """Under jit the methods give the eager results; `functools.partial(apply, train=False)`
    (how the training loop hands `apply` to the algorithm) works for every method."""
    net, variables, obs, actions = setup
    apply = functools.partial(net.apply, train=False)
    hidden = net.apply(variables, obs[:, 0], method="represent")
    np.testing.assert_allclose(
        jax.jit(lambda v, o: apply(v, o, method="represent"))(variables, obs[:, 0]), hidden,
        rtol=1e-5, atol=1e-5)
    eager = net.apply(variables, hidden, actions[:, 0], method="dynamics")
    jitted = jax.jit(lambda v, h, a: apply(v, h, a, method="dynamics"))(
        variables, hidden, actions[:, 0])
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j, e, rtol=1e-5, atol=1e-5)
    eager = net.apply(variables, hidden, method="predict")
    jitted = jax.jit(lambda v, h: apply(v, h, method="predict"))(variables, hidden)
    for e, j in zip(eager, jitted):
        np.testing.assert_allclose(j, e, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        jax.jit(lambda v, h: apply(v, h, True, method="project"))(variables, hidden),
        net.apply(variables, hidden, True, method="project"), rtol=1e-5, atol=1e-5)
    logits, _ = jax.jit(apply)(variables, obs[:, 0])
    assert logits.shape == (B, A)


# ----------------------------------------------------------------- bad settings and inputs
@pytest.mark.parametrize("change, name", [
    (dict(num_actions=24), "num_actions"),
    (dict(num_players=1), "num_players"),
    (dict(hidden_shape=(5,)), "hidden_shape"),
    (dict(hidden_shape=[5, 5]), "hidden_shape"),
    (dict(hidden_shape=(0, 5), num_actions=0), "hidden_shape"),
    (dict(channels=0), "channels"),
    (dict(representation_blocks=-1), "representation_blocks"),
    (dict(dynamics_blocks=1.5), "dynamics_blocks"),
    (dict(prediction_blocks=-2), "prediction_blocks"),
    (dict(projection_dim=0), "projection_dim"),
    (dict(head_hidden=0), "head_hidden"),
    (dict(projection_channels=0), "projection_channels"),
])
def test_bad_settings_raise_a_value_error_naming_the_setting(change, name):
    with pytest.raises(ValueError, match=name):
        MuZeroNet(**{**SETTINGS, **change})


def test_bad_inputs_raise_a_value_error(setup):
    net, variables, obs, actions = setup
    with pytest.raises(ValueError, match="observation"):
        net.apply(variables, obs[:, 0, :4], method="represent")  # a 4x5 plane
    hidden = net.apply(variables, obs[:, 0], method="represent")
    with pytest.raises(ValueError, match="hidden"):
        net.apply(variables, hidden[..., :4], method="predict")
    with pytest.raises(ValueError, match="action"):
        net.apply(variables, hidden, actions[:2, 0], method="dynamics")
