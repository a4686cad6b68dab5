"""envs.backgammon: protocol, properties (hypothesis), chance API, Position IDs and scoring
against gnubg, bad input."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import envs
from envs import backgammon as bg
from envs.backgammon import notation, rules

gnubg = pytest.importorskip("gnubg")

ENV = bg.Backgammon()
STEP = jax.jit(ENV.step)
STEP_DET = jax.jit(ENV.step_deterministic)
STEP_CHANCE = jax.jit(ENV.step_chance)
PROBS = jax.jit(ENV.chance_outcome_probs)
CLOSED = ((2, 2, 2, 2, 2, 2) + (0,) * 19, (0,) * 10 + (3,) + (0,) * 13 + (1,))  # we are shut out


def random_gboard(rng: np.random.Generator):
    """Random position (gnubg pair), 1..15 checkers a side, bar and bear-offs included."""
    while True:
        me, op = np.zeros(25, int), np.zeros(25, int)
        for arr in (me, op):
            hi = rng.integers(6, 26)
            for _ in range(rng.integers(1, 16)):
                arr[rng.integers(0, hi)] += 1
        if not ((me[:24] > 0) & (op[:24][::-1] > 0)).any():
            return tuple(int(x) for x in op), tuple(int(x) for x in me)


def checker_counts(board) -> tuple[int, int]:
    b = np.asarray(board)
    mine = b[:24].clip(0).sum() + b[rules.BAR] + b[rules.OFF]
    theirs = (-b[:24]).clip(0).sum() - b[rules.OPP_BAR] - b[rules.OPP_OFF]
    return int(mine), int(theirs)


# ---------------------------------------------------------------------------- rollouts
def _rollout_fn(steps: int):
    def one(state, key):
        ka, ks = jax.random.split(key)
        a = jax.random.categorical(ka, jnp.where(state.legal_action_mask, 0.0, -jnp.inf))
        nxt = ENV.step(state, a, ks)
        return nxt, (state, a, nxt)

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        return jax.lax.scan(one, ENV.init(k0), jax.random.split(k1, steps))

    return run


ROLLOUT = _rollout_fn(500)


@pytest.fixture(scope="module")
def finished_games():
    """Final states of 48 random games played to the end, and each game's summed rewards (an
    ended game absorbs with zero rewards, so the sum is the reward of its last move)."""

    def play(k):
        final, (_, _, after) = ROLLOUT(k)
        return final, after.rewards.sum(axis=0)

    return jax.jit(jax.vmap(play))(jax.random.split(jax.random.PRNGKey(11), 48))


def test_registry_and_init():
    env = envs.make("backgammon")
    init = jax.jit(env.init)
    assert isinstance(env, bg.Backgammon)
    assert (env.id, env.num_players, env.num_actions) == ("backgammon", 2, 156)
    assert env.is_stochastic and env.num_chance_outcomes == 21
    seen = set()
    for i in range(40):
        s = init(jax.random.PRNGKey(i))
        d = tuple(int(x) for x in s.dice)
        assert d[0] != d[1], "no doubles at the opening"
        assert not bool(s.is_chance) and not bool(s.terminated)
        assert notation.encode_position_id(bg.to_gnubg_board(s)) == "4HPwATDgc/ABMA"
        assert s.observation.shape == (bg.OBS_SIZE,)
        seen.add((d, int(s.current_player)))
    assert {p for _, p in seen} == {0, 1}


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_random_play_properties(seed):
    """15 checkers a side at every step, no shared point, only legal actions chosen and no
    penalty, rewards only at the end, decision states after every step, absorbing ends."""
    _, (before, actions, after) = ROLLOUT(jax.random.PRNGKey(seed))
    boards = np.asarray(after.board)
    term = np.asarray(after.terminated)
    rewards = np.asarray(after.rewards)
    live = ~np.asarray(before.terminated)
    for b in boards:
        assert checker_counts(b) == (15, 15)
        assert b[rules.BAR] >= 0 and b[rules.OPP_BAR] <= 0 and b[rules.OFF] >= 0 and b[rules.OPP_OFF] <= 0
    # chosen actions were legal wherever the game was live
    acts = np.asarray(actions)
    masks = np.asarray(before.legal_action_mask)
    assert masks[np.arange(len(acts)), acts][live].all()
    assert not np.asarray(after.is_chance).any()  # step resolves the roll
    # rewards: zero while the game goes on; +-k (k in 1..3) once, at the end, summing to 0
    ends = np.flatnonzero(term & live)
    assert (rewards[~(term & live)] == 0).all()
    for i in ends:
        k = rewards[i].max()
        assert k in (1.0, 2.0, 3.0) and rewards[i].sum() == 0
        assert int(np.asarray(after.current_player)[i]) == int(np.argmax(rewards[i]))
        assert boards[i][rules.OFF] == 15
    # a terminal state absorbs: same board, zero rewards, all actions allowed
    if len(ends):
        e = ends[0]
        assert (np.asarray(after.legal_action_mask)[e]).all()
        later = np.arange(e + 1, len(boards))
        assert (boards[later] == boards[e]).all() and (rewards[later] == 0).all()
    # passes only when nothing else is legal; the player then changes
    pass_only = masks[:, 0] & live
    assert (masks[pass_only].sum(axis=1) == 1).all()
    moved = ~pass_only & live
    for i in np.flatnonzero(moved)[:50]:
        assert masks[i, 1:].any()


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_every_legal_micro_action_keeps_a_valid_board(seed):
    rng = np.random.default_rng(seed)
    s = bg.from_gnubg_board(random_gboard(rng), tuple(int(x) for x in rng.integers(1, 7, 2)))
    kids = jax.jit(jax.vmap(ENV.step_deterministic, in_axes=(None, 0)))(s, jnp.arange(156))
    for a in np.flatnonzero(np.asarray(s.legal_action_mask)):
        b = np.asarray(kids.board[a])
        ended = bool(kids.terminated[a])
        r = np.asarray(kids.rewards[a])
        # no penalty: a legal move ends the game only by bearing off the last checker
        assert ended == (b[rules.OFF] == 15)
        assert (r == 0).all() if not ended else r.max() in (1.0, 2.0, 3.0)
        assert checker_counts(b) == checker_counts(s.board)
        assert b[rules.BAR] >= 0 and b[rules.OPP_BAR] <= 0


def test_chance_api_consistent_with_step():
    s = bg.from_gnubg_board(CLOSED, (3, 5))
    assert np.flatnonzero(np.asarray(s.legal_action_mask)).tolist() == [0]  # only the pass
    np.testing.assert_array_equal(np.asarray(PROBS(s)), np.eye(21, dtype=np.float32)[0])
    same = STEP_CHANCE(s, 7)  # a no-op on a decision state
    np.testing.assert_array_equal(np.asarray(same.board), np.asarray(s.board))
    np.testing.assert_array_equal(np.asarray(same.dice), np.asarray(s.dice))

    c = STEP_DET(s, 0)
    assert bool(c.is_chance) and int(c.current_player) == 1
    np.testing.assert_array_equal(np.asarray(c.board), rules.flip(np.asarray(s.board)))
    p = np.asarray(PROBS(c))
    assert p.shape == (21,) and abs(p.sum() - 1) < 1e-6
    for o, (a, b) in enumerate(rules.ROLLS):
        assert p[o] == pytest.approx(1 / 36 if a == b else 2 / 36)
        r = STEP_CHANCE(c, o)
        assert not bool(r.is_chance) and tuple(int(x) for x in r.dice) == (a, b)
        want = [4 if v == a else 0 for v in range(1, 7)] if a == b else [
            int(v in (a, b)) for v in range(1, 7)]
        assert np.asarray(r.remaining).tolist() == want
        # the mask is the one a fresh set-up from the same position and roll gives
        ref = bg.from_gnubg_board(bg.to_gnubg_board(c), (a, b), current_player=1)
        np.testing.assert_array_equal(np.asarray(r.legal_action_mask), np.asarray(ref.legal_action_mask))
        np.testing.assert_array_equal(np.asarray(r.observation), np.asarray(ref.observation))

    # Env.step = step_deterministic then step_chance with a sampled roll, sampled with PROBS
    keys = jax.random.split(jax.random.PRNGKey(0), 20000)
    stepped = jax.jit(jax.vmap(lambda k: ENV.step(s, 0, k)))(keys)
    dice = np.asarray(stepped.dice)
    outcome = np.array([np.flatnonzero((rules.ROLLS[:, 0] == a) & (rules.ROLLS[:, 1] == b))[0]
                        for a, b in dice[:200]])
    for i in range(5):
        direct = STEP_CHANCE(c, int(outcome[i]))
        for f in ("board", "dice", "remaining", "legal_action_mask", "current_player", "observation"):
            np.testing.assert_array_equal(np.asarray(getattr(direct, f)),
                                          np.asarray(getattr(stepped, f))[i])
    codes = dice[:, 0] * 7 + dice[:, 1]
    freq = np.array([(codes == a * 7 + b).mean() for a, b in rules.ROLLS])
    assert np.abs(freq - rules.ROLL_PROBS).max() < 0.01


def test_position_id_round_trip_against_gnubg():
    rng = np.random.default_rng(7)
    for _ in range(300):
        g = random_gboard(rng)
        pid = gnubg.positionid(g)
        s = bg.from_gnubg_board(g, (1, 2))
        assert bg.to_position_id(s) == pid
        s2 = bg.from_position_id(pid, (6, 6), current_player=1)
        assert bg.to_gnubg_board(s2) == g
        assert tuple(tuple(x) for x in gnubg.positionfromid(bg.to_position_id(s2))) == g
        assert checker_counts(s2.board) == (15, 15)
        assert int(s2.current_player) == 1 and tuple(int(x) for x in s2.dice) == (6, 6)


@pytest.mark.parametrize(
    "pid",
    [
        "",
        "4HPwATDgc/AB",  # too short
        "4HPwATDgc/ABMAA",  # too long
        "4HPwATDgc/AB!A",  # not base64
        notation.encode_position_id(((0,) * 24 + (16,), (15,) + (0,) * 24)),  # 16 checkers
        notation.encode_position_id(((1,) + (0,) * 24, (0,) * 23 + (1, 0))),  # shared point
        notation.encode_position_id(((0,) * 25, (1,) + (0,) * 24)),  # a side with no checker
        "////////////AA",  # too many ones: not 2 x 25 counts
    ],
)
def test_malformed_position_id_raises(pid):
    with pytest.raises(ValueError):
        bg.from_position_id(pid, (3, 1))


@pytest.mark.parametrize("dice", [(0, 3), (7, 1), (1,), "ab", None, (3.7, 1), (True, 2),
                                  ("3", "1"), (1, 2, 3)])
def test_bad_dice_raise(dice):
    with pytest.raises(ValueError, match="dice"):
        bg.from_position_id("4HPwATDgc/ABMA", dice)


def test_integer_dice_of_any_kind_are_taken():
    for dice in ((3, 1), (np.int32(3), np.int64(1)), (jnp.int32(3), 1)):
        s = bg.from_position_id("4HPwATDgc/ABMA", dice)
        assert tuple(int(d) for d in s.dice) == (1, 3)


def test_illegal_action_and_check_action():
    s = ENV.init(jax.random.PRNGKey(0))
    illegal = int(np.flatnonzero(~np.asarray(s.legal_action_mask))[0])
    with pytest.raises(ValueError):
        ENV.check_action(s, illegal)
    with pytest.raises(ValueError):
        ENV.check_action(s, 156)
    with pytest.raises(ValueError):
        ENV.check_action(s, -1)
    ENV.check_action(s, int(np.flatnonzero(np.asarray(s.legal_action_mask))[0]))
    me = int(s.current_player)
    for out in (STEP(s, illegal, jax.random.PRNGKey(1)), STEP_DET(s, illegal)):
        assert bool(out.terminated)
        assert float(out.rewards[me]) == -1.0 and float(out.rewards[1 - me]) == 1.0
    c = STEP_DET(bg.from_gnubg_board(CLOSED, (3, 5)), 0)
    with pytest.raises(ValueError):
        ENV.check_action(c, 0)  # a chance state: roll first


def _last_checker_cases(rng, n):
    """Positions where the mover bears off its last checker whatever it plays."""
    cases = []
    while len(cases) < n:
        me = [0] * 25
        pt = int(rng.integers(0, 6))
        me[pt] = 1
        op = np.zeros(25, int)
        total = 15 if rng.random() < 0.7 else int(rng.integers(1, 15))
        hi = int(rng.choice([6, 12, 18, 25]))
        for _ in range(total):
            op[rng.integers(0, hi)] += 1
        if op[23 - pt] > 0:
            continue
        g = (tuple(int(x) for x in op), tuple(me))
        lo = int(rng.integers(pt + 1, 7))
        cases.append((g, (lo, int(rng.integers(pt + 1, 7)))))
    return cases


def test_final_rewards_agree_with_gnubg_scoring(finished_games):
    """gnubg scores a finished position (winner on roll with no checker left) by `evaluate`:
    its cubeless equity is the points won. Random games plus built endings where the loser
    has checkers on the bar, in the winner's home board, or has borne some off."""
    ec = gnubg.evalcontext(0, 0, 1, 0, 0.0)
    fin, total_rewards = finished_games
    done = np.flatnonzero(np.asarray(fin.terminated))
    assert len(done) >= 40
    checked = {1: 0, 2: 0, 3: 0}
    for i in done:
        s = jax.tree_util.tree_map(lambda x: x[i], fin)
        winner = int(s.current_player)
        opp, me = bg.to_gnubg_board(s)
        assert sum(me) == 0
        points = gnubg.evaluate((opp, me), gnubg.cubeinfo(), ec)[5]
        r = np.asarray(total_rewards[i])
        assert float(r[winner]) == points and float(r[1 - winner]) == -points
        checked[int(points)] += 1
    rng = np.random.default_rng(3)
    for g, d in _last_checker_cases(rng, 150):
        s = bg.from_gnubg_board(g, d)
        a = int(np.flatnonzero(np.asarray(s.legal_action_mask))[0])
        end = STEP(s, a, jax.random.PRNGKey(0))
        assert bool(end.terminated)
        points = gnubg.evaluate(bg.to_gnubg_board(end), gnubg.cubeinfo(), ec)[5]
        assert float(end.rewards[0]) == points and float(end.rewards[1]) == -points
        checked[int(points)] += 1
    assert min(checked.values()) >= 10, checked
    # the bar counts for a backgammon: every loser's checker is on the bar. With 1-2 only one
    # die can be played (the last checker), so the rule makes it the larger one: action
    # src 2 (our point 1) x die 2 = 2 * 6 + 1.
    g = ((0,) * 24 + (15,), (1,) + (0,) * 24)
    s = bg.from_gnubg_board(g, (1, 2))
    assert np.flatnonzero(np.asarray(s.legal_action_mask)).tolist() == [13]
    end = STEP(s, 13, jax.random.PRNGKey(0))
    assert bool(end.terminated) and float(end.rewards[0]) == 3.0


def test_render_is_readable():
    s = bg.from_position_id("4HPwATDgc/ABMA", (3, 1))
    text = bg.render(s)
    assert "roll 1-3" in text and "4HPwATDgc/ABMA" in text and "X5" in text and "O5" in text
    c = STEP_DET(bg.from_gnubg_board(CLOSED, (3, 5)), 0)
    assert "to roll" in bg.render(c)


def test_fast_forced_move_mask_equals_bruteforce():
    """The analytic look-ahead of `roll_mask` equals applying every first step and searching
    for a second one, on random positions and rolls (the gnubg tests check the rule itself)."""
    rng = np.random.default_rng(17)
    boards, rems = [], []
    for _ in range(4000):
        g = random_gboard(rng)
        d = rng.integers(1, 7, 2)
        boards.append(notation.gnubg_to_board(g))
        rems.append(np.asarray(rules.roll_remaining(int(d[0]), int(d[1]))))
    b, r = jnp.asarray(np.stack(boards)), jnp.asarray(np.stack(rems))
    fast = np.asarray(jax.jit(jax.vmap(rules.roll_mask))(b, r))
    slow = np.asarray(jax.jit(jax.vmap(rules.roll_mask_bruteforce))(b, r))
    plain = np.asarray(jax.jit(jax.vmap(rules.simple_mask))(b, r))
    assert (fast != plain).reshape(len(fast), -1).any(axis=1).sum() >= 50  # the rule bites
    np.testing.assert_array_equal(fast, slow)


def test_move_text_is_gnubgs_against_its_best_moves():
    """gnubg's own move steps, written as text ("8/5", "bar/22", "3/off"), parse to legal
    actions that reach one of the positions gnubg lists for that roll (bar, hits and bear-offs
    from random positions). A bear-off with a larger die is ambiguous in gnubg's steps; the
    text then names the die ("3/off:5") and the first legal one is taken."""
    gnubg_nn = pytest.importorskip("gnubg_nn")
    from envs.backgammon.gnubg_bridge import rules_flip_np

    rng = np.random.default_rng(17)
    checked = 0
    while checked < 25:
        gb = random_gboard(rng)
        dice = tuple(int(x) for x in rng.integers(1, 7, 2))
        s = bg.from_gnubg_board(gb, dice)
        if bool(s.terminated) or int(np.asarray(s.legal_action_mask)[0]):
            continue  # finished, or no move to play
        board = [list(gb[0]), list(gb[1])]
        reachable = {tuple(map(tuple, gnubg_nn.board_from_position_key(k)))
                     for k in gnubg_nn.moves(board, *dice)}
        for frm, to in gnubg_nn.best_move(board, *dice):
            head = "bar" if frm == 25 else str(frm)
            texts = [f"{head}/{to}"] if to else [f"{frm}/off"] + [
                f"{frm}/off:{d}" for d in range(frm + 1, 7)]
            legal = [ENV.string_to_action(s, t) for t in texts
                     if bool(s.legal_action_mask[ENV.string_to_action(s, t)])]
            assert legal, (bg.to_position_id(s), dice, frm, to)
            assert ENV.action_to_string(s, legal[0]) in texts
            s = STEP_DET(s, legal[0])
        b = np.asarray(s.board)
        mover = rules_flip_np(b) if bool(s.is_chance) else b
        if not bool(s.terminated):
            assert notation.board_to_gnubg(mover) in reachable
        checked += 1


def test_move_text_bad_input():
    s = ENV.init(jax.random.PRNGKey(0))
    for bad in ("13-9", "bar/off", "bar/18", "25/20", "3/off:3", "3/off:2", "13/5", "0/1",
                "pass:1", "6/off:7", 13):
        with pytest.raises(ValueError):
            ENV.string_to_action(s, bad)
    with pytest.raises(ValueError):
        ENV.action_to_string(s, 156)
    # the layout of `rules`: action = src * 6 + die - 1, src 1 = bar, src 2..25 = points 1..24
    for action, text in ((0, "pass"), (25 * 6 + 0, "24/23"), (1 * 6 + 0, "bar/24"),
                         (1 * 6 + 5, "bar/19"), (7 * 6 + 5, "6/off"), (4 * 6 + 4, "3/off:5"),
                         (14 * 6 + 3, "13/9")):
        assert ENV.action_to_string(s, action) == text
        assert ENV.string_to_action(s, text) == action
