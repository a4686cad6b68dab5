"""Material adjudication of capped chess self-play games (turbozero/games/chess/adjudication.py,
`TrainConfig.truncated_games`): the targets of a game cut by the ply cap follow the material,
evaluation stays by the rules."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero.games.chess.adjudication import MaterialAdjudication, MaterialScore
from turbozero.training import TrainConfig
from turbozero.training import collector as collector_lib
from turbozero.training import replay

CHESS = envs.make("chess", max_plies=2)
# White: king and queen; Black: a bare king the queen is far from (no capture, no mate in 2 plies)
QUEEN_UP = "4k3/8/8/8/8/8/8/Q3K3 w - - 0 1"


def _stack(states):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


@pytest.mark.parametrize("fen,want", [
    (QUEEN_UP, [1.0, -1.0]),
    ("4k3/8/8/8/8/8/8/R3K3 b - - 0 1", [1.0, -1.0]),  # seats are colours, not the mover
    ("r3k3/8/8/8/8/8/8/N3K3 w - - 0 1", [0.0, 0.0]),  # rook against knight: 2 < margin 3
    ("r3k3/8/8/8/8/8/8/4K3 w - - 0 1", [-1.0, 1.0]),
    (None, [0.0, 0.0]),  # the start position
])
def test_material_decides_the_capped_game(fen, want):
    state = CHESS.init(jax.random.PRNGKey(0)) if fen is None else CHESS.from_fen(fen)
    got = MaterialAdjudication(margin=3).rewards(CHESS, _stack([state]))
    np.testing.assert_array_equal(np.asarray(got), [want])


@pytest.mark.parametrize("fen,lead", [
    (QUEEN_UP, 9), ("4k3/8/8/8/8/8/8/R3K3 b - - 0 1", 5), ("r3k3/8/8/8/8/8/8/N3K3 w - - 0 1", -2),
    ("4k3/p7/8/8/8/8/8/4K3 w - - 0 1", -1), (None, 0),
])
def test_material_score_grades_the_capped_game_by_the_lead(fen, lead):
    state = CHESS.init(jax.random.PRNGKey(0)) if fen is None else CHESS.from_fen(fen)
    got = np.asarray(MaterialScore(scale=3.0).rewards(CHESS, _stack([state])))
    white = np.tanh(lead / 3.0)  # the lead counted here by hand, White's point of view
    np.testing.assert_allclose(got, [[white, -white]], rtol=1e-6, atol=1e-7)


def _queen_up_games(board, n: int = 4):
    """(start states [n], a collector on them, an AlphaZero to make their replay)."""
    from turbozero.networks import ScalarValue
    from turbozero.search import TreeSearchConfig
    from turbozero.training.algorithms import AlphaZeroAlgorithm

    start = _stack([board.from_fen(QUEEN_UP)] * n)
    col = collector_lib.CollectorState(
        env_state=start, episode_id=jnp.arange(n, dtype=jnp.int32),
        return_so_far=jnp.zeros((n, 2), jnp.float32))
    return start, col, AlphaZeroAlgorithm(board, None, ScalarValue(), TreeSearchConfig(num_simulations=2))


def _uniform(variables, states, key):
    legal = states.legal_action_mask
    return legal / legal.sum(-1, keepdims=True)


def test_capped_self_play_targets_follow_the_material_and_only_then():
    """Games from a queen-up position cut after 2 plies: with adjudication every position of
    them has White's target +1 and Black's -1; without, the draw's 0."""
    start, col, algo = _queen_up_games(CHESS)
    returns = {}
    for name, adjudicate in (("draw", None), ("material", MaterialAdjudication())):
        buf = algo.init_replay(4, 4, start)
        _, buf, stats = collector_lib.collect(CHESS, _uniform, None, col, buf,
                                              jax.random.PRNGKey(1), 2,
                                              truncated_games=adjudicate)
        assert int(stats.episodes_finished) == 4  # every game was cut at 2 plies
        assert bool(buf.has_target[:, :2].all())
        returns[name] = np.asarray(buf.returns[:, :2])  # [4 games, 2 positions, 2 seats]
        np.testing.assert_array_equal(np.asarray(stats.outcome_sum),
                                      returns[name][:, 0].sum(0))
    np.testing.assert_array_equal(returns["draw"], 0.0)
    np.testing.assert_array_equal(returns["material"][..., 0], 1.0)
    np.testing.assert_array_equal(returns["material"][..., 1], -1.0)
    assert replay.num_samples(buf) == 8


def test_max_self_play_steps_cuts_games_before_the_env_cap_for_the_targets_only():
    """`TrainConfig.max_self_play_steps` (collector `max_steps`): on a board whose own cap is
    far away, the games from the queen-up position are cut after 2 plies, adjudicated, and
    fresh games start; without it none ends in those 2 plies."""
    board = envs.make("chess", max_plies=100)
    start, col, algo = _queen_up_games(board)
    assert int(start.step_count[0]) == 0
    finished = {}
    for cap in (None, 2):
        buf = algo.init_replay(4, 4, start)
        col2, buf, stats = collector_lib.collect(
            board, _uniform, None, col, buf, jax.random.PRNGKey(1), 2,
            truncated_games=MaterialAdjudication(), max_steps=cap)
        finished[cap] = int(stats.episodes_finished)
        if cap == 2:
            np.testing.assert_array_equal(np.asarray(buf.returns[:, :2, 0]), 1.0)
            np.testing.assert_array_equal(np.asarray(col2.episode_id), np.arange(4) + 4)
            np.testing.assert_array_equal(np.asarray(col2.env_state.step_count), 0)
    assert finished == {None: 0, 2: 4}


def test_bad_adjudication_settings_raise():
    with pytest.raises(ValueError, match="margin"):
        MaterialAdjudication(margin=0)
    for bad in (0, -1.0, "3"):
        with pytest.raises(ValueError, match="MaterialScore scale"):
            MaterialScore(scale=bad)
    with pytest.raises(ValueError, match="truncated_games"):
        TrainConfig(game="chess", truncated_games="material")
    for bad in (0, -3, 2.5, True):
        with pytest.raises(ValueError, match="max_self_play_steps"):
            TrainConfig(game="chess", max_self_play_steps=bad)
