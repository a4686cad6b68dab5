"""The replay's stored form of the network input (turbozero/training/stored_observations.py):
env states read back as the same observations as stored planes, in less memory."""

import jax
import numpy as np
import pytest

import envs
from turbozero.networks import ScalarValue
from turbozero.search import TreeSearchConfig
from turbozero.training import TrainConfig, Trainer
from turbozero.training import collector as collector_lib
from turbozero.training import replay
from turbozero.training.algorithms import AlphaZeroAlgorithm
from turbozero.training.stored_observations import EnvStates, ObservationPlanes


def _uniform_search(variables, states, key, risk_beta=None):
    legal = states.legal_action_mask
    return legal / legal.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def two_buffers():
    """The same 24 moves of 6 Paco Ŝako games written once as planes and once as states."""
    env = envs.make("pacosako")
    algo = AlphaZeroAlgorithm(env, None, ScalarValue(), TreeSearchConfig(num_simulations=2))
    col = collector_lib.init_collector(env, jax.random.PRNGKey(0), 6)
    out = {}
    for form in (ObservationPlanes(), EnvStates()):
        buf = algo.init_replay(6, 16, col.env_state, form)
        _, buf, _ = collector_lib.collect(env, _uniform_search, None, col, buf,
                                          jax.random.PRNGKey(1), 24)
        out[type(form).__name__] = buf
    return out


def test_env_states_read_back_the_observations_stored_as_planes(two_buffers):
    planes, states = two_buffers["ObservationPlanes"], two_buffers["EnvStates"]
    a = replay.sample(planes, jax.random.PRNGKey(2), 64)
    b = replay.sample(states, jax.random.PRNGKey(2), 64)
    np.testing.assert_array_equal(np.asarray(a.observation), np.asarray(b.observation))
    np.testing.assert_array_equal(np.asarray(a.policy), np.asarray(b.policy))
    # windows of several slots (MuZero reads [B, K + 1] of them)
    rows = np.array([[0, 0, 0], [5, 5, 5]], np.int32)
    cols = np.array([[0, 1, 2], [13, 14, 15]], np.int32)
    np.testing.assert_array_equal(np.asarray(replay.observations(planes, rows, cols)),
                                  np.asarray(replay.observations(states, rows, cols)))
    # and the written positions are real ones, not zeros
    assert np.asarray(a.observation).any()


def test_env_states_take_less_memory(two_buffers):
    def nbytes(tree):
        return sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(tree))

    planes = nbytes(two_buffers["ObservationPlanes"].observation)
    states = nbytes(two_buffers["EnvStates"].observation)
    assert states * 4 < planes, (states, planes)


def test_bad_forms_raise():
    with pytest.raises(ValueError, match="replay_observations"):
        TrainConfig(game="pgx/tic_tac_toe", replay_observations="states")
    env = envs.make("pgx/tic_tac_toe")
    stored = EnvStates().encode(jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), 2)))
    with pytest.raises(ValueError, match="bound"):
        EnvStates().decode(stored)


def test_the_trainer_trains_from_env_states():
    from turbozero.presets import get_preset

    cfg = get_preset("pgx/tic_tac_toe", "tiny", num_iterations=1, num_envs=4, collect_steps=6,
                     train_steps=2, batch_size=8, replay_capacity=9, eval_every=0,
                     eval_opponents=(), checkpoint_every=0, replay_observations=EnvStates())
    records = []
    trainer = Trainer(cfg)
    trainer.run(progress=False, callback=records.append)
    assert np.isfinite(records[-1]["loss"])
    assert trainer.state.buffer.observation.observation is None  # no planes kept
