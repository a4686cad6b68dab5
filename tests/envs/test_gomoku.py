"""Gomoku (envs/gomoku, docs/gomoku.md): line detection, chain counts and placements against
a plain numpy implementation written here, the view centre rule, illegal actions, 3-player
rotation, rewards at the end, and the 2-player game against OpenSpiel's `gomoku` as referee.

Playouts are one jitted vmap-of-scan per configuration, module-scoped, so the default suite
compiles each once; the 1,000-game referee runs are `slow`.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.gomoku import batching, lines, ranking
from envs.gomoku import view as vw
from envs.gomoku import NO_CELL, NO_WINNER, UNRANKED

DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))


# ------------------------------------------------------------------ numpy reference
def np_run_through(board, r, c, arm_cap=None):
    """The longest line of board[r, c]'s owner through (r, c), walking cell by cell (at most
    `arm_cap` cells each way when given)."""
    size, who, best = board.shape[0], board[r, c], 0
    cap = board.size if arm_cap is None else arm_cap
    for dr, dc in DIRECTIONS:
        n = 1
        for sign in (1, -1):
            rr, cc, k = r + sign * dr, c + sign * dc, 0
            while 0 <= rr < size and 0 <= cc < size and board[rr, cc] == who and k < cap:
                n, k = n + 1, k + 1
                rr, cc = rr + sign * dr, cc + sign * dc
        best = max(best, n)
    return best


def np_chain_counts(board, num_players, win_length):
    """[P, W + 1]: maximal runs per player and direction, by length (capped at W), found by
    walking every line of the board from its start."""
    size = board.shape[0]
    counts = np.zeros((num_players, win_length + 1), np.int64)
    for dr, dc in DIRECTIONS:
        for r in range(size):
            for c in range(size):
                who = board[r, c]
                pr, pc = r - dr, c - dc
                if who == 0 or (0 <= pr < size and 0 <= pc < size and board[pr, pc] == who):
                    continue  # empty, or not the first stone of its run
                n, rr, cc = 0, r, c
                while 0 <= rr < size and 0 <= cc < size and board[rr, cc] == who:
                    n, rr, cc = n + 1, rr + dr, cc + dc
                counts[who - 1, min(n, win_length)] += 1
    return counts


def np_places(counts, winner):
    """Places (0 = first): the winner, then by (longest chain, how many, next length, ...,
    length 2), ties by seat; sorted with Python tuples."""
    num_players, w1 = counts.shape
    def key(p):
        profile = tuple(-int(counts[p, length]) for length in range(w1 - 1, 1, -1))
        return (0 if p == winner else 1,) + profile + (p,)
    order = sorted(range(num_players), key=key)
    places = np.empty(num_players, np.int64)
    places[order] = np.arange(num_players)
    return places


def np_window(board, centre, view):
    size, h = board.shape[0], view // 2
    out = np.full((view, view), vw.OFF_BOARD, np.int64)
    for i in range(view):
        for j in range(view):
            r, c = centre[0] - h + i, centre[1] - h + j
            if 0 <= r < size and 0 <= c < size:
                out[i, j] = board[r, c]
    return out


def np_block_counts(board, num_players, view):
    """[V, V, P]: each seat's stones per thumbnail block (ceil(S / V) cells a side)."""
    size = board.shape[0]
    block = -(-size // view)
    padded = np.zeros((view * block, view * block), board.dtype)
    padded[:size, :size] = board
    blocks = padded.reshape(view, block, view, block)
    return np.stack([(blocks == seat + 1).sum(axis=(1, 3)) for seat in range(num_players)], -1)


def random_board(rng, size, num_players, density):
    return np.where(rng.random((size, size)) < density,
                    rng.integers(1, num_players + 1, (size, size)), 0).astype(np.int8)


# ------------------------------------------------------------------ playouts
def make_playout(env, steps):
    """jit(vmap(one random game)) over keys [B, 2]: the states after each step, [B, steps]."""

    def one(key):
        def body(s, k):
            a = jax.random.categorical(k, jnp.where(s.legal_action_mask, 0.0, -jnp.inf))
            nxt = env.transition(s, a.astype(jnp.int32))
            return nxt, (nxt, a)

        k0, k = jax.random.split(key)
        s0 = env.init_state(k0)
        _, (states, actions) = jax.lax.scan(body, s0, jax.random.split(k, steps))
        return states, actions

    return jax.jit(jax.vmap(one))


@functools.lru_cache(maxsize=None)
def playout_of(size, win_length, num_players, view, cap=None):
    env = envs.make("gomoku", size=size, win_length=win_length, num_players=num_players,
                    view=view, max_episode_steps=cap)
    steps = size * size if cap is None else cap
    return env, make_playout(env, steps + 1)


def play(config, games, seed):
    env, fn = playout_of(*config)
    states, actions = fn(jax.random.split(jax.random.PRNGKey(seed), games))
    return env, jax.tree_util.tree_map(np.asarray, states), np.asarray(actions)


THREE = (9, 4, 3, 5)  # size, win_length, players, view: 3 players, small enough for CPU tests
TWO = (9, 4, 2, 7)


@pytest.fixture(scope="module")
def three_games():
    return play(THREE, 48, 0)


@pytest.fixture(scope="module")
def two_games():
    return play(TWO, 200, 1)


# ------------------------------------------------------------------ lines and ranking
@pytest.mark.parametrize("size,players,win_length", [(9, 3, 4), (12, 2, 5)])
def test_chain_counts_match_numpy_on_random_boards(size, players, win_length):
    rng = np.random.default_rng(size)
    count = jax.jit(functools.partial(lines.chain_counts, num_players=players,
                                      win_length=win_length))
    for density in (0.2, 0.5, 0.8, 1.0):
        for _ in range(5):
            board = random_board(rng, size, players, density)
            np.testing.assert_array_equal(np.asarray(count(jnp.asarray(board))),
                                          np_chain_counts(board, players, win_length))


def test_line_through_a_stone_matches_numpy_on_random_boards():
    rng = np.random.default_rng(7)
    size, w = 11, 5

    @jax.jit
    def through(board, r, c):
        return lines.longest_through(lines.arms(board, r, c, board[r, c], w))

    for _ in range(300):
        board = random_board(rng, size, 3, rng.choice([0.3, 0.7, 1.0]))
        r, c = rng.integers(0, size, 2)
        if board[r, c] == 0:
            board[r, c] = rng.integers(1, 4)
        got = int(through(jnp.asarray(board), r, c))
        # arms read W - 1 cells each way: enough to decide a line of W
        assert got == np_run_through(board, r, c, arm_cap=w - 1)
        assert (got >= w) == (np_run_through(board, r, c) >= w)


@pytest.mark.parametrize("size,view,win_length",
                         [(9, 5, 4), (12, 3, 5), (7, 7, 3), (5, 5, 5), (30, 21, 8)])
def test_batched_reads_equal_cell_by_cell(size, view, win_length):
    """Under vmap the windows and the lines through a stone are read as contiguous slices of
    the boards laid end to end (view.batched_windows, lines.batched_arms, and both from one
    slice in view.window_and_arms); they must equal the cell-by-cell gathers for every
    centre, the board's edges and corners and the first and last game of the batch included,
    and with the board shared by the batch."""
    rng = np.random.default_rng(size + view)

    @jax.jit
    def reads(b, c, s):
        def both(read, board, centre, stone):
            return read[0](board, centre, view), read[1](board, centre[0], centre[1], stone,
                                                         win_length)
        fast, slow = (vw.window, lines.arms), (vw.window_cells, lines.arms_cells)
        batched = [jax.vmap(functools.partial(both, r))(b, c, s) for r in (fast, slow)]
        # the lines read from the window (when they fit in it)
        together = jax.vmap(lambda x, y, z: vw.window_and_arms(x, y[0], y[1], z, view,
                                                               win_length))(b, c, s)
        batched.append(together)
        # one board, many centres (the line-extender's candidate cells)
        shared = [jax.vmap(functools.partial(both, r, b[0]))(c, s) for r in (fast, slow)]
        return batched, shared

    edge = [0, 1, size // 2, size - 2, size - 1]
    for batch in (1, 2, 7):
        boards = np.stack([random_board(rng, size, 3, rng.choice([0.3, 0.8]))
                           for _ in range(batch)])
        for cell in [(r, c) for r in edge for c in edge]:
            centres = rng.integers(0, size, (batch, 2)).astype(np.int32)  # anywhere
            centres[-1] = cell  # the last game at the cell, and on even rows the first too
            if cell[0] % 2 == 0:
                centres[0] = cell
            stones = jnp.asarray(rng.integers(1, 4, batch).astype(np.int8))
            (fast, slow, together), shared = reads(jnp.asarray(boards), jnp.asarray(centres),
                                                   stones)
            for got, want in ((fast, slow), (together, slow), shared):
                for g, w in zip(got, want):
                    np.testing.assert_array_equal(g, w)


def test_nested_vmap_equals_one_batch():
    """The batched rules (custom_vmap) under a second vmap: a batch of 3 x 4 games steps
    exactly as the same 12 games in one batch, through wins, the step cap and the view
    centre's fallback (view 5 on 12 x 12)."""
    env = envs.make("gomoku", size=12, win_length=5, num_players=3, view=5,
                    max_episode_steps=60)
    s = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.PRNGKey(0), 12))
    flat = jax.jit(jax.vmap(env.step))
    nested = jax.jit(jax.vmap(jax.vmap(env.step)))
    rng = np.random.default_rng(0)
    for _ in range(62):
        mask = np.asarray(s.legal_action_mask)
        a = jnp.asarray((rng.random(mask.shape) * mask).argmax(1).astype(np.int32))
        one = flat(s, a)
        two = nested(jax.tree_util.tree_map(lambda x: x.reshape((3, 4) + x.shape[1:]), s),
                     a.reshape(3, 4))
        for x, y in zip(jax.tree_util.tree_leaves(one), jax.tree_util.tree_leaves(two)):
            np.testing.assert_array_equal(np.asarray(y).reshape(np.shape(x)), x)
        s = one
    assert bool(jnp.all(s.terminated | s.truncated))


def test_batch_level_cond_gives_each_games_branch():
    """batching.when: under vmap the rare branch runs only when some game needs it, and each
    game gets its own branch's result either way (nested in a vmapped cond too)."""
    fn = lambda x: x * 2 + 1  # noqa: E731
    other = lambda x: x - 1  # noqa: E731
    f = jax.jit(jax.vmap(lambda p, x: batching.when(p, fn, other, x)))
    x = jnp.arange(6, dtype=jnp.int32)
    for pred in ([False] * 6, [True] * 6, [False, True, False, False, True, False]):
        p = jnp.asarray(pred)
        np.testing.assert_array_equal(f(p, x), jnp.where(p, fn(x), other(x)))
    nested = jax.jit(jax.vmap(lambda q, p, x: jax.lax.cond(
        q, lambda: batching.when(p, fn, other, x), lambda: x)))
    q = jnp.asarray([True, False, True, True, False, True])
    p = jnp.asarray([False, True, True, False, True, False])
    np.testing.assert_array_equal(nested(q, p, x), jnp.where(q, jnp.where(p, fn(x), other(x)), x))
    assert int(jax.jit(lambda p, x: batching.when(p, fn, other, x))(True, 3)) == 7
    np.testing.assert_array_equal(batching.materialised(x), x)


def test_places_match_numpy_on_random_profiles():
    rng = np.random.default_rng(3)
    fn = jax.jit(ranking.places)
    for players in (2, 3):
        for _ in range(400):
            # small counts so that ties (and ties broken late in the profile) are common
            counts = rng.integers(0, 3, (players, 6))
            counts[:, 5] = 0  # only a winner can hold a line of W
            winner = int(rng.integers(-1, players))
            if winner >= 0:
                counts[winner, 5] = 1
            got = np.asarray(fn(jnp.asarray(counts, jnp.int32), jnp.int32(winner)))
            np.testing.assert_array_equal(got, np_places(counts, winner))


def test_ties_keep_turn_order():
    places = jax.jit(ranking.places)
    counts = jnp.asarray([[0, 4, 2, 0, 0]] * 3, jnp.int32)
    np.testing.assert_array_equal(np.asarray(places(counts, jnp.int32(NO_WINNER))),
                                  [0, 1, 2])
    # the winner is first even with the thinnest profile; the others keep seat order on a tie
    np.testing.assert_array_equal(np.asarray(places(counts, jnp.int32(2))), [1, 2, 0])
    # (counts are indexed by chain length) one chain of 3 beats any number of chains of 2;
    # more chains of 2 beat fewer
    counts = jnp.asarray([[0, 0, 9, 0, 0], [0, 0, 0, 1, 0], [0, 0, 1, 0, 0]], jnp.int32)
    np.testing.assert_array_equal(np.asarray(places(counts, jnp.int32(NO_WINNER))),
                                  [1, 0, 2])


# ------------------------------------------------------------------ played games
def test_incremental_counts_and_wins_match_numpy(three_games, two_games):
    for (env, st, _), games in ((three_games, 48), (two_games, 60)):
        for b in range(games):
            for t in range(0, st.step_count.shape[1], 7):
                board = st.board[b, t]
                np.testing.assert_array_equal(
                    st.chain_counts[b, t], np_chain_counts(board, env.num_players,
                                                           env.win_length))
                np.testing.assert_array_equal(st.row_empties[b, t], (board == 0).sum(axis=1))
                np.testing.assert_array_equal(
                    st.block_counts[b, t], np_block_counts(board, env.num_players, env.view))
            # the move that ended the game made a line; no earlier move did
            done = st.terminated[b] | st.truncated[b]
            end = int(np.argmax(done))
            r, c = st.last_move[b, end]
            won = np_run_through(st.board[b, end], r, c) >= env.win_length
            assert won == (st.winner[b, end] != NO_WINNER)
            assert won or st.step_count[b, end] == env.size ** 2
            if end:
                assert st.winner[b, end - 1] == NO_WINNER


def test_three_player_rotation_and_rewards_at_the_end(three_games):
    env, st, actions = three_games
    rewards_by_place = np.asarray(env.rewards_by_place, np.float32)
    assert env.rewards_by_place == (1.0, -0.2, -1.0)
    for b in range(st.step_count.shape[0]):
        done = st.terminated[b] | st.truncated[b]
        end = int(np.argmax(done))
        assert done[end]
        # seat t % 3 made move t; the mover after move t is seat (t + 1) % 3
        for t in range(end + 1):
            r, c = st.last_move[b, t]
            assert st.board[b, t, r, c] == t % 3 + 1
            assert st.current_player[b, t] == (t + 1) % 3
            assert st.step_count[b, t] == t + 1
        live = slice(0, end)
        assert not st.rewards[b, live].any() and (st.places[b, live] == UNRANKED).all()
        assert not st.step_reward[b, live].any()
        places = st.places[b, end]
        assert sorted(places) == [0, 1, 2]
        np.testing.assert_array_equal(places, np_places(st.chain_counts[b, end], st.winner[b, end]))
        np.testing.assert_allclose(st.rewards[b, end], rewards_by_place[places])
        if st.winner[b, end] != NO_WINNER:
            assert places[st.winner[b, end]] == 0 and st.step_reward[b, end] == 1.0
            assert st.winner[b, end] == end % 3  # the mover won
        else:
            assert st.step_reward[b, end] == 0.0
        # the finished game absorbs: nothing changes, no more rewards
        assert not st.rewards[b, end + 1:].any()
        assert (st.board[b, end + 1:] == st.board[b, end]).all()


def test_full_board_is_a_draw_ranked_by_profile():
    # 5x5, lines of 5, 3 players: random play often fills the board without a line
    env, st, _ = play((5, 5, 3, 5), 64, 4)
    last = 24  # the 25th stone fills the board (states are recorded after each step)
    full = st.terminated[:, last] & (st.winner[:, last] == NO_WINNER)
    assert full.sum() >= 5
    for b in np.flatnonzero(full):
        assert st.step_count[b, last] == 25 and (st.board[b, last] != 0).all()
        assert not st.terminated[b, last - 1]
        places = st.places[b, last]
        np.testing.assert_array_equal(
            places, np_places(np_chain_counts(st.board[b, last], 3, 5), NO_WINNER))
        np.testing.assert_allclose(st.rewards[b, last], np.asarray([1, -0.2, -1])[places],
                                   rtol=1e-6)


def test_step_cap_truncates_and_ranks():
    env, st, _ = play((9, 5, 3, 5, 6), 16, 5)
    # six stones cannot make a line of five for anyone: every game is cut at step 6
    assert st.truncated[:, 5].all() and not st.terminated[:, 5].any()
    assert not (st.truncated[:, :5] | st.terminated[:, :5]).any()
    for b in range(16):
        places = st.places[b, 5]
        np.testing.assert_array_equal(places, np_places(st.chain_counts[b, 5], NO_WINNER))
        np.testing.assert_allclose(st.rewards[b, 5], np.asarray([1, -0.2, -1])[places],
                                   rtol=1e-6)


def test_two_players_rewards(two_games):
    env, st, _ = two_games
    assert env.rewards_by_place == (1.0, -1.0)
    done = st.terminated | st.truncated
    end = np.argmax(done, axis=1)
    final = st.rewards[np.arange(len(end)), end]
    assert (np.sort(final, axis=1) == [-1.0, 1.0]).all()
    # two players: me, the other, empty, edge; thumbnail me, the other, board, view
    s = jax.tree_util.tree_map(lambda x: jnp.asarray(x[0, 4]), st)
    obs = np.asarray(jax.jit(env.observe)(s, jnp.int32(1)))
    assert obs.shape == (7, 7, 8)
    window = np_window(np.asarray(s.board), np.asarray(s.view_centre), 7)
    for k, value in enumerate((2, 1, 0, vw.OFF_BOARD)):
        np.testing.assert_array_equal(obs[..., k], window == value)


# ------------------------------------------------------------------ the local view
def test_view_centre_rule_and_action_map():
    # lines of 9 on a 9x9 board, so that random boards below are live games
    env = envs.make("gomoku", size=9, win_length=9, num_players=3, view=5)
    s = env.init(jax.random.PRNGKey(0))
    np.testing.assert_array_equal(s.view_centre, [4, 4])
    np.testing.assert_array_equal(s.last_move, [NO_CELL, NO_CELL])
    assert env.action_cell(s, 0) == (2, 2) and env.action_cell(s, 24) == (6, 6)
    # the view follows the last stone, even to the corner: its off-board part is illegal
    board = np.zeros((9, 9), np.int8)
    board[0, 0] = 1
    s = env.state_from_board(board, current_player=1, last_move=(0, 0))
    np.testing.assert_array_equal(s.view_centre, [0, 0])
    window = np_window(board, (0, 0), 5)
    np.testing.assert_array_equal(np.asarray(s.legal_action_mask), (window == 0).reshape(-1))
    assert np.asarray(s.legal_action_mask).sum() == 8  # 3x3 on the board, minus the stone
    with pytest.raises(ValueError, match="off the board"):
        env.check_action(s, 0)
    with pytest.raises(ValueError, match="on a stone"):
        env.check_action(s, env.cell_action(s, 0, 0))
    a = env.string_to_action(s, "1,2")
    assert env.action_cell(s, a) == (1, 2) and env.action_to_string(s, a) == "1,2"
    with pytest.raises(ValueError, match="outside the view"):
        env.string_to_action(s, "5,5")
    # the view around the last stone is full: it moves to the nearest row with an empty cell
    # (upper on a tie), there to the empty cell nearest the stone's column (left on a tie)
    board = np.zeros((9, 9), np.int8)
    board[0:3, 0:3] = np.asarray([[1, 2, 3], [3, 1, 2], [2, 3, 1]])
    s = env.state_from_board(board, current_player=0, last_move=(0, 0))
    np.testing.assert_array_equal(s.view_centre, [0, 3])
    step = jax.jit(env.step)(s, env.cell_action(s, 0, 3))
    assert int(step.board[0, 3]) == 1
    np.testing.assert_array_equal(step.view_centre, [0, 3])
    # a random board: the centre is where the rule puts it, and it is always on the board
    rng = np.random.default_rng(1)
    fallbacks = 0
    for _ in range(30):
        board = random_board(rng, 9, 3, rng.choice([0.5, 0.97]))
        stones = np.argwhere(board)
        last = tuple(int(v) for v in stones[rng.integers(len(stones))])
        s = env.state_from_board(board, 0, last)
        if (np_window(board, last, 5) == 0).any():
            expect = last
        else:
            fallbacks += 1
            rows = [r for r in range(9) if (board[r] == 0).any()]
            row = min(rows, key=lambda r: (abs(r - last[0]), r))
            col = min(np.flatnonzero(board[row] == 0), key=lambda c: (abs(c - last[1]), c))
            expect = (row, col)
        np.testing.assert_array_equal(s.view_centre, expect)
    assert fallbacks >= 3


def test_every_legal_action_is_an_empty_board_cell(three_games):
    env, st, actions = three_games
    for b in range(8):
        for t in range(0, 40):
            if st.terminated[b, t] | st.truncated[b, t]:
                break
            window = np_window(st.board[b, t], st.view_centre[b, t], env.view)
            np.testing.assert_array_equal(st.legal_action_mask[b, t], (window == 0).reshape(-1))
            # the next stone lands where the action's cell is
            r, c = st.last_move[b, t + 1]
            h = env.view // 2
            a = actions[b, t + 1]
            assert (r, c) == (st.view_centre[b, t, 0] + a // env.view - h,
                              st.view_centre[b, t, 1] + a % env.view - h)


def test_illegal_action_inside_jit_ends_the_game():
    env = envs.make("gomoku", size=9, win_length=4, num_players=3, view=5)
    board = np.zeros((9, 9), np.int8)
    board[0, 0], board[4, 4] = 1, 2
    s = env.state_from_board(board, current_player=2, last_move=(0, 0))
    step = jax.jit(env.step)
    for bad in (0, env.cell_action(s, 0, 0)):  # off the board, on a stone
        out = step(s, jnp.int32(bad))
        assert bool(out.terminated)
        np.testing.assert_array_equal(out.rewards, [1.0, 1.0, -1.0])
        np.testing.assert_array_equal(out.board, board)


def test_observation_from_the_movers_seat(three_games):
    env, st, _ = three_games
    observe = jax.jit(jax.vmap(env.observe, in_axes=(0, None)))
    one = jax.tree_util.tree_map(lambda x: jnp.asarray(x[:4, 10]), st)
    for player in range(3):
        obs = np.asarray(observe(one, jnp.int32(player)))
        assert obs.shape == (4, 5, 5, 10)
        for b in range(4):
            board, centre = np.asarray(one.board[b]), np.asarray(one.view_centre[b])
            window = np_window(board, centre, 5)
            for k in range(3):  # me, next, previous
                seat = (player + k) % 3
                np.testing.assert_array_equal(obs[b, ..., k], window == seat + 1)
                # thumbnail: 9x9 board, 5x5 thumbnail of 2x2 blocks
                padded = np.zeros((10, 10))
                padded[:9, :9] = board == seat + 1
                np.testing.assert_allclose(obs[b, ..., 5 + k],
                                           padded.reshape(5, 2, 5, 2).mean(axis=(1, 3)))
            np.testing.assert_array_equal(obs[b, ..., 3], window == 0)
            np.testing.assert_array_equal(obs[b, ..., 4], window == vw.OFF_BOARD)
            on = np.zeros((10, 10))
            on[:9, :9] = 1
            np.testing.assert_allclose(obs[b, ..., 8], on.reshape(5, 2, 5, 2).mean(axis=(1, 3)))
            # the board cells under the 5x5 window, pooled into the same 2x2 blocks
            in_view = np.zeros((10, 10))
            r0, c0 = centre - 2
            in_view[max(r0, 0):min(r0 + 5, 9), max(c0, 0):min(c0 + 5, 9)] = 1
            np.testing.assert_allclose(obs[b, ..., 9],
                                       in_view.reshape(5, 2, 5, 2).mean(axis=(1, 3)))
    # the state's own observation is the mover's
    s = jax.tree_util.tree_map(lambda x: jnp.asarray(x[0, 10]), st)
    np.testing.assert_array_equal(env.observe(s), env.observe(s, s.current_player))


def test_vmapped_step_equals_one_game(three_games):
    env, st, actions = three_games
    step = jax.jit(env.step)
    for b, t in ((0, 3), (5, 12), (7, 20)):
        s = jax.tree_util.tree_map(lambda x: jnp.asarray(x[b, t]), st)
        out = step(s, jnp.int32(actions[b, t + 1]))
        np.testing.assert_array_equal(out.board, st.board[b, t + 1])
        np.testing.assert_array_equal(out.chain_counts, st.chain_counts[b, t + 1])
        np.testing.assert_array_equal(out.view_centre, st.view_centre[b, t + 1])
        np.testing.assert_array_equal(out.legal_action_mask, st.legal_action_mask[b, t + 1])


def test_render_text_and_svg(three_games):
    env, st, _ = three_games
    s = jax.tree_util.tree_map(lambda x: jnp.asarray(x[0, 6]), st)
    text = env.render_text(s)
    rows = text.splitlines()
    assert len(rows) == 9 + 2 and "to play" in rows[-1]
    board = np.asarray(s.board)
    assert sum(row[1:].lower().count(ch) for row in rows[1:10] for ch in "xov") == \
        np.count_nonzero(board)
    svg = env.render_svg(s)
    assert svg.startswith("<svg") and svg.count("<circle") == np.count_nonzero(board) + 1
    with pytest.raises(ValueError, match="unbatched"):
        env.render_text(jax.tree_util.tree_map(jnp.asarray, st))


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("config,name", [
    (dict(size=9, view=11), "view"),
    (dict(size=9, view=4), "view"),
    (dict(size=5, win_length=6, view=5), "win_length"),
    (dict(size=9, win_length=1, view=5), "win_length"),
    (dict(num_players=4), "num_players"),
    (dict(num_players=1), "num_players"),
    (dict(size=9.0), "size"),
    (dict(max_episode_steps=0), "max_episode_steps"),
    (dict(num_players=2, rewards_by_place=(1, 0, -1)), "rewards_by_place"),
    (dict(rewards_by_place="abc"), "rewards_by_place"),
    (dict(view=None, size=9, win_length=10), "win_length"),
])
def test_bad_configuration_names_the_setting(config, name):
    with pytest.raises(ValueError, match=name):
        envs.make("gomoku", **config)


def test_bad_positions_are_refused():
    env = envs.make("gomoku", size=9, win_length=4, num_players=2, view=5)
    with pytest.raises(ValueError, match="shape"):
        env.state_from_board(np.zeros((8, 8), np.int8))
    with pytest.raises(ValueError, match="values"):
        env.state_from_board(np.full((9, 9), 3, np.int8))
    line = np.zeros((9, 9), np.int8)
    line[2, 2:6] = 1
    with pytest.raises(ValueError, match="line"):
        env.state_from_board(line)
    with pytest.raises(ValueError, match="last_move"):
        env.state_from_board(np.zeros((9, 9), np.int8), last_move=(3, 3))


def test_defaults():
    env = envs.make("gomoku")
    assert (env.size, env.win_length, env.num_players, env.view) == (15, 5, 3, 15)
    assert envs.make("gomoku", size=100, win_length=8).view == 21
    assert envs.make("gomoku", size=16).view == 15
    assert envs.make("gomoku", max_steps=30).max_episode_steps == 30
    assert env.num_actions == env.max_legal_actions == 15 * 15


# ------------------------------------------------------------------ OpenSpiel referee
def referee(env, st, actions, games):
    """Replay our 2-player games in OpenSpiel's `gomoku` (size, connect): the same cells are
    legal among the view's, the game ends at the same move, with the same winner."""
    pyspiel = pytest.importorskip("pyspiel", reason="OpenSpiel is the referee: pip install "
                                                    "open_spiel (the `gomoku` extra)")
    game = pyspiel.load_game("gomoku", {"size": env.size, "connect": env.win_length})
    size, h, v = env.size, env.view // 2, env.view
    ends = {"win": 0, "full": 0}
    for b in range(games):
        state = game.new_initial_state()
        for t in range(st.step_count.shape[1] - 1):
            prev_legal = (st.legal_action_mask[b, t - 1] if t
                          else np.asarray(env.init_state(jax.random.PRNGKey(0)).legal_action_mask))
            centre = st.view_centre[b, t - 1] if t else (size // 2, size // 2)
            # our legal actions are exactly OpenSpiel's legal cells under the view
            os_legal = set(state.legal_actions())
            for a in range(v * v):
                r, c = centre[0] + a // v - h, centre[1] + a % v - h
                on = 0 <= r < size and 0 <= c < size
                assert bool(prev_legal[a]) == (on and r * size + c in os_legal)
            r, c = st.last_move[b, t]
            state.apply_action(int(r * size + c))
            ours_over = bool(st.terminated[b, t])
            assert state.is_terminal() == ours_over
            if ours_over:
                returns = state.returns()
                if returns[0] == returns[1]:
                    assert st.winner[b, t] == NO_WINNER
                    ends["full"] += 1
                else:
                    assert st.winner[b, t] == int(np.argmax(returns))
                    np.testing.assert_array_equal(st.rewards[b, t], returns)
                    ends["win"] += 1
                break
        assert state.is_terminal()
    return ends


def test_openspiel_referee_two_players(two_games):
    env, st, actions = two_games
    ends = referee(env, st, actions, 200)
    assert ends["win"] > 100


@pytest.mark.slow
@pytest.mark.parametrize("config", [(9, 4, 2, 7), (15, 5, 2, 9), (7, 5, 2, 5), (6, 4, 2, 5)])
def test_openspiel_referee_thousand_games(config):
    env, st, actions = play(config, 1000, 11)
    ends = referee(env, st, actions, 1000)
    assert ends["win"] + ends["full"] == 1000
