"""Pip counts on the text board (`notation.pip_counts`), against the count written directly on
gnubg's board pair (each side's own points 1-24, its bar 25)."""

from __future__ import annotations

import jax
import numpy as np

import envs
from envs.backgammon import from_position_id, notation, render_text


def _gnubg_pips(gboard):
    opp, me = gboard
    return (sum((i + 1) * n for i, n in enumerate(me)), sum((i + 1) * n for i, n in enumerate(opp)))


def test_pip_counts_match_gnubgs_board_pairs():
    env = envs.make("backgammon")
    s = env.init(jax.random.PRNGKey(3))
    rng = np.random.default_rng(0)
    key = jax.random.PRNGKey(4)
    seen = 0
    while seen < 60:  # random play: hits (the bar) and bear-offs appear on the way
        if bool(s.terminated):
            s = env.init(jax.random.PRNGKey(seen))
        board = np.asarray(s.board)
        assert notation.pip_counts(board) == _gnubg_pips(notation.board_to_gnubg(board))
        seen += 1
        for _ in range(4):
            if bool(s.terminated):
                break
            legal = np.flatnonzero(np.asarray(s.legal_action_mask))
            key, k = jax.random.split(key)
            s = env.step(s, int(rng.choice(legal)), k)
    # the opening: 167 each, on the board line of the drawing
    opening = from_position_id("4HPwATDgc/ABMA", (3, 1))
    assert notation.pip_counts(np.asarray(opening.board)) == (167, 167)
    assert "pips: X 167  O 167" in render_text(opening)
    # X on the bar counts 25 for it; O borne off counts nothing
    me = (0,) * 5 + (14,) + (0,) * 18 + (1,)
    opp = (3,) + (0,) * 24
    state = envs.backgammon.from_gnubg_board((opp, me), (2, 1))
    assert notation.pip_counts(np.asarray(state.board)) == (6 * 14 + 25, 3)
