"""Afterstate TD(lambda) (turbozero.training.td): lambda-return targets against a plain-Python
reference, the outcome-distribution loss against the spec's masked 4-way loss, and a short
training run through the Trainer."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from equity import reward_to_value_targets, value_outputs_to_equity
from turbozero.networks.value_formats import FourWayValue, four_way_value_loss
from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.training.algorithm_configs import TD
from turbozero.training.loop import TrainConfig, Trainer
from turbozero.training.td import TDConfig, lambda_targets

FMT = FourWayValue()


def _reference(outcome, finished, written, lam):
    """Plain Python: the forward view, move by move."""
    t_len = len(outcome)
    flip = lambda j: np.array([1 - j[0], j[2], j[1], j[3]])  # noqa: E731
    targets, ok = [None] * t_len, [False] * t_len

    def ret(t):  # G_t, defined when t has a next move
        nxt = t + 1
        v = outcome[nxt]
        has_own = (not finished[nxt]) and nxt + 1 < t_len and written[nxt + 1] and written[nxt]
        if finished[nxt] or not has_own:
            return flip(v)
        return flip((1 - lam) * v + lam * ret(nxt))

    for t in range(t_len - 1):
        if written[t] and not finished[t] and written[t + 1]:
            targets[t], ok[t] = ret(t), True
    return targets, ok


@pytest.mark.parametrize("lam", [0.0, 0.6, 1.0])
def test_lambda_targets_equal_the_forward_view(lam):
    rng = np.random.default_rng(int(lam * 10))
    t_len = 24
    outcome = rng.uniform(0, 1, (t_len, 4)).astype(np.float32)
    finished = rng.uniform(size=t_len) < 0.15
    written = np.ones(t_len, bool)
    written[:3] = False  # a ring not yet full: its oldest columns are empty
    g, ok = jax.jit(lambda o, f, w: lambda_targets(o, f, w, FMT.flip_outcome, lam))(
        outcome, finished, written)
    ref, ref_ok = _reference(outcome, finished, written, lam)
    assert list(np.asarray(ok)) == ref_ok
    for t in np.flatnonzero(ref_ok):
        np.testing.assert_allclose(np.asarray(g[t]), ref[t], rtol=1e-5, atol=1e-6)


def test_outcome_loss_is_the_spec_loss_for_finished_games_and_its_expectation_otherwise():
    logits = jax.random.normal(jax.random.PRNGKey(0), (6, 4))
    rewards = jnp.array([1, 2, 3, -1, -2, -3])
    targets, masks = reward_to_value_targets(rewards)
    spec = four_way_value_loss(logits, targets, masks)
    mine, _ = FMT.outcome_loss(logits, FMT.outcome_of(rewards))
    np.testing.assert_allclose(float(mine), float(spec), rtol=1e-6)
    # a distribution: the loss's gradient equals the expected one-hot gradient (same weights)
    probs = np.array([0.3, 0.1, 0.05, 0.2, 0.25, 0.1])  # over the six outcomes
    joint = (probs[:, None] * np.asarray(FMT.outcome_of(rewards))).sum(0)
    one = logits[:1]

    def expected(l):
        per = [four_way_value_loss(l, targets[k:k + 1], masks[k:k + 1]) * jnp.sum(masks[k])
               for k in range(6)]
        return sum(p * x for p, x in zip(probs, per))

    def soft(l):
        _, m = _targets_and_masks(joint)
        return FMT.outcome_loss(l, jnp.asarray(joint)[None])[0] * jnp.sum(m)

    np.testing.assert_allclose(np.asarray(jax.grad(soft)(one)), np.asarray(jax.grad(expected)(one)),
                               rtol=1e-4, atol=1e-6)


def _targets_and_masks(joint):
    w, gw, gl, bg = joint
    return None, jnp.asarray([1.0, w, 1 - w, gw + gl])


def test_expected_outcome_and_flip_agree_with_money_equity():
    logits = jax.random.normal(jax.random.PRNGKey(3), (8, 4))
    joint = FMT.expected_outcome(logits)
    w, gw, gl, bg = jnp.moveaxis(joint, -1, 0)
    probs = jax.nn.sigmoid(logits)
    np.testing.assert_allclose(np.asarray(w), np.asarray(probs[:, 0]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(FMT.flip_outcome(FMT.flip_outcome(joint))),
                               np.asarray(joint), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(bg), np.asarray((gw + gl) * probs[:, 3]), rtol=1e-6)
    eq = value_outputs_to_equity(probs)
    money = (2 * w - 1) + (gw - gl) + bg * (gw - gl) / (gw + gl)
    np.testing.assert_allclose(np.asarray(money), np.asarray(eq), rtol=1e-4, atol=1e-5)


def test_config_checks():
    with pytest.raises(ValueError, match="td_lambda"):
        TDConfig(td_lambda=1.5)
    with pytest.raises(ValueError, match="exploration"):
        TDConfig(exploration=float("nan"))
    with pytest.raises(ValueError, match="player"):
        TDConfig(player=0)


@pytest.fixture(scope="module")
def trainer(tmp_path_factory):
    cfg = TrainConfig(game="backgammon", num_envs=8, collect_steps=12, train_steps=4,
                      batch_size=32, replay_capacity=16,
                      algorithm=TD(search=TDConfig(
                          player=AfterstatePlayerConfig(max_afterstates=64))),
                      num_iterations=3, eval_every=3, eval_games=4, eval_opponents=("random",),
                      checkpoint_every=3, network={"hidden_sizes": (16,)}, max_eval_steps=400)
    run = tmp_path_factory.mktemp("td") / "run"
    t = Trainer(cfg, run_dir=str(run))
    return t, run


def test_trainer_runs_td_and_learns_from_finished_games(trainer):
    t, run = trainer
    records = []
    t.run(progress=False, callback=records.append)
    assert [r["iteration"] for r in records] == [1, 2, 3]
    assert all(np.isfinite(r["loss"]) for r in records)
    assert records[-1]["replay_samples"] > 0
    buf = t.state.buffer
    has = np.asarray(buf.has_target)
    assert has.sum() > 0 and not np.any(has & np.asarray(buf.finished))
    targets = np.asarray(buf.target)[has]
    assert np.all((targets >= -1e-6) & (targets <= 1 + 1e-6))
    assert "eval_random_wins" in records[-1]
    # the stored config rebuilds the same algorithm and the run resumes
    t2 = Trainer(t.config, run_dir=str(run), resume=True)
    assert int(t2.state.iteration) == 3


def test_td_refuses_what_it_cannot_do():
    with pytest.raises(ValueError, match="afterstates"):
        Trainer(TrainConfig(game="pgx/tic_tac_toe", algorithm=TD(search=TDConfig())))
    with pytest.raises(ValueError, match="max_self_play_steps"):
        Trainer(TrainConfig(game="backgammon", algorithm=TD(search=TDConfig()),
                            max_self_play_steps=10,
                            network={"hidden_sizes": (8,)}))
