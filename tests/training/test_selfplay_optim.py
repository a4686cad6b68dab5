"""Self-play acting schedule (alphazero-chess.md §6.6) and the optimizer (§8.4, §8.5)."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import envs
from turbozero.networks import ResNet, WDLValue
from turbozero.training.updates import (
    SGD,
    ClipByGlobalNorm,
    ConstantRate,
    MaskedWeightDecay,
    Optimizer,
    WarmupCosine,
)
from turbozero.presets import get_preset
from turbozero.training import collector as collector_lib
from turbozero.training import replay
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.updates import (
    PerStepUpdates, ScanUpdates, StepRunner, check_decay_mask, decay_mask, make_optimizer, train, train_step)
from turbozero.training.types import Experience, TrainState


# ------------------------------------------------------------------ temperature schedule
def test_schedule_samples_early_and_plays_argmax_late():
    policy = jnp.tile(jnp.array([0.1, 0.6, 0.0, 0.3]), (4000, 1))
    sched = TemperatureSchedule(temperature=1.0, moves=10)
    early = np.asarray(sched.act(jax.random.PRNGKey(0), policy, jnp.full(4000, 9)))
    late = np.asarray(sched.act(jax.random.PRNGKey(0), policy, jnp.full(4000, 10)))
    freq = np.bincount(early, minlength=4) / 4000
    np.testing.assert_allclose(freq, [0.1, 0.6, 0.0, 0.3], atol=0.03)
    assert np.all(late == 1)
    # tau = 0.5 sharpens: p^2 normalised
    sharp = np.asarray(TemperatureSchedule(0.5, None).act(
        jax.random.PRNGKey(1), policy, jnp.full(4000, 500)))
    p2 = np.array([0.01, 0.36, 0.0, 0.09]) / 0.46
    np.testing.assert_allclose(np.bincount(sharp, minlength=4) / 4000, p2, atol=0.03)


def test_schedule_breaks_argmax_ties_at_random_and_never_picks_illegal():
    policy = jnp.tile(jnp.array([0.0, 0.4, 0.2, 0.4]), (2000, 1))
    a = np.asarray(TemperatureSchedule(1.0, 0).act(jax.random.PRNGKey(2), policy,
                                                   jnp.zeros(2000, jnp.int32)))
    assert set(np.unique(a)) == {1, 3}
    assert 0.4 < np.mean(a == 1) < 0.6


def test_schedule_acts_per_player_for_simultaneous_policies():
    policy = jnp.array([[[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]] * 3)  # [B=3, P=2, A=3]
    a = TemperatureSchedule(1.0, 2).act(jax.random.PRNGKey(3), policy, jnp.array([0, 1, 5]))
    assert a.shape == (3, 2)
    assert np.all(np.asarray(a) == [[1, 2]] * 3)


@pytest.mark.parametrize("kw, name", [(dict(moves=-1), "moves"), (dict(temperature=-0.1), "temperature")])
def test_schedule_rejects_bad_settings(kw, name):
    with pytest.raises(ValueError, match=f"temperature_schedule.{name}"):
        TemperatureSchedule(**kw)


def test_collector_acts_by_the_schedule_and_keeps_the_visit_targets():
    """A fake search returns a fixed visit distribution: after T moves every game plays its
    argmax, before it the games differ; the replay stores the distribution unchanged."""
    env = envs.make("pgx/tic_tac_toe")
    target = jnp.array([0.05, 0.05, 0.1, 0.1, 0.4, 0.1, 0.1, 0.05, 0.05])

    def fake_search(variables, states, key):
        p = jnp.where(states.legal_action_mask, target, 0.0)
        p = p / p.sum(-1, keepdims=True)
        return p

    n = 64
    col = collector_lib.init_collector(env, jax.random.PRNGKey(0), n)
    buf = replay.init_buffer(n, 4, col.env_state.observation[0], (9,), 2)
    sched = TemperatureSchedule(1.0, moves=1)
    col, buf, _ = collector_lib.collect(env, fake_search, None, col, buf,
                                        jax.random.PRNGKey(1), 2, sched)
    board = np.asarray(col.env_state.step_count)
    assert np.all(board == 2)
    first = np.asarray(buf.policy_target.policy[:, 0])
    np.testing.assert_allclose(first, np.tile(target, (n, 1)), rtol=1e-6)
    # move 2 (step_count 1 >= T) is the argmax of what is left: the centre (4) unless taken,
    # where the four 0.1 squares tie
    second_policy = np.asarray(buf.policy_target.policy[:, 1])
    assert np.all(second_policy.sum(-1) > 0.99)
    centre_free = second_policy[:, 4] > 0
    # the first move was sampled: not all games opened in the centre
    assert 0 < np.sum(~centre_free) < n


# ------------------------------------------------------------------ optimizer
@pytest.fixture(scope="module")
def resnet_params():
    net = ResNet(num_actions=5, value_format=WDLValue(), num_filters=4, num_blocks=1, value_hidden=8)
    v = net.init(jax.random.PRNGKey(0), jnp.ones((1, 4, 4, 3)))
    return v["params"]


def test_weight_decay_falls_on_kernels_only(resnet_params):
    flat = jax.tree_util.tree_flatten_with_path(decay_mask(resnet_params, ("kernel",)))[0]
    names = {jax.tree_util.keystr(p): m for p, m in flat}
    assert any(m for n, m in names.items() if n.endswith("['kernel']"))
    assert not any(m for n, m in names.items() if not n.endswith("['kernel']"))
    assert any("scale" in n for n in names)  # BatchNorm scales exist and are left out
    tx = make_optimizer(1e-3, 10, weight_decay=1e-2)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, resnet_params)
    updates, _ = tx.update(zeros, tx.init(resnet_params), resnet_params)
    for (path, u), (_, m) in zip(jax.tree_util.tree_flatten_with_path(updates)[0], flat):
        moved = bool(jnp.any(u != 0))
        assert moved == bool(m), jax.tree_util.keystr(path)


def test_weight_decay_mask_matching_nothing_is_an_error(resnet_params):
    with pytest.raises(ValueError, match="weight_decay_params"):
        check_decay_mask(resnet_params, ("kernels",), 1e-4)
    check_decay_mask(resnet_params, ("kernels",), 0.0)  # no decay asked: nothing to match
    with pytest.raises(ValueError, match="weight_decay_params"):
        from turbozero.training import Trainer

        Trainer(get_preset("pgx/tic_tac_toe", "tiny", optimizer=Optimizer(
            weight_decay=MaskedWeightDecay(1e-4, ("nope",)))))
    with pytest.raises(ValueError, match="weight_decay"):
        MaskedWeightDecay(-1.0)


def test_optimizer_parts_compose_and_can_be_replaced(resnet_params):
    """The chain is the config's parts in order; replacing one changes only that part."""
    grads = jax.tree_util.tree_map(lambda p: jnp.full_like(p, 10.0), resnet_params)

    def first_update(opt):
        tx = opt.build(100)
        updates, _ = tx.update(grads, tx.init(resnet_params), resnet_params)
        return updates

    plain_sgd = Optimizer(learning_rate=0.5, schedule=ConstantRate(), clipping=None,
                          weight_decay=None, update=SGD(momentum=0.0, nesterov=False))
    # SGD without clipping or decay: update = -lr * grad
    for u in jax.tree_util.tree_leaves(first_update(plain_sgd)):
        np.testing.assert_allclose(np.asarray(u), -5.0, rtol=1e-6)
    # clipping to global norm 1 shrinks the same update to norm lr * 1
    clipped = dataclasses.replace(plain_sgd, clipping=ClipByGlobalNorm(1.0))
    assert float(optax.global_norm(first_update(clipped))) == pytest.approx(0.5, rel=1e-5)
    # warm-up: the first step of a linear warm-up has learning rate 0
    warm = dataclasses.replace(plain_sgd, schedule=WarmupCosine(warmup_steps=10))
    assert float(optax.global_norm(first_update(warm))) == 0.0
    with pytest.raises(ValueError, match="learning_rate"):
        Optimizer(learning_rate=0.0)
    with pytest.raises(ValueError, match="optimizer"):
        get_preset("pgx/tic_tac_toe", "tiny", optimizer=optax.adam(1e-3))


def _toy_state(params):
    return TrainState.create(apply_fn=None, params=params, tx=optax.adam(1e-2))


def _toy_loss(poison):
    def loss(params, ts, exp):
        base = jnp.sum(jnp.square(params["w"] - 1.0))
        return jnp.where(exp.returns[0, 0] > poison, jnp.nan, base), ({}, {})
    return loss


def _buffer_with(rewards):
    n = len(rewards)
    exp = Experience(observation=jnp.zeros((n, 1)), policy=jnp.ones((n, 1)),
                     legal_action_mask=jnp.ones((n, 1), bool), returns=jnp.asarray(rewards)[:, None],
                     current_player=jnp.zeros(n, jnp.int32))
    return exp


def test_nonfinite_steps_are_skipped_and_counted():
    ts = _toy_state({"w": jnp.zeros(3)})
    good, bad = _buffer_with([0.0]), _buffer_with([1.0])
    ts1, m1 = train_step(ts, good, _toy_loss(0.5))
    assert int(m1["skipped_nonfinite"]) == 0 and int(ts1.step) == 1
    ts2, m2 = train_step(ts1, bad, _toy_loss(0.5))
    assert int(m2["skipped_nonfinite"]) == 1
    assert int(ts2.step) == 1
    np.testing.assert_array_equal(np.asarray(ts2.params["w"]), np.asarray(ts1.params["w"]))
    for a, b in zip(jax.tree_util.tree_leaves(ts2.opt_state), jax.tree_util.tree_leaves(ts1.opt_state)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _half_poisoned_replay(n: int = 8) -> replay.ReplayBuffer:
    """n games of 2 finished positions; the odd games' return 1 makes `_toy_loss` non-finite."""
    buf = replay.init_buffer(n, 2, jnp.zeros((1,)), (1,), 1)
    return buf.replace(written=jnp.ones((n, 2), bool), has_target=jnp.ones((n, 2), bool),
                       policy_target=buf.policy_target.replace(
                           legal_action_mask=jnp.ones((n, 2, 1), bool),
                           policy=jnp.ones((n, 2, 1))),
                       returns=jnp.where(jnp.arange(n)[:, None, None] % 2 == 0, 0.0, 1.0)
                       * jnp.ones((n, 2, 1)))


def test_train_reports_skipped_steps_over_a_replay():
    """`train` samples a replay where half the finished positions poison the loss."""
    buf = _half_poisoned_replay()
    ts = _toy_state({"w": jnp.zeros(3)})
    ts, m = jax.jit(lambda t, k: train(t, buf, k, loss_fn=_toy_loss(0.5), batch_size=1,
                                       num_steps=40))(ts, jax.random.PRNGKey(0))
    skipped = int(m["skipped_nonfinite"])
    assert 5 < skipped < 35
    assert int(ts.step) == 40 - skipped
    assert np.isfinite(float(m["loss"]))
    assert np.all(np.isfinite(np.asarray(ts.params["w"])))


@pytest.mark.parametrize("donate", [False, True])
@pytest.mark.parametrize("updates", [PerStepUpdates(), ScanUpdates()], ids=["per-step", "scan"])
def test_both_ways_of_running_updates_make_the_updates_of_train(donate, updates):
    """The Trainer's two ways of running an iteration's updates (`PerStepUpdates`: one jitted
    update per step from Python, `StepRunner`; `ScanUpdates`: one jitted lax.scan) make the
    same updates as `train`'s lax.scan: same keys, parameters, optimizer state and averaged
    metrics, skipped steps included, with and without donating the train state."""
    buf = _half_poisoned_replay()
    key = jax.random.PRNGKey(3)
    want_ts, want = jax.jit(lambda t, k: train(t, buf, k, loss_fn=_toy_loss(0.5), batch_size=2,
                                               num_steps=12))(_toy_state({"w": jnp.zeros(3)}), key)
    runner = updates.build(loss_fn=_toy_loss(0.5), batch_size=2, num_steps=12, donate=donate)
    if isinstance(updates, PerStepUpdates):
        assert isinstance(runner, StepRunner)
    got_ts, got = runner(_toy_state({"w": jnp.zeros(3)}), buf, key)
    assert 0 < int(got["skipped_nonfinite"]) < 12  # both kinds of step happened
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(np.asarray(got[name]), np.asarray(want[name]), rtol=1e-6)
    for a, b in zip(jax.tree_util.tree_leaves(got_ts), jax.tree_util.tree_leaves(want_ts)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


def test_updates_are_chosen_by_backend_unless_the_config_says():
    """Per step on CPU, one scan on GPU and TPU (docs/training.md, "How the updates run");
    `TrainConfig.updates` overrides it, is checked, and is stored in a run's JSON."""
    from turbozero.training import TrainConfig
    from turbozero.training.run_config import config_from_json, config_to_json
    from turbozero.training.updates import updates_for_backend

    assert updates_for_backend("cpu") == PerStepUpdates()
    assert updates_for_backend("gpu") == ScanUpdates()
    assert updates_for_backend("tpu") == ScanUpdates()
    cfg = TrainConfig(game="backgammon", updates=ScanUpdates())
    assert config_from_json(config_to_json(cfg)).updates == ScanUpdates()
    assert config_from_json(config_to_json(TrainConfig(game="backgammon"))).updates is None
    with pytest.raises(ValueError, match="updates must be None"):
        TrainConfig(game="backgammon", updates="scan")
    from turbozero.training.run_config import parse_overrides, with_overrides

    tag = '{"__dataclass__": "turbozero.training.updates:ScanUpdates"}'
    set_on_cli = with_overrides(cfg, parse_overrides(TrainConfig(game="backgammon"),
                                                     [f"updates={tag}"]))
    assert set_on_cli.updates == ScanUpdates()
