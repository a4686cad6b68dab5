"""The gomoku line-extender baseline (envs/gomoku/extender.py): wins, blocks, legality,
a plain-numpy reference of its tiers and scores, and matches against uniform random play."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.gomoku.extender import DEFAULT_BLOCK_WEIGHT, candidate_cells, line_extender, \
    line_lengths
from envs.sampling import uniform_legal_action
from turbozero.training.evaluation import play_match

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))
KEYS = 16  # draws per position (the batch of every policy call: one compile per config): the tie-break is random, every draw must be among the best


# ----------------------------------------------------------------- numpy reference
def np_longest_if_placed(board, r, c, stone, win_length):
    """The longest line of `stone` through empty (r, c) once a stone is placed there; each
    side counted up to win_length - 1 cells (enough to tell a win)."""
    size = board.shape[0]
    best = 0
    for dr, dc in DIRECTIONS:
        run = 1
        for sense in (1, -1):
            for k in range(1, win_length):
                rr, cc = r + sense * k * dr, c + sense * k * dc
                if not (0 <= rr < size and 0 <= cc < size) or board[rr, cc] != stone:
                    break
                run += 1
        best = max(best, run)
    return best


def np_candidates(board, centre, player, num_players, view, win_length, block_weight):
    """bool[V * V]: the cells the extender may choose, written from the rules in its
    docstring: a win, else the next opponent's win, else (3 players) the previous one's,
    else the best own + block_weight * opponent line score."""
    size = board.shape[0]
    h = view // 2
    cells = []
    for a in range(view * view):
        r, c = centre[0] + a // view - h, centre[1] + a % view - h
        if 0 <= r < size and 0 <= c < size and board[r, c] == 0:
            lengths = [np_longest_if_placed(board, r, c, (player + k) % num_players + 1,
                                            win_length) for k in range(num_players)]
            cells.append((a, lengths))
    out = np.zeros(view * view, bool)
    if not cells:
        return out
    for k in range(num_players):  # me, next, previous
        tier = [a for a, ls in cells if ls[k] >= win_length]
        if tier:
            out[tier] = True
            return out
    scores = {a: ls[0] + block_weight * max(ls[1:]) for a, ls in cells}
    top = max(scores.values())
    out[[a for a, s in scores.items() if s == top]] = True
    return out


# ----------------------------------------------------------------- helpers and fixtures
def stack(states):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def random_policy(variables, states, key):
    del variables
    keys = jax.random.split(key, states.legal_action_mask.shape[0])
    return jax.vmap(uniform_legal_action)(keys, states.legal_action_mask)


@functools.lru_cache(maxsize=None)
def config(size, win_length, num_players, view):
    """(env, jitted extender policy, jitted candidate cells of one state): one compile each
    per configuration for the whole module."""
    env = envs.make("gomoku", size=size, win_length=win_length, num_players=num_players,
                    view=view)
    policy = jax.jit(line_extender(env))

    @jax.jit
    def cells(state):
        lengths = line_lengths(state.board, state.view_centre, state.current_player,
                               num_players, view, win_length)
        return candidate_cells(lengths, state.legal_action_mask, win_length,
                               DEFAULT_BLOCK_WEIGHT)

    return env, policy, cells


@functools.lru_cache(maxsize=None)
def random_positions(size, win_length, num_players, view, steps, batch, seed):
    """States [steps, batch] of uniformly random games, one per step of each game."""
    env, _, _ = config(size, win_length, num_players, view)

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        start = jax.vmap(env.init)(jax.random.split(k0, batch))

        def body(s, k):
            ka, ks = jax.random.split(k)
            a = random_policy(None, s, ka)
            return jax.vmap(env.step)(s, a, jax.random.split(ks, batch)), s

        _, seen = jax.lax.scan(body, start, jax.random.split(k1, steps))
        return seen

    return run(jax.random.PRNGKey(seed))


def chosen_cells(env, policy, state):
    """The board cells the policy picks in one state over KEYS draws (tie-breaks)."""
    batch = stack([state] * KEYS)
    actions = np.asarray(policy(None, batch, jax.random.PRNGKey(7)))
    return {env.action_cell(state, int(a)) for a in actions}


# ----------------------------------------------------------------- wins
@pytest.mark.parametrize("num_players,mover", [(2, 0), (2, 1), (3, 0), (3, 2)])
def test_takes_a_winning_move_before_blocking(num_players, mover):
    env, policy, _ = config(9, 4, num_players, 9)
    board = np.zeros((9, 9), np.int8)
    # the mover holds an open three in row 4; every other seat holds an open three too (each a
    # threat to block); the only way to win is to finish row 4 at (4, 1) or (4, 5)
    board[4, 2:5] = mover + 1
    others = [p for p in range(num_players) if p != mover]
    for row, p in zip((1, 7), others):
        board[row, 2:5] = p + 1
    state = env.state_from_board(board, current_player=mover)
    assert chosen_cells(env, policy, state) <= {(4, 1), (4, 5)}


def test_takes_a_diagonal_win_at_the_view_edge():
    env, policy, _ = config(11, 5, 2, 7)
    board = np.zeros((11, 11), np.int8)
    for k in range(4):
        board[3 + k, 3 + k] = 2  # seat 1: four on the diagonal, (7, 7) completes it
    board[0, 0] = board[0, 10] = board[10, 0] = board[5, 9] = 1
    # the view is centred on seat 0's last stone (5, 9): rows 2..8, columns 6..12 (beyond the
    # edge); of the two cells that finish the diagonal only (7, 7) is inside, (2, 2) is not
    state = env.state_from_board(board, current_player=1, last_move=(5, 9))
    assert chosen_cells(env, policy, state) == {(7, 7)}


# ----------------------------------------------------------------- blocks
def test_blocks_the_opponents_only_winning_cell():
    env, policy, _ = config(9, 4, 2, 9)
    board = np.zeros((9, 9), np.int8)
    board[2, 2:5] = 2  # seat 1's three, closed at (2, 1): (2, 5) wins for it
    board[2, 1] = 1
    board[6, 3:5] = 1  # seat 0's two: extending it would score higher than a random cell
    board[8, 8] = 2
    state = env.state_from_board(board, current_player=0)
    assert chosen_cells(env, policy, state) == {(2, 5)}


def test_three_players_block_the_next_player_first():
    env, policy, _ = config(9, 4, 3, 9)
    board = np.zeros((9, 9), np.int8)
    board[1, 1:4] = 2  # seat 1 (next after seat 0): a three closed at (1, 0) by seat 0,
    board[1, 0] = 1  # so (1, 4) is seat 1's only winning cell
    board[7, 1:4] = 3  # seat 2 (previous): a three closed at (7, 0): (7, 4) wins for it
    board[7, 0] = 1
    board[4, 6] = 2
    state = env.state_from_board(board, current_player=0)
    assert chosen_cells(env, policy, state) == {(1, 4)}
    # without the next player's threat the previous player's is blocked
    board[1, 4] = 1
    board[4, 7] = 2
    state = env.state_from_board(board, current_player=0)
    assert chosen_cells(env, policy, state) == {(7, 4)}


# ----------------------------------------------------------------- reference and legality
POSITION_CONFIGS = [(9, 4, 2, 9), (9, 4, 3, 9), (11, 5, 3, 7)]


@pytest.mark.parametrize("cfg", POSITION_CONFIGS)
def test_candidates_and_choices_match_the_numpy_reference(cfg):
    size, win_length, num_players, view = cfg
    env, policy, cells = config(*cfg)
    seen = random_positions(*cfg, steps=40, batch=KEYS, seed=1)
    rng = np.random.default_rng(0)
    checked = tiers = 0
    for t in rng.choice(40, size=12, replace=False):
        for b in range(4):  # four games of the batch
            state = jax.tree.map(lambda x: x[t, b], seen)
            if bool(state.terminated | state.truncated):
                continue
            want = np_candidates(np.asarray(state.board), np.asarray(state.view_centre),
                                 int(state.current_player), num_players, view, win_length,
                                 DEFAULT_BLOCK_WEIGHT)
            np.testing.assert_array_equal(np.asarray(cells(state)), want)
            actions = np.asarray(policy(None, stack([state] * KEYS), jax.random.PRNGKey(t)))
            assert want[actions].all()
            checked += 1
            tiers += int(want.sum() <= 2)  # a win or a block: one or two cells
    assert checked >= 30
    assert tiers >= 1, "no win or block among the positions: the tiers went unchecked"


@pytest.mark.parametrize("cfg", POSITION_CONFIGS)
def test_never_chooses_an_illegal_action(cfg):
    _, policy, _ = config(*cfg)
    seen = random_positions(*cfg, steps=40, batch=KEYS, seed=1)
    actions = np.stack([np.asarray(policy(None, jax.tree.map(lambda x: x[t], seen),
                                          jax.random.PRNGKey(t))) for t in range(40)])  # [40, B]
    live = ~np.asarray(seen.terminated | seen.truncated)  # [40, B]
    mask = np.asarray(seen.legal_action_mask)  # [40, B, V * V]
    legal = np.take_along_axis(mask, actions[..., None], axis=-1)[..., 0]
    assert live.sum() > 300
    assert legal[live].all()
    assert ((actions >= 0) & (actions < mask.shape[-1])).all()  # ended games: an action id


def test_an_ended_game_gets_an_action_id():
    env, policy, _ = config(9, 4, 2, 9)
    board = np.zeros((9, 9), np.int8)
    board[4, 2:5] = 1
    board[0, 0:3] = 2
    state = env.state_from_board(board, current_player=0)
    won = env.step(state, env.cell_action(state, 4, 5))
    assert bool(won.terminated)
    actions = np.asarray(policy(None, stack([won] * KEYS), jax.random.PRNGKey(0)))
    assert ((actions >= 0) & (actions < env.num_actions)).all()


def test_ties_are_broken_at_random():
    env, policy, _ = config(9, 4, 3, 9)
    state = env.init(jax.random.PRNGKey(0))
    # on the empty board every cell scores the same
    assert len(chosen_cells(env, policy, state)) > 8


@pytest.mark.parametrize("weight", [1.0, -0.1, "0.5", True])
def test_bad_block_weight_is_refused(weight):
    env, _, _ = config(9, 4, 2, 9)
    with pytest.raises(ValueError, match="block_weight"):
        line_extender(env, block_weight=weight)


# ----------------------------------------------------------------- against random play
@pytest.mark.parametrize("num_players", [2, 3])
def test_beats_uniform_random_in_every_seat(num_players):
    env, _, _ = config(9, 4, num_players, 9)
    games = 96  # 48 or 32 per seat
    match = jax.jit(lambda k: play_match(env, line_extender(env), random_policy, None, None,
                                         k, games, 81))
    counts = {k: int(v) for k, v in match(jax.random.PRNGKey(11)).items()}
    assert counts["finished"] == games
    # measured: 96/96 first places with 2 and with 3 players here, 256/256 at two seeds each
    # (chance: 1/2, 1/3); 0.9 leaves room for a change of strategy, none for random play
    assert counts["wins"] / games >= 0.9, counts
