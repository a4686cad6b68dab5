"""MuZero with vector values (turbozero/training/muzero.py, turbozero/search/learned.py,
docs/gomoku.md "MuZero").

* Replay windows and n-step targets against a plain-Python transcription of the spec's
  `_compute_value_target` (mover-relative vectors, the bootstrap rotated with `np.roll`), on
  3-player gomoku games played into the library's replay by the collector.
* The search on the learned model against the plain-Python tree search of
  tests/kernel_reference.py (Gumbel root, mctx's interior, discount), on small boards.
* The loss: finite, masked past the end of a game, and it fits a fixed batch.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.networks.value_formats import MoverRelativeValues
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import GumbelRoot
from turbozero.search.selection import MctxPUCT
from turbozero.training import collector as collector_lib
from turbozero.training import replay
from turbozero.training.muzero import MuZeroConfig, make_batch
from turbozero.training.types import SelfPlayTargets

ENV = envs.make("gomoku", size=5, win_length=3, num_players=3, view=5)
P = 3
FORMAT = MoverRelativeValues(P)
NUM_ENVS, CAPACITY, STEPS = 8, 40, 40


def _random_search(variables, states, key):
    """Uniform legal policy and random root values in seat order (what a search hands over)."""
    del variables
    legal = states.legal_action_mask
    policy = legal / legal.sum(-1, keepdims=True)
    values = jax.random.uniform(key, (legal.shape[0], P), minval=-1.0, maxval=1.0)
    return SelfPlayTargets(policy=policy, search_values=values)


@pytest.fixture(scope="module")
def buffer():
    col = collector_lib.init_collector(ENV, jax.random.PRNGKey(0), NUM_ENVS)
    buf = replay.init_buffer(NUM_ENVS, CAPACITY, col.env_state.observation[0],
                             (ENV.num_actions,), P)
    collect = jax.jit(functools.partial(collector_lib.collect, ENV, _random_search),
                      static_argnums=(4,))
    _, buf, stats = collect(None, col, buf, jax.random.PRNGKey(1), STEPS)
    assert int(stats.episodes_finished) >= NUM_ENVS  # every game ended at least once
    return jax.device_get(buf)


# --------------------------------------------------------------- the spec, in plain Python
def _episode(buf, row, col):
    """The whole episode of slot (row, col), in play order: players, actions, policies, seat
    returns-to-go and seat root values of each position."""
    ep = buf.episode_id[row, col]
    cols = [c for c in range(CAPACITY) if buf.written[row, c] and buf.episode_id[row, c] == ep]
    cols.sort(key=lambda c: buf.written_at[row, c])
    return cols


def spec_value_target(pos, seat_rewards, root_relative, players, discount, td_steps):
    """The spec's n-step TD target of position `pos` in the mover-relative order of its player:
    rewards (seat vectors, placement at the end) rotated to the player at `pos`, the bootstrap
    (stored mover-relative to the player at pos + n) rotated with np.roll(., shift)."""
    length = len(players)
    z = np.zeros(P)
    for i in range(min(td_steps, length - pos)):
        z += discount ** i * np.roll(seat_rewards[pos + i], -players[pos])
    if pos + td_steps < length:
        shift = (players[pos + td_steps] - players[pos]) % P
        z += discount ** td_steps * np.roll(root_relative[pos + td_steps], shift)
    return z


@pytest.mark.parametrize("k, n, discount", [(3, 4, 0.9), (5, 2, 1.0), (1, 10, 0.97)])
def test_windows_and_n_step_targets_follow_the_spec(buffer, k, n, discount):
    config = MuZeroConfig(search=TreeSearchConfig(discount=discount), unroll_steps=k, td_steps=n)
    key = jax.random.PRNGKey(k * 100 + n)
    batch = jax.device_get(jax.jit(make_batch, static_argnums=(2, 3, 4))(
        buffer, key, 128, config, FORMAT))
    rows, cols = map(np.asarray, replay.sample_slots(buffer, key, 128))
    checked_past_end = 0
    for b in range(128):
        row, col = int(rows[b]), int(cols[b])
        assert buffer.has_target[row, col]
        ep = _episode(buffer, row, col)
        start = ep.index(col)
        players = [int(buffer.current_player[row, c]) for c in ep]
        rtg = [np.asarray(buffer.returns[row, c], np.float64) for c in ep]
        seat_rewards = [rtg[i] - (rtg[i + 1] if i + 1 < len(ep) else 0.0) for i in range(len(ep))]
        root_rel = [np.roll(np.asarray(buffer.search_values[row, c], np.float64), -players[i])
                    for i, c in enumerate(ep)]
        for j in range(k + 1):
            pos = start + j
            inside = pos < len(ep)
            assert bool(batch.valid[b, j]) == inside
            if inside:
                want = spec_value_target(pos, seat_rewards, root_rel, players, discount, n)
                np.testing.assert_allclose(batch.value[b, j], want, rtol=1e-5, atol=1e-5)
                np.testing.assert_allclose(batch.policy[b, j], buffer.policy[row, ep[pos]])
                np.testing.assert_array_equal(batch.observation[b, j],
                                              buffer.observation[row, ep[pos]])
            else:
                checked_past_end += 1
                np.testing.assert_array_equal(batch.value[b, j], 0.0)
                np.testing.assert_array_equal(batch.policy[b, j], 0.0)
            if j < k:
                if inside:
                    assert batch.action[b, j] == buffer.action[row, ep[pos]]
                    np.testing.assert_allclose(
                        batch.reward[b, j], np.roll(seat_rewards[pos], -players[pos]), atol=1e-6)
                else:
                    np.testing.assert_array_equal(batch.reward[b, j], 0.0)
    if k >= 3:
        assert checked_past_end > 0  # windows that run past the end were sampled and checked


def test_the_replay_keeps_the_actions_played(buffer):
    """Replaying the stored actions of each game's first episode from the start reproduces the
    stored observations and the end of the game."""
    step = jax.jit(ENV.step)
    for row in range(NUM_ENVS):
        ep = _episode(buffer, row, 0)
        state = ENV.init(jax.random.PRNGKey(0))
        for c in ep:
            np.testing.assert_array_equal(np.asarray(state.observation),
                                          buffer.observation[row, c])
            assert int(state.current_player) == buffer.current_player[row, c]
            state = step(state, jnp.int32(buffer.action[row, c]))
        assert bool(state.terminated | state.truncated)
        np.testing.assert_allclose(np.asarray(state.rewards), buffer.returns[row, ep[-1]])


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="unroll_steps"):
        MuZeroConfig(unroll_steps=0)
    with pytest.raises(ValueError, match="td_steps"):
        MuZeroConfig(td_steps=0)
    with pytest.raises(ValueError, match="TreeSearchConfig"):
        MuZeroConfig(search="gumbel")
    with pytest.raises(ValueError, match="discount"):
        TreeSearchConfig(discount=0.0)
    with pytest.raises(ValueError, match="consistency_weight"):
        MuZeroConfig(consistency_weight=-1.0)


GUMBEL_MUZERO = TreeSearchConfig(num_simulations=24, root=GumbelRoot(max_considered=6),
                                 selection=MctxPUCT(), discount=0.95)
