"""Self-play risk (turbozero/training/risk.py, alphazero-chess.md §6.6 / §10): the schedule's
values at given iterations, per-game asymmetric seats, and the betas reaching the search."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.training import collector as collector_lib
from turbozero.training import replay
from turbozero.training.algorithm_configs import AlphaZero
from turbozero.training.risk import RiskSchedule, SelfPlayRisk
from turbozero.training.types import SelfPlayTargets


@pytest.mark.parametrize("schedule, expected", [
    # warm-up 10 at 0, then a ramp of 20 iterations to 0.5
    (RiskSchedule(0.0, 0.5, warmup_iterations=10, ramp_iterations=20),
     {0: 0.0, 9: 0.0, 10: 0.0, 15: 0.125, 20: 0.25, 30: 0.5, 1000: 0.5}),
    # risk-averse ramp without warm-up
    (RiskSchedule(0.2, -0.4, ramp_iterations=4), {0: 0.2, 1: 0.05, 2: -0.1, 4: -0.4, 9: -0.4}),
    # no ramp: a step after the warm-up; no final: constant
    (RiskSchedule(0.0, 1.0, warmup_iterations=3), {0: 0.0, 2: 0.0, 3: 1.0, 50: 1.0}),
    (RiskSchedule(0.3), {0: 0.3, 7: 0.3}),
])
def test_risk_schedule_values_at_given_iterations(schedule, expected):
    for it, beta in expected.items():
        assert float(schedule.beta(it)) == pytest.approx(beta, abs=1e-6), it
    # traced iterations give the same values
    jitted = jax.jit(schedule.beta)
    for it, beta in expected.items():
        assert float(jitted(jnp.int32(it))) == pytest.approx(beta, abs=1e-6)


def test_asymmetric_risk_assigns_both_seats_over_many_games():
    risk = SelfPlayRisk(RiskSchedule(0.8), opponent_range=(-0.5, 0.25))
    betas = np.asarray(risk.draw(jax.random.PRNGKey(0), 5, 4000, 2))
    taker = betas == np.float32(0.8)
    assert np.all(taker.sum(1) == 1)  # exactly one seat at the scheduled beta per game
    share = taker[:, 0].mean()
    assert 0.46 < share < 0.54  # seats assigned at random: both colours, about half each
    others = betas[~taker]
    assert others.min() >= -0.5 and others.max() <= 0.25 and others.std() > 0.15
    three = np.asarray(risk.draw(jax.random.PRNGKey(1), 0, 3000, 3))
    assert np.all((three == np.float32(0.8)).sum(1) == 1)
    assert np.all(np.bincount(np.argmax(three == np.float32(0.8), 1), minlength=3) > 900)
    same = np.asarray(SelfPlayRisk(RiskSchedule(-0.3)).draw(jax.random.PRNGKey(2), 0, 10, 2))
    np.testing.assert_allclose(same, -0.3)


@pytest.mark.parametrize("kw, match", [
    (dict(schedule=RiskSchedule(), opponent_range=(0.5, -0.5)), "opponent_range"),
    (dict(schedule=0.5), "RiskSchedule"),
])
def test_bad_risk_settings_raise(kw, match):
    with pytest.raises(ValueError, match=match):
        SelfPlayRisk(**kw)
    with pytest.raises(ValueError, match="warmup_iterations"):
        RiskSchedule(warmup_iterations=-1)


def test_collector_hands_each_game_its_betas_and_redraws_at_a_new_game():
    """A fake search stores the betas it was given as its search values: every position of a
    game carries that game's betas, and a game that starts after `iteration` draws from the
    schedule there."""
    env = envs.make("pgx/tic_tac_toe")
    risk = SelfPlayRisk(RiskSchedule(0.0, 1.0, warmup_iterations=1), opponent_range=(-1.0, -0.5))

    def fake_search(variables, states, key, risk_beta=None):
        legal = states.legal_action_mask
        return SelfPlayTargets(policy=legal / legal.sum(-1, keepdims=True),
                               search_values=risk_beta)

    n = 16
    col = collector_lib.init_collector(env, jax.random.PRNGKey(0), n, risk)
    first = np.asarray(col.risk_beta)
    assert np.all((first == 0.0).sum(1) == 1)  # iteration 0: the scheduled beta is 0
    buf = replay.init_buffer(n, 20, col.env_state.observation[0], (9,), 2,
                             replay.trajectory_fields(2))
    col, buf, stats = collector_lib.collect(env, fake_search, None, col, buf,
                                            jax.random.PRNGKey(1), 20, risk=risk, iteration=5)
    assert int(stats.episodes_finished) >= n
    b = jax.device_get(buf)
    for e in range(n):
        for ep in np.unique(b.episode_id[e]):
            rows = b.search_values[e][b.episode_id[e] == ep]
            assert np.all(rows == rows[0])  # one pair of betas per game
            expected_taker = 0.0 if ep < n else 1.0  # first games: iteration 0; later: 5
            assert (rows[0] == np.float32(expected_taker)).sum() == 1, (e, ep, rows[0])


@pytest.fixture(scope="module")
def tiny_ttt():
    from turbozero.presets import get_preset

    return dict(num_iterations=1, num_envs=4, collect_steps=3, train_steps=1, batch_size=8,
                replay_capacity=9, eval_every=0, eval_opponents=(), checkpoint_every=0), get_preset


def test_trainer_takes_risk_on_the_kernel_and_refuses_it_elsewhere(tiny_ttt):
    from turbozero.search.mctx_policies import MctxConfig
    from turbozero.training import Trainer

    small, get_preset = tiny_ttt
    risk = SelfPlayRisk(RiskSchedule(0.5), opponent_range=(-0.5, 0.0))
    trainer = Trainer(get_preset("pgx/tic_tac_toe", "tiny", risk=risk, **small))
    trainer.run(progress=False)
    betas = np.asarray(trainer.state.collector.risk_beta)
    assert betas.shape == (4, 2) and np.all((betas == 0.5).sum(1) == 1)
    with pytest.raises(ValueError, match="risk"):
        mctx = AlphaZero(search=MctxConfig(num_simulations=4))
        Trainer(get_preset("pgx/tic_tac_toe", "tiny", risk=risk, algorithm=mctx, **small))
    with pytest.raises(ValueError, match="risk must be"):
        get_preset("pgx/tic_tac_toe", "tiny", risk=0.5, **small)
