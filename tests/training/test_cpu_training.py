"""Training through the C++ CPU path (turbozero/training/cpu_alphazero.py, docs/cpu_search.md
"Training"): `AlphaZero(search=CPUSelfPlayConfig(...))` plays whole games with the C++
workers, writes them into the library's replay, and trains and evaluates like AlphaZero."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.search.cpu import cpu_search_available
from turbozero.training import replay
from turbozero.training.stored_observations import EnvStates
from turbozero.training.stored_policies import LegalPolicy

# back in the default suite (12-16 s): it was moved out while hunting a crash of full-suite runs
# inside XLA (2026-11-23), which happened without this file too and went away with the per-file
# jit cache release in conftest.py; the C++ path runs clean under ASan/UBSan and TSan
# (tests/search/test_cpu_search_sanitizers.py)
pytestmark = pytest.mark.skipif(not cpu_search_available(),
                                reason="the C++ extension is not built (pip install -e .)")

# the replay keeps env states (EnvStates) and the legal moves' policy targets (LegalPolicy), so
# that the CPU path's writer is checked on stored forms other than the dense planes (those are
# written in tests/search/test_cpu_search_jax.py)
SMALL = dict(num_iterations=2, eval_every=2, eval_games=8, checkpoint_every=0,
             replay_observations=EnvStates(), replay_policies=LegalPolicy())


@pytest.fixture(scope="module")
def trained():
    from turbozero.presets import get_preset
    from turbozero.training import Trainer

    from turbozero.training.risk import RiskSchedule, SelfPlayRisk

    # per-seat risk: one seat at the schedule's beta, the other drawn from a range, per game
    risk = SelfPlayRisk(RiskSchedule(start=0.5), opponent_range=(-1.0, 1.0))
    trainer = Trainer(get_preset("pgx/tic_tac_toe", "cpu", risk=risk, **SMALL))
    records = []
    trainer.run(progress=False, callback=records.append)
    return trainer, records


def test_cpu_self_play_trains_and_evaluates(trained):
    trainer, records = trained
    assert type(trainer.algorithm).__name__ == "CPUAlphaZero"
    assert [r["episodes_finished"] for r in records] == [16, 16]  # whole games every iteration
    assert all(np.isfinite(r["loss"]) for r in records)
    last = records[-1]
    assert last["eval_random_finished"] == 8
    assert last["eval_random_wins"] + last["eval_random_draws"] + last["eval_random_losses"] == 8


def _in_play_order(columns, capacity):
    """The columns of one game in a ring row, in the order written: consecutive modulo the
    capacity, from the one whose predecessor is not the game's."""
    held = set(int(c) for c in columns)
    first = [c for c in held if (c - 1) % capacity not in held]
    assert len(first) == 1, columns  # one run of consecutive columns
    return [(first[0] + j) % capacity for j in range(len(held))]


def test_games_in_the_replay_replay_through_the_env(trained):
    """Every game the CPU path wrote is a real game: from the start, each stored position is
    reached from the one before by exactly one legal move (AlphaZero's replay keeps no action
    played: that is MuZero's field) and the last one ends the game by a legal move with the
    stored returns; the stored legal masks and players are the env's, its policy targets sit on
    legal moves, and every position's returns are the game's final rewards."""
    trainer, _ = trained
    env = envs.make("pgx/tic_tac_toe")
    buffer = trainer.state.buffer
    assert isinstance(buffer.policy_form, LegalPolicy)
    assert isinstance(buffer.form, EnvStates)
    assert buffer.action is None and buffer.search_values is None and buffer.written_at is None
    policy, legal_mask = jax.device_get(buffer.policy_form.decode(buffer.policy_target))
    e, t = buffer.episode_id.shape
    observation = np.asarray(replay.observations(  # observed again from the stored states
        buffer, *np.meshgrid(np.arange(e), np.arange(t), indexing="ij")))
    buf = jax.device_get(buffer)
    step = jax.jit(env.step)
    checked = 0
    for row in range(buf.episode_id.shape[0]):
        for ep in np.unique(buf.episode_id[row][buf.written[row]]):
            cols = _in_play_order(np.flatnonzero(buf.written[row] & (buf.episode_id[row] == ep)),
                                  t)
            # game g of a call started from init(fold_in(PRNGKey(seed), g)); pgx draws who
            # moves first from that key. The episode id is `writes * num_games + g`.
            g = int(ep) % 16
            state = env.init(jax.random.fold_in(
                jax.random.PRNGKey(trainer.algorithm.cpu_config.seed), g))
            for i, c in enumerate(cols):
                np.testing.assert_array_equal(np.asarray(state.observation),
                                              observation[row, c])
                np.testing.assert_array_equal(np.asarray(state.legal_action_mask),
                                              legal_mask[row, c])
                assert int(state.current_player) == buf.current_player[row, c]
                assert np.all(policy[row, c][~legal_mask[row, c]] == 0)
                assert policy[row, c].sum() == pytest.approx(1.0, abs=1e-5)
                after = [step(state, jnp.int32(a))
                         for a in np.flatnonzero(np.asarray(state.legal_action_mask))]
                if i + 1 < len(cols):
                    nxt = [s for s in after if np.array_equal(np.asarray(s.observation),
                                                              observation[row, cols[i + 1]])]
                else:  # the game's last position: a legal move ends it with the stored returns
                    nxt = [s for s in after if bool(s.terminated | s.truncated) and
                           np.allclose(np.asarray(s.rewards), buf.returns[row, c])]
                assert len(nxt) == 1 if i + 1 < len(cols) else len(nxt) >= 1, (row, ep, i)
                state = nxt[0]
            assert bool(state.terminated | state.truncated)
            for c in cols:
                np.testing.assert_allclose(buf.returns[row, c], np.asarray(state.rewards))
            checked += 1
    assert checked >= 16


def test_cpu_path_refuses_what_it_cannot_search():
    from turbozero.presets import get_preset
    from turbozero.training import Trainer
    cfg = get_preset("pgx/tic_tac_toe", "cpu", **SMALL)
    from turbozero.games.chess.adjudication import MaterialAdjudication

    with pytest.raises(ValueError, match="truncated_games"):
        Trainer(get_preset("pgx/tic_tac_toe", "cpu", truncated_games=MaterialAdjudication(),
                           **SMALL))
    with pytest.raises(ValueError, match="max_self_play_steps"):
        Trainer(get_preset("pgx/tic_tac_toe", "cpu", max_self_play_steps=4, **SMALL))
    import dataclasses

    with pytest.raises(ValueError, match="at most two players"):
        Trainer(dataclasses.replace(
            cfg, game="gomoku", network={},
            env_config=(("size", 5), ("win_length", 3), ("num_players", 3), ("view", 5))))


def test_self_play_risk_reaches_the_cpu_search(trained, monkeypatch):
    """TrainConfig.risk on the CPU path: every game of an iteration searches with its seats'
    betas, one at the schedule's beta and the other from the range, seats drawn per game."""
    import turbozero.training.cpu_alphazero as cpu_alphazero

    trainer, _ = trained
    seen = []
    real = cpu_alphazero.cpu_self_play

    def spy(*args, **kwargs):
        seen.append(np.asarray(args[6] if len(args) > 6 else kwargs["seat_betas"]))
        return real(*args, **kwargs)

    monkeypatch.setattr(cpu_alphazero, "cpu_self_play", spy)
    trainer.step()
    (betas,) = seen
    assert betas.shape == (16, 2)
    taker = np.isclose(betas, 0.5)
    assert np.all(taker.any(-1))  # one seat per game at the schedule's beta
    assert taker[:, 0].any() and taker[:, 1].any()  # both seats take that role over the games
    others = betas[~taker]
    assert np.all((others >= -1.0) & (others <= 1.0)) and len(np.unique(others)) > 8
