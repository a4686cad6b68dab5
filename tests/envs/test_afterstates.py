"""Complete moves (`Backgammon.afterstates`) checked against gnubg-nn's move generator on every
roll of random positions, against the env's own micro-steps, and at the boundary."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import backgammon as bg
from envs.backgammon import notation, rules
from envs.afterstates import NO_ACTION, AfterstateEnv

gnubg_nn = pytest.importorskip("gnubg_nn")

from backgammon_positions import random_gboard  # noqa: E402  (same position generator)

ENV = envs.make("backgammon")
EXACT_M = 1024  # above every sample's count (the largest seen: 783 in gnubg self-play)


@functools.lru_cache(maxsize=None)
def _batched(m):
    @jax.jit
    def run(boards, outcomes, players):
        states = jax.vmap(ENV._decision_state)(boards, outcomes, players)
        states = states.replace(observation=jax.vmap(ENV.observe)(states))
        return jax.vmap(lambda s: ENV.afterstates(s, m))(states)

    return run


def _positions(n, seed):
    rng = np.random.default_rng(seed)
    return [random_gboard(rng) for _ in range(n)]


CHUNK = 40  # positions a call: 2,000 x 21 states x M = 1024 slots at once would need ~47 GB


def _sets_all_rolls(gboards, m):
    """For each position x roll: (gnubg board, roll, our set of result boards, count, overflow)."""
    if len(gboards) > CHUNK:
        return [c for i in range(0, len(gboards), CHUNK)
                for c in _sets_all_rolls(gboards[i:i + CHUNK], m)]
    boards = np.stack([notation.gnubg_to_board(g) for g in gboards])
    nb, nr = len(gboards), rules.NUM_ROLLS
    out = _batched(m)(jnp.asarray(np.repeat(boards, nr, 0)),
                      jnp.asarray(np.tile(np.arange(nr), nb)), jnp.zeros(nb * nr, jnp.int32))
    valid = np.asarray(out.valid)
    states = out.states
    after_boards = np.asarray(states.board)
    chance = np.asarray(states.is_chance)
    over = np.asarray(out.overflow)
    res = []
    for i in range(nb * nr):
        mine = set()
        for j in np.flatnonzero(valid[i]):
            b = after_boards[i, j]
            mover_side = -b[rules._FLIP] if chance[i, j] else b  # back to the mover's side
            mine.add(notation.board_to_gnubg(mover_side))
        res.append((gboards[i // nr], tuple(int(x) for x in rules.ROLLS[i % nr]), mine,
                    int(valid[i].sum()), bool(over[i])))
    return res


def _gnubg_set(g, roll):
    ref = {tuple(tuple(x) for x in gnubg_nn.board_from_position_key(k))
           for k in gnubg_nn.moves(g, roll[0], roll[1])}
    return ref or {g}  # no legal move: the position stays


def _check_equal(cases):
    bad = [(notation.encode_position_id(g), r) for g, r, mine, n, over in cases
           if over or n != len(mine) or mine != _gnubg_set(g, r)]
    assert not bad, f"{len(bad)} of {len(cases)} disagree with gnubg-nn, e.g. {bad[:5]}"


def test_every_roll_of_random_positions_equals_gnubg_nn():
    """120 hard-case positions x all 21 rolls: bear-offs, the bar, primes, blocked dice."""
    cases = _sets_all_rolls(_positions(120, 11), EXACT_M)
    _check_equal(cases)
    n = np.array([c[3] for c in cases])
    assert (n == 1).sum() > 100 and n.max() > 200  # forced / single moves, and large sets
    assert any(sum(me) == 0 for c in cases for _, me in c[2])  # some move bears off the last


@pytest.mark.slow
def test_thousands_of_positions_equal_gnubg_nn():
    # M = gnubg's bound on one roll's moves: this sample holds a 1-1 with 1,308 (AIAAWFGUKEUAAA),
    # which overflowed EXACT_M before issue 43 as after
    _check_equal(_sets_all_rolls(_positions(2000, 12), 3060))


def test_overflow_keeps_legal_moves_and_says_so():
    cases = _sets_all_rolls(_positions(120, 11), 64)
    over = [c for c in cases if c[4]]
    assert over, "the sample has positions with more than 64 complete moves"
    for g, r, mine, n, _ in over:
        assert n == 64 and mine <= _gnubg_set(g, r)
    exact = [c for c in cases if not c[4]]
    _check_equal(exact)


def test_results_are_what_the_env_micro_steps_make():
    """Each listed state equals the env's step_deterministic applied to its micro-actions,
    every step legal (check_action), on every field."""
    step = jax.jit(ENV.step_deterministic)
    rng = np.random.default_rng(3)
    aft = jax.jit(ENV.afterstates)
    observe = jax.jit(ENV.observe)
    checked = 0
    for g in _positions(25, 4):
        roll = tuple(int(x) for x in rng.integers(1, 7, 2))
        s = bg.from_gnubg_board(g, roll, current_player=int(rng.integers(2)))
        s = s.replace(step_count=jnp.int32(rng.integers(0, 40)))
        out = aft(s)
        for j in np.flatnonzero(np.asarray(out.valid))[:12]:
            t = s
            for a in np.asarray(out.actions[j]):
                if a == NO_ACTION:
                    break
                ENV.check_action(t, int(a))
                t = step(t, a)
            mine = jax.tree_util.tree_map(lambda x: x[j], out.states)
            for f in ("board", "current_player", "rewards", "terminated", "legal_action_mask",
                      "step_count", "dice", "remaining", "is_chance"):
                np.testing.assert_array_equal(np.asarray(getattr(mine, f)),
                                              np.asarray(getattr(t, f)), err_msg=f)
            # no observation is listed (observations on demand): observing the slot gives
            # the one the micro-steps computed
            assert mine.observation is None
            np.testing.assert_array_equal(np.asarray(observe(mine)), np.asarray(t.observation))
            checked += 1
    assert checked > 100


def test_mid_turn_lists_the_rest_of_the_move():
    """After a complete move's first checker, the afterstates are the completions: a subset
    of the full list holding every move that starts with that checker."""
    aft = jax.jit(ENV.afterstates)
    step = jax.jit(ENV.step_deterministic)
    for g in _positions(12, 5):
        s = bg.from_gnubg_board(g, (2, 2))
        full = aft(s)
        valid = np.asarray(full.valid)
        boards = {np.asarray(full.states.board[j]).tobytes() for j in np.flatnonzero(valid)}
        first = int(full.actions[int(np.flatnonzero(valid)[0]), 0])
        if first == rules.PASS_ACTION:
            continue
        mid = aft(step(s, first))
        mid_boards = {np.asarray(mid.states.board[j]).tobytes()
                      for j in np.flatnonzero(np.asarray(mid.valid))}
        starts = {np.asarray(full.states.board[j]).tobytes() for j in np.flatnonzero(valid)
                  if int(full.actions[j, 0]) == first}
        assert starts <= mid_boards <= boards


def test_boundary():
    s = ENV.init(jax.random.PRNGKey(0))
    assert isinstance(ENV, AfterstateEnv)
    chance = ENV.step_deterministic(s, int(np.flatnonzero(np.asarray(s.legal_action_mask))[0]))
    while not bool(chance.is_chance):
        chance = ENV.step_deterministic(
            chance, int(np.flatnonzero(np.asarray(chance.legal_action_mask))[0]))
    with pytest.raises(ValueError, match="rolled dice"):
        ENV.afterstates(chance)
    with pytest.raises(ValueError, match="batch"):
        ENV.afterstates(jax.vmap(ENV.init)(jax.random.split(jax.random.PRNGKey(0), 2)))
    with pytest.raises(ValueError, match="max_afterstates"):
        ENV.afterstates(s, 10)
    with pytest.raises(ValueError, match="int"):
        ENV.afterstates(s, 2.5)
    # inside jit nothing can be raised: every slot is invalid
    out = jax.jit(ENV.afterstates)(chance)
    assert not bool(jnp.any(out.valid))
    # a roll without any legal move: the pass, position unchanged (the opponent to roll)
    g = ((2, 2, 2, 2, 2, 2) + (0,) * 19, (0,) * 24 + (1,))  # our checker on the bar, closed
    blocked = ENV.afterstates(bg.from_gnubg_board(g, (3, 5)))
    assert int(blocked.valid.sum()) == 1
    assert int(blocked.actions[0, 0]) == rules.PASS_ACTION
    assert bool(blocked.states.is_chance[0])


# ---------------------------------------------------------------- a plain-Python reference
def _py_rows(b, die):
    """Move rows (0 the bar, 1..24 points 0..23) a checker can take with `die`."""
    if b[rules.BAR] > 0:
        return [0] if b[24 - die] >= -1 else []
    home = all(b[i] <= 0 for i in range(6, 24))
    highest = max((i for i in range(24) if b[i] > 0), default=-1)
    rows = []
    for i in range(24):
        if b[i] > 0:
            d = i - die
            if (d >= 0 and b[d] >= -1) or (d < 0 and home and (d == -1 or i == highest)):
                rows.append(i + 1)
    return rows


def _py_apply(b, row, die):
    b = list(b)
    if row == 0:
        b[rules.BAR] -= 1
        d = 24 - die
    else:
        b[row - 1] -= 1
        d = row - 1 - die
    if d < 0:
        b[rules.OFF] += 1
    else:
        if b[d] == -1:
            b[d] = 0
            b[rules.OPP_BAR] -= 1
        b[d] += 1
    return tuple(b)


def _py_complete(board, dice):
    """{(result board, dice left)} of every complete move: depth first over single checker
    moves, the most dice played, and of two different dice with one playable, the larger."""
    ends, seen = {}, set()

    def rec(b, left, first):
        if (b, left, first) in seen:
            return
        seen.add((b, left, first))
        moved = False
        for die in set(left):
            for row in _py_rows(b, die):
                moved = True
                rest = list(left)
                rest.remove(die)
                rec(_py_apply(b, row, die), tuple(sorted(rest)), first or die)
        if not moved:
            ends.setdefault(len(dice) - len(left), set()).add((b, left, first))

    rec(tuple(int(x) for x in board), tuple(sorted(dice)), 0)
    most = max(ends)
    found = ends[most]
    if most == 1 and len(set(dice)) == 2 and any(f == max(dice) for _, _, f in found):
        found = {e for e in found if e[2] == max(dice)}
    return {(b, left) for b, left, _ in found}


def _dice_cases():
    """Every roll, and the rest of a turn: 3, 2 or 1 dice of a double, 1 of two dice."""
    out = [[a, b] * (2 if a == b else 1) for a, b in rules.ROLLS]
    out += [[a] * k for a in range(1, 7) for k in (1, 2, 3)]
    out += [[a] for a in range(1, 7)]  # one die left of two
    return out


def test_complete_moves_equal_a_plain_python_search():
    """`complete_moves` (batched: doubles pooled, small levels retried at M; and one state at
    a time) against a plain-Python depth-first search, mid-turn states included."""
    from envs.backgammon import afterstates as afterstates_lib

    m = EXACT_M
    gboards = _positions(8, 21)
    cases = [(notation.gnubg_to_board(g), d) for g in gboards for d in _dice_cases()]
    # one checker on each of 15 points and an open board: over 128 moves of a non-double
    # (the batched two-dice path's first, smaller list), listed again at M
    wide = np.zeros(28, np.int32)
    wide[6:21], wide[0] = 1, -15
    cases += [(wide, d) for d in ([6, 5], [3, 1], [2, 2])]  # (its doubles pass 1,024)
    boards = np.stack([b for b, _ in cases])
    rem = np.stack([np.bincount(np.asarray(d) - 1, minlength=6) for _, d in cases])
    live = np.ones(len(cases), bool)
    live[::17] = False  # a chance or finished state: nothing listed
    batched = jax.jit(jax.vmap(lambda b, r, v: afterstates_lib.complete_moves(b, r, v, m)))
    level, over = batched(boards, rem, live)
    single = jax.jit(lambda b, r, v: afterstates_lib.complete_moves(b, r, v, m))
    valid, got_b, got_r = (np.asarray(x) for x in (level.valid, level.board, level.remaining))
    assert not np.asarray(over).any()
    big = big2 = 0
    for i, (b, d) in enumerate(cases):
        mine = {(tuple(got_b[i, j]), tuple(np.repeat(np.arange(1, 7), got_r[i, j])))
                for j in np.flatnonzero(valid[i])}
        if not live[i]:
            assert not mine
            continue
        ref = _py_complete(b, d)
        if ref == {(tuple(int(x) for x in b), tuple(sorted(d)))} and not any(
                _py_rows(b, x) for x in set(d)):
            assert mine == ref and int(level.actions[i, 0, 0]) == rules.PASS_ACTION
            continue
        assert mine == ref and valid[i].sum() == len(ref), (b.tolist(), d)
        big += len(ref) > afterstates_lib.SMALL_LEVELS
        big2 += len(ref) > afterstates_lib.TWO_DICE_SLOTS and len(d) <= 2
        if i % 9 == 0 or i >= len(cases) - 3:  # one state alone (no vmap: the two-dice or the doubles branch)
            one, _ = single(boards[i], rem[i], live[i])
            np.testing.assert_array_equal(np.asarray(one.valid), valid[i])
            np.testing.assert_array_equal(np.asarray(one.board)[valid[i]], got_b[i][valid[i]])
    assert big > 5 and big2 >= 2  # some states went through the retries at M


@pytest.mark.slow  # two more compiles of the whole listing (~1-2 min on 2 loaded cores)
def test_nested_batches_list_what_one_batch_lists():
    """search/afterstate lists a [B, K] batch through one vmap over B * K states."""
    from turbozero.search.afterstate import _afterstates

    gboards = _positions(6, 8)
    states = jax.vmap(ENV._decision_state)(
        jnp.asarray(np.repeat(np.stack([notation.gnubg_to_board(g) for g in gboards]), 4, 0)),
        jnp.asarray(np.tile([0, 5, 6, 20], 6)), jnp.zeros(24, jnp.int32))  # doubles and not
    flat = jax.jit(lambda s: _afterstates(ENV, s, 64))(states)
    nested = jax.jit(lambda s: _afterstates(ENV, s, 64))(
        jax.tree_util.tree_map(lambda x: x.reshape((6, 4) + x.shape[1:]), states))
    for a, b in zip(jax.tree_util.tree_leaves(flat), jax.tree_util.tree_leaves(nested)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b).reshape(a.shape))
