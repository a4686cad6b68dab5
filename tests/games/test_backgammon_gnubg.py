"""envs.backgammon checked against gnubg: the complete legal moves of 1,000+ positions and rolls,
and the gnubg bridge."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

gnubg = pytest.importorskip("gnubg")

from envs import backgammon as bg  # noqa: E402
from envs.backgammon import gnubg_bridge, notation, rules  # noqa: E402

from backgammon_positions import random_gboard  # noqa: E402

N_SYNTHETIC = 800
N_PLAYED = 300


def apply_gnubg_steps(gboard, move):
    """Apply a gnubg move tuple (from, to, ...), 1-based, bar 25; it has no bear-off."""
    op, me = list(gboard[0]), list(gboard[1])
    for i in range(0, len(move), 2):
        f, t = move[i], move[i + 1]
        me[f - 1] -= 1
        me[t - 1] += 1
        j = 24 - t  # the opponent's index of our point t
        if op[j] == 1:
            op[j] = 0
            op[24] += 1
    return tuple(op), tuple(me)


@pytest.fixture(scope="module")
def played_positions():
    """(gnubg board, dice) right after rolls met in random self-play of the env."""
    env = bg.Backgammon()
    batch, steps = 32, 120

    @jax.jit
    def rollout(key):
        k0, k1 = jax.random.split(key)
        states = jax.vmap(env.init)(jax.random.split(k0, batch))

        def one(s, k):
            ka, ks, ki = jax.random.split(k, 3)
            a = jax.random.categorical(ka, jnp.where(s.legal_action_mask, 0.0, -jnp.inf))
            n = env.step(s, a, ks)
            n = jax.tree_util.tree_map(lambda x, y: jnp.where(n.terminated, x, y), env.init(ki), n)
            just_rolled = jnp.all(n.remaining == rules.roll_remaining(n.dice[0], n.dice[1]))
            return n, (n.board, n.dice, just_rolled)

        def body(s, k):
            return jax.vmap(one)(s, jax.random.split(k, batch))

        _, out = jax.lax.scan(body, states, jax.random.split(k1, steps))
        return out

    boards, dice, ok = (np.asarray(x).reshape((-1,) + x.shape[2:]) for x in rollout(jax.random.PRNGKey(3)))
    idx = np.flatnonzero(ok)
    rng = np.random.default_rng(5)
    pick = rng.choice(idx, size=N_PLAYED, replace=False)
    return [(notation.board_to_gnubg(boards[i]), tuple(int(d) for d in dice[i])) for i in pick]


@pytest.fixture(scope="module")
def cases(played_positions):
    rng = np.random.default_rng(2024)
    synth = [(random_gboard(rng), tuple(int(d) for d in rng.integers(1, 7, 2)))
             for _ in range(N_SYNTHETIC)]
    out = []
    for g, d in synth + played_positions:
        s = bg.from_gnubg_board(g, d)
        out.append((g, d, s, gnubg_bridge.complete_moves(s)))
    return out


def test_cases_exercise_the_hard_rules(cases):
    """The sample must contain forced-move restrictions, no-move rolls, bear-offs and the bar."""
    forced = nomove = bearoff = bar = 0
    simple, rolled = jax.jit(rules.simple_mask), jax.jit(rules.roll_mask)
    for g, d, s, moves in cases:
        b = np.asarray(s.board)
        plain = np.asarray(simple(s.board, s.remaining))
        forced += bool(plain.any() and not np.array_equal(np.asarray(rolled(s.board, s.remaining)), plain))
        nomove += bool(s.legal_action_mask[0])
        bar += bool(b[rules.BAR] > 0)
        bearoff += any(sum(me) < sum(g[1]) for (_, me) in moves)
    assert len(cases) >= 1000
    assert forced >= 30 and nomove >= 50 and bearoff >= 100 and bar >= 50, (forced, nomove, bearoff, bar)


def test_complete_moves_equal_gnubg_move_list(cases):
    """gnubg's findbestmoves: same number of distinct moves on every case, and the same set of
    resulting positions wherever no move bears off (gnubg cuts its tuples at a bear-off)."""
    ci, ec = gnubg.cubeinfo(), gnubg.evalcontext(0, 0, 1, 0, 0.0)
    n_count = n_set = 0
    bad = []
    for g, d, s, moves in cases:
        ref = gnubg.findbestmoves(g, ci, ec, d)
        mine = set(moves)
        if not ref:  # no legal move: the env offers only the pass, position unchanged
            ok = mine == {g} and bool(s.legal_action_mask[0])
        else:
            ok = len(ref) == len(mine)
        n_count += ok
        if ok and ref and not any(sum(me) < sum(g[1]) for (_, me) in mine):
            ref_set = {apply_gnubg_steps(g, r["move"]) for r in ref}
            ok = ref_set == mine
            n_set += ok
        if not ok:
            bad.append((notation.encode_position_id(g), d))
    assert not bad, f"{len(bad)} disagreements, e.g. {bad[:5]}"
    assert n_count >= 1000 and n_set >= 500, (n_count, n_set)


def test_complete_moves_equal_gnubg_nn_positions(cases):
    """gnubg-nn's `moves`: the keys of all distinct resulting positions, bear-offs included."""
    gnubg_nn = pytest.importorskip("gnubg_nn")
    bad = []
    for g, d, s, moves in cases:
        ref = {tuple(tuple(x) for x in gnubg_nn.board_from_position_key(k))
               for k in gnubg_nn.moves(g, d[0], d[1])}
        if not ref:
            ref = {g}
        if ref != set(moves):
            bad.append((notation.encode_position_id(g), d))
    assert not bad, f"{len(bad)} of {len(cases)} disagree, e.g. {bad[:5]}"


def _apply_actions(state, actions):
    env = bg.Backgammon()
    for a in actions:
        env.check_action(state, a)
        state = _step_det(state, jnp.int32(a))
    return state


_step_det = jax.jit(bg.Backgammon().step_deterministic)


def test_bridge_plays_gnubg_best_move(cases):
    """best_move_actions is a legal micro-action sequence ending the turn, and where gnubg's
    tuple is complete (no bear-off) it reaches gnubg's own best move's position."""
    ci, ec = gnubg.cubeinfo(), gnubg.evalcontext(0, 0, 1, 0, 0.0)
    same = compared = 0
    for g, d, s, moves in cases[::10]:
        actions = gnubg_bridge.best_move_actions(s)
        end = _apply_actions(s, actions)
        assert bool(end.is_chance) or bool(end.terminated)
        b = np.asarray(end.board)
        mover_board = gnubg_bridge.rules_flip_np(b) if bool(end.is_chance) else b
        result = notation.board_to_gnubg(mover_board)
        assert result in moves
        ref = gnubg.findbestmoves(g, ci, ec, d)
        if ref and not any(sum(me) < sum(g[1]) for (_, me) in moves):
            compared += 1
            # ties in gnubg's score can be broken either way: compare scores, not moves
            best_score = ref[0]["score"]
            mine = [r["score"] for r in ref if apply_gnubg_steps(g, r["move"]) == result]
            same += bool(mine) and abs(mine[0] - best_score) < 1e-4
    assert compared >= 50
    assert same == compared, (same, compared)
