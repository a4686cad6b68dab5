"""The replay's stored form of policy targets (turbozero/training/stored_policies.py): the legal
moves' ids and probabilities read back as the same targets and masks as the dense arrays, in a
fraction of the memory."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.networks import ScalarValue
from turbozero.search import MCGSConfig, TreeSearchConfig
from turbozero.training import TrainConfig
from turbozero.training import collector as collector_lib
from turbozero.training import replay
from turbozero.training.algorithms import AlphaZeroAlgorithm, GraphSearchAlgorithm
from turbozero.training.stored_observations import EnvStates
from turbozero.training.stored_policies import DensePolicy, LegalPolicy


def _uneven_search(variables, states, key, risk_beta=None):
    """A policy target with a different weight on every legal move (so that a slot mix-up
    shows), zero on illegal ones; any leading shape (simultaneous games: [B, P, A])."""
    legal = states.legal_action_mask
    w = jnp.where(legal, jax.random.uniform(key, legal.shape) + 0.01, 0.0)
    return w / w.sum(-1, keepdims=True)


def _buffers(game: str, num_envs: int, moves: int, algorithm=AlphaZeroAlgorithm,
             search=TreeSearchConfig(num_simulations=2)):
    env = envs.make(game)
    algo = algorithm(env, None, ScalarValue(), search)
    col = collector_lib.init_collector(env, jax.random.PRNGKey(0), num_envs)
    out = {}
    for form in (DensePolicy(), LegalPolicy()):
        buf = algo.init_replay(num_envs, 16, col.env_state, EnvStates(), form)
        _, buf, _ = collector_lib.collect(env, _uneven_search, None, col, buf,
                                          jax.random.PRNGKey(1), moves)
        out[type(form).__name__] = buf
    return env, out


@pytest.fixture(scope="module")
def chess_buffers():
    """The same 12 moves of 4 chess games written with both forms."""
    return _buffers("chess", 4, 12)


def test_legal_moves_read_back_the_dense_targets(chess_buffers):
    _, bufs = chess_buffers
    dense, legal = bufs["DensePolicy"], bufs["LegalPolicy"]
    a = replay.sample(dense, jax.random.PRNGKey(2), 32)
    b = replay.sample(legal, jax.random.PRNGKey(2), 32)
    np.testing.assert_array_equal(np.asarray(a.policy), np.asarray(b.policy))
    np.testing.assert_array_equal(np.asarray(a.legal_action_mask), np.asarray(b.legal_action_mask))
    # every written slot, as windows of several slots (MuZero reads [B, K + 1] of them)
    rows = np.repeat(np.arange(4, dtype=np.int32)[:, None], 12, axis=1)
    cols = np.tile(np.arange(12, dtype=np.int32), (4, 1))
    pa, ma = replay.policy_targets(dense, rows, cols)
    pb, mb = replay.policy_targets(legal, rows, cols)
    np.testing.assert_array_equal(np.asarray(pa), np.asarray(pb))
    np.testing.assert_array_equal(np.asarray(ma), np.asarray(mb))
    # and they are real targets: 20 legal moves at the start, weights summing to 1
    assert np.asarray(ma)[:, 0].sum(-1).tolist() == [20] * 4
    np.testing.assert_allclose(np.asarray(pa).sum(-1), 1.0, rtol=1e-5)


def test_legal_moves_take_a_fraction_of_the_memory(chess_buffers):
    env, bufs = chess_buffers

    def bytes_per_position(buf):
        return sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(buf.policy_target)
                   ) // (4 * 16)

    # dense: float32 + bool over 4,672 actions; legal: int16 + float32 over 218 slots
    assert bytes_per_position(bufs["DensePolicy"]) == env.num_actions * 5 == 23360
    assert bytes_per_position(bufs["LegalPolicy"]) == env.max_legal_actions * 6 == 1308


def test_simultaneous_targets_round_trip():
    """PyRat's targets are [P, A] per position: each player's row is kept on its own."""
    _, bufs = _buffers("pyrat", 3, 6, GraphSearchAlgorithm, MCGSConfig(num_simulations=2))
    rows = np.repeat(np.arange(3, dtype=np.int32)[:, None], 6, axis=1)
    cols = np.tile(np.arange(6, dtype=np.int32), (3, 1))
    pa, ma = replay.policy_targets(bufs["DensePolicy"], rows, cols)
    pb, mb = replay.policy_targets(bufs["LegalPolicy"], rows, cols)
    assert pa.shape == (3, 6, 2, 5)
    np.testing.assert_array_equal(np.asarray(pa), np.asarray(pb))
    np.testing.assert_array_equal(np.asarray(ma), np.asarray(mb))


def test_bad_policy_forms_raise():
    with pytest.raises(ValueError, match="replay_policies"):
        TrainConfig(game="pgx/tic_tac_toe", replay_policies="sparse")
    chess = envs.make("chess")
    with pytest.raises(ValueError, match="below chess's max_legal_actions 218"):
        LegalPolicy(width=100).for_env(chess)
    with pytest.raises(ValueError, match="bound"):
        LegalPolicy().encode(jnp.ones((2, 9)) / 9, jnp.ones((2, 9), bool))
    # an explicit width above the bound is allowed (and kept)
    assert LegalPolicy(width=300).for_env(chess).width == 300
