"""Afterstate TD's expectation targets (`ExpectedTargets`, turbozero.training.td) against a
plain-Python reference: gnubg-nn lists every roll's complete moves, a fixed network values
them, the mover takes its best by money equity, and the 21 rolls are averaged with their
probabilities (1/36 doubles, 2/36 the rest)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.backgammon import Backgammon, from_gnubg_board, _observe_board, notation, rules
from equity import value_outputs_to_equity
from turbozero.networks.value_formats import FourWayValue
from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.training.td import (AfterstateTD, ExpectedTargets, SampledTargets, TDConfig,
                                   lambda_targets)


gnubg_nn = pytest.importorskip("gnubg_nn")

from backgammon_positions import random_gboard  # noqa: E402  (the hard-case positions)

FMT = FourWayValue()
ENV = Backgammon()
_W1 = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (203, 16)), np.float32) * 0.3
_W2 = np.asarray(jax.random.normal(jax.random.PRNGKey(2), (16, 4)), np.float32)


def _apply(variables, obs):
    del variables
    return None, jnp.tanh(obs @ _W1) @ _W2


def _joint_np(logits):
    """Plain Python: the joint [win, gammon win, gammon loss, backgammon] of the 4-way head."""
    w, gwc, glc, bgr = 1.0 / (1.0 + np.exp(-np.asarray(logits, np.float64)))
    gw, gl = w * gwc, (1 - w) * glc
    return np.array([w, gw, gl, (gw + gl) * bgr])


def _flip_np(j):
    return np.array([1 - j[0], j[2], j[1], j[3]])


def _reference(gboard):
    """(the expected joint for the player on roll in `gboard` (gnubg pair: opponent, on
    roll), the rolls whose best move ends the game)."""
    total, ends = np.zeros(4), 0
    for d1 in range(1, 7):
        for d2 in range(d1, 7):
            prob = 1 / 36 if d1 == d2 else 2 / 36
            keys = gnubg_nn.moves([list(gboard[0]), list(gboard[1])], d1, d2)
            results = [gnubg_nn.board_from_position_key(k) for k in keys] or [gboard]
            best, best_eq = None, -np.inf
            for opp, me in results:
                if sum(me) == 0:  # the mover bore off its last checker: exact points
                    opp_off = 15 - sum(opp)
                    in_home = sum(opp[18:25]) > 0  # the winner's home board or the bar
                    pts = 1 if opp_off > 0 else (3 if in_home else 2)
                    joint = np.array([1.0, pts >= 2, 0.0, pts >= 3], float)
                    eq, ended = float(pts), True
                else:  # the opponent to roll: the network's joint for it, flipped
                    board = notation.gnubg_to_board((opp, me))
                    obs = _observe_board(jnp.asarray(rules.flip(jnp.asarray(board))),
                                         jnp.zeros(6, jnp.int32), jnp.asarray(True))
                    logits = np.tanh(np.asarray(obs) @ _W1) @ _W2
                    theirs = _joint_np(logits)
                    eq = -float(value_outputs_to_equity(
                        jax.nn.sigmoid(jnp.asarray(logits, jnp.float32))))
                    joint, ended = _flip_np(theirs), False
                if eq > best_eq:
                    best, best_eq, best_ends = joint, eq, ended
            total += prob * best
            ends += best_ends
    return total, ends


def _positions():
    rng = np.random.default_rng(7)
    opp = [0] * 25
    opp[10] = 1
    out = [(tuple(opp), tuple([1, 1] + [0] * 23))]  # 2 checkers left: every roll wins, single
    # a gammon possible: the opponent has borne nothing off, one checker in our home board
    opp = [0] * 25
    opp[19], opp[5] = 1, 14
    out.append((tuple(opp), tuple([1, 1] + [0] * 23)))
    while len(out) < 6:
        g = random_gboard(rng)
        sizes = [len(gnubg_nn.moves([list(g[0]), list(g[1])], a, b))
                 for a in range(1, 7) for b in range(a, 7)]
        if max(sizes) <= 200:
            out.append(g)
    return out


@pytest.fixture(scope="module")
def expectation():
    algo = AfterstateTD(ENV, _apply, FMT, TDConfig(target=ExpectedTargets()))

    @jax.jit
    def run(states):
        roller = states.current_player
        return algo._expectation(None, states, roller)

    return run


def test_expected_targets_equal_the_plain_python_average_over_the_rolls(expectation):
    positions = _positions()
    chance = []
    for i, g in enumerate(positions):
        s = from_gnubg_board(g, (1, 2), current_player=i % 2)  # the player to roll: i % 2
        s = s.replace(is_chance=jnp.asarray(True), dice=jnp.zeros(2, jnp.int32),
                      remaining=jnp.zeros(6, jnp.int32))
        chance.append(s)
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *chance)
    got = np.asarray(expectation(batch))
    ends = 0
    for i, g in enumerate(positions):
        want, n = _reference(g)
        np.testing.assert_allclose(got[i], want, rtol=1e-4, atol=1e-5,
                                   err_msg=f"position {i}: {g}")
        ends += n
    # the exact outcomes were reached (a random network's 0-ply does not always take the win:
    # 1-2 from two checkers on the 1 and 2 points may also play 2/1/off, whose value for the
    # opponent it may rate below -1)
    assert ends > 0


def test_lambda_targets_with_expected_targets_are_td0_toward_the_stored_expectation():
    rng = np.random.default_rng(3)
    t_len = 10
    outcome = rng.uniform(0, 1, (t_len, 4)).astype(np.float32)
    finished = np.zeros(t_len, bool)
    finished[4] = True
    written = np.ones(t_len, bool)
    written[:2] = False
    g, ok = lambda_targets(outcome, finished, written, FMT.flip_outcome, 0.0, ExpectedTargets())
    # every written move that did not end the game has a target, the newest too
    assert list(np.asarray(ok)) == list(written & ~finished)
    np.testing.assert_allclose(np.asarray(g)[np.asarray(ok)], outcome[np.asarray(ok)])
    # lambda over them: G_t = (1 - l) Y_t + l flip(G_{t+1}), Y alone before a finished move
    lam = 0.5
    g, _ = lambda_targets(outcome, finished, written, FMT.flip_outcome, lam, ExpectedTargets())
    ref = [None] * t_len
    ref[t_len - 1] = outcome[t_len - 1]
    for t in range(t_len - 2, -1, -1):
        chain = written[t + 1] and not finished[t + 1]
        ref[t] = (1 - lam) * outcome[t] + lam * _flip_np(ref[t + 1]) if chain else outcome[t]
    for t in np.flatnonzero(written & ~finished):
        np.testing.assert_allclose(np.asarray(g[t]), ref[t], rtol=1e-5)


def test_target_must_be_a_target_object():
    with pytest.raises(ValueError, match="target must be SampledTargets"):
        TDConfig(target=1)
    assert TDConfig().target == SampledTargets()
