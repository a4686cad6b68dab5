"""Replay sampling (`TrainConfig.replay_sampling`, turbozero/training/replay_sampling.py): the
outcome-stratified sampler's proportions against a plain-Python reference of each slot's
probability, the uniform sampler unchanged, the setting refused where it cannot apply."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from turbozero.presets import get_preset
from turbozero.training import replay
from turbozero.training.replay_sampling import (OutcomeStratified, UniformSampling,
                                                outcome_strata, with_sampling)
from turbozero.training.run_config import (config_from_json, config_to_json, parse_overrides,
                                           with_overrides)

E, T, P = 3, 8, 2


def _buffer(seed: int, empty_strata: tuple[str, ...] = ()) -> replay.ReplayBuffer:
    """A replay of E x T slots, two players, random movers, results in {-1, 0, 1} (and a few
    soft ones) and some unfinished slots."""
    rng = np.random.default_rng(seed)
    buf = replay.init_buffer(E, T, jnp.zeros((4,), jnp.float32), (5,), P)
    returns = rng.choice([-1.0, -0.7, -0.3, 0.0, 0.4, 1.0], size=(E, T, P)).astype(np.float32)
    mover = rng.integers(0, P, size=(E, T)).astype(np.int32)
    for name, lo, hi in (("win", 0.5, 9), ("loss", -9, -0.5), ("draw", -0.5, 0.5)):
        if name in empty_strata:  # move that stratum's results out of it
            mine = np.take_along_axis(returns, mover[..., None], -1)[..., 0]
            hit = (mine > lo) & (mine < hi) if name != "draw" else (
                (mine >= lo) & (mine <= hi))
            returns[hit, :] = 1.0 if name != "win" else -1.0
    done = rng.random((E, T)) < 0.8
    return buf.replace(returns=jnp.asarray(returns), current_player=jnp.asarray(mover),
                       has_target=jnp.asarray(done), written=jnp.ones((E, T), bool))


def _reference(buffer, weights: dict[str, float]) -> np.ndarray:
    """Each slot's probability, in plain Python: a stratum by weight among the non-empty
    ones, then a slot of it uniformly; unfinished slots never."""
    returns, mover = np.asarray(buffer.returns), np.asarray(buffer.current_player)
    done = np.asarray(buffer.has_target)
    stratum = {}
    for e in range(E):
        for t in range(T):
            if done[e, t]:
                r = float(returns[e, t, mover[e, t]])
                stratum[(e, t)] = "win" if r > 0.5 else "loss" if r < -0.5 else "draw"
    counts = {s: sum(1 for v in stratum.values() if v == s) for s in ("win", "draw", "loss")}
    total = sum(w for s, w in weights.items() if counts[s])
    prob = np.zeros((E, T))
    for (e, t), s in stratum.items():
        prob[e, t] = weights[s] / total / counts[s]
    return prob


@pytest.mark.parametrize("weights, empty", [
    ({"win": 1.0, "draw": 1.0, "loss": 1.0}, ()),
    ({"win": 2.0, "draw": 0.5, "loss": 1.0}, ()),
    ({"win": 1.0, "draw": 0.0, "loss": 1.0}, ()),
    ({"win": 1.0, "draw": 3.0, "loss": 1.0}, ("win",)),  # an empty stratum: the rest share
])
def test_stratified_proportions_equal_the_reference(weights, empty):
    buf = with_sampling(_buffer(1, empty), OutcomeStratified(**weights))
    n = 60_000
    draw = jax.jit(replay.sample_slots, static_argnums=2)
    rows, cols = draw(buf, jax.random.PRNGKey(3), n)
    freq = np.zeros((E, T))
    np.add.at(freq, (np.asarray(rows), np.asarray(cols)), 1.0)
    freq /= n
    expected = _reference(buf, weights)
    strata = np.asarray(outcome_strata(buf))[np.asarray(buf.has_target)]
    assert {("win", "draw", "loss")[s] for s in strata.tolist()} == (
        {"win", "draw", "loss"} - set(empty))  # the buffer has the strata the case says
    assert expected.sum() == pytest.approx(1.0)
    # never an unfinished slot or a zero-weight one; every other slot within 5 binomial SEs
    assert np.all(freq[expected == 0] == 0), freq[expected == 0]
    se = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) <= 5 * se + 1e-12), np.abs(freq - expected) / (se + 1e-12)


def test_stratified_balances_what_uniform_does_not():
    """Mostly drawn games: uniform batches are mostly draws, stratified ones a third each."""
    buf = replay.init_buffer(1, 90, jnp.zeros((1,), jnp.float32), (2,), 2)
    returns = np.zeros((1, 90, 2), np.float32)
    returns[0, :5] = (1.0, -1.0)      # 5 positions of decisive games, mover 0: wins
    returns[0, 5:10] = (-1.0, 1.0)    # mover 0: losses
    buf = buf.replace(returns=jnp.asarray(returns), has_target=jnp.ones((1, 90), bool))
    key = jax.random.PRNGKey(0)
    _, uniform = replay.sample_slots(buf, key, 30_000)
    _, strat = replay.sample_slots(with_sampling(buf, OutcomeStratified()), key, 30_000)
    assert np.mean(np.asarray(uniform) >= 10) == pytest.approx(80 / 90, abs=0.01)
    shares = [np.mean(np.asarray(strat) < 5), np.mean((np.asarray(strat) >= 5)
                                                       & (np.asarray(strat) < 10))]
    assert shares == pytest.approx([1 / 3, 1 / 3], abs=0.01)


def test_uniform_sampling_is_the_former_sampler():
    """The default draws exactly what replay.sample_slots drew before it was an option."""
    buf = _buffer(2)
    key = jax.random.PRNGKey(5)
    rows, cols = replay.sample_slots(buf, key, 64)
    ok = buf.has_target.reshape(-1)
    idx = jax.random.categorical(key, jnp.where(ok, 0.0, -jnp.inf), shape=(64,))
    np.testing.assert_array_equal(np.asarray(rows) * T + np.asarray(cols), np.asarray(idx))


def test_no_finished_slot_samples_every_slot():
    buf = with_sampling(_buffer(3).replace(has_target=jnp.zeros((E, T), bool)),
                        OutcomeStratified())
    rows, cols = replay.sample_slots(buf, jax.random.PRNGKey(0), 2000)
    assert len(set(zip(np.asarray(rows).tolist(), np.asarray(cols).tolist()))) == E * T


@pytest.mark.parametrize("kwargs", [{"win": -1.0}, {"draw": math.nan}, {"loss": math.inf},
                                    {"win": "1"}, {"win": True},
                                    {"win": 0.0, "draw": 0.0, "loss": 0.0}])
def test_bad_weights_are_one_value_error(kwargs):
    with pytest.raises(ValueError, match="OutcomeStratified"):
        OutcomeStratified(**kwargs)


def test_the_config_takes_it_refuses_others_and_round_trips():
    config = get_preset("chess", "tiny", replay_sampling=OutcomeStratified(draw=0.5))
    assert config_from_json(config_to_json(config)).replay_sampling == OutcomeStratified(
        draw=0.5)
    with pytest.raises(ValueError, match="replay_sampling"):
        get_preset("chess", "tiny", replay_sampling=3)
    # the command line of docs/chess.md, "Stratified replay"
    tagged = ('replay_sampling={"__dataclass__": '
              '"turbozero.training.replay_sampling:OutcomeStratified"}')
    plain = get_preset("chess", "tiny")
    cli = with_overrides(plain, parse_overrides(plain, [tagged]))
    assert cli.replay_sampling == OutcomeStratified()
    cli = with_overrides(cli, parse_overrides(cli, ["replay_sampling.loss=2"]))
    assert cli.replay_sampling == OutcomeStratified(loss=2.0)


def test_a_replay_of_another_kind_refuses_stratified():
    """Afterstate TD (backgammon `tiny`) draws from its own replay: the option is one line."""
    from turbozero.training import Trainer
    with pytest.raises(ValueError, match=r"^replay_sampling=OutcomeStratified\(.*\): this "
                       r"algorithm's replay \(TDReplay\) samples its own way"):
        Trainer(get_preset("backgammon", "tiny", replay_sampling=OutcomeStratified(),
                           num_envs=4, batch_size=8, replay_capacity=8))

    class OwnReplay:
        pass
    assert isinstance(with_sampling(OwnReplay(), UniformSampling()), OwnReplay)


def test_the_trainer_samples_its_replay_so():
    """The setting reaches the Trainer's replay (tic-tac-toe), and its batches are drawn so:
    with three finished positions (an empty replay's: all draws), every sample lands on
    them (the Trainer's `Algorithm.sample` reads `replay.sample_slots`)."""
    from turbozero.training import Trainer
    config = get_preset("pgx/tic_tac_toe", "tiny", num_iterations=1,
                        replay_sampling=OutcomeStratified(draw=0.5))
    buffer = Trainer(config).state.buffer
    assert buffer.sampling == OutcomeStratified(draw=0.5)
    buffer = buffer.replace(has_target=buffer.has_target.at[1, :3].set(True))
    rows, cols = replay.sample_slots(buffer, jax.random.PRNGKey(0), 64)
    assert set(np.asarray(rows).tolist()) == {1} and set(np.asarray(cols).tolist()) <= {0, 1, 2}
