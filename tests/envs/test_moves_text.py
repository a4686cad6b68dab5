"""Complete backgammon moves as text (`envs.backgammon.moves_text`), checked against gnubg's
own move strings: every move gnubg-nn lists for a few hundred positions is written exactly as
`gnubg.movetupletostring` writes it, and gnubg's string (and other spellings of the same move)
reads back as that move."""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest

from envs import backgammon as bg
from envs.backgammon import moves_text as mt
from envs.backgammon import notation, rules

START = notation.gnubg_to_board(notation.decode_position_id("4HPwATDgc/ABMA"))


def test_writes_the_usual_forms():
    assert mt.format_move(START, [(8, 5), (6, 5)]) == "8/5 6/5"
    assert mt.format_move(START, [(6, 5), (8, 5)]) == "8/5 6/5"  # any order given
    assert mt.format_move(START, [(24, 22), (22, 20)]) == "24/20"  # one checker joined
    assert mt.format_move(START, [(13, 9)] * 2 + [(9, 5)] * 2) == "13/5(2)"
    assert mt.format_move(START, []) == ""
    b = START.copy()
    b[0], b[4] = -1, -1  # one of the opponent's back checkers on our 5 point
    assert mt.format_move(b, [(6, 5), (8, 5)]) == "8/5* 6/5"  # a hit marked once
    assert mt.format_move(b, [(13, 10), (10, 5)]) == "13/5*"  # no hit on the way
    assert mt.format_move(b, [(8, 5), (5, 3)]) == "8/5*/3"  # a hit on the way
    bar = START.copy()
    bar[5], bar[rules.BAR] = 4, 1
    assert mt.format_move(bar, [(25, 22), (13, 11)]) == "bar/22 13/11"
    home = np.zeros(28, np.int32)
    home[[5, 2]] = [1, 2]
    home[rules.OFF], home[18], home[rules.OPP_OFF] = 12, -15, 0
    assert mt.format_move(home, [(6, 0), (3, 0)]) == "6/off 3/off"
    # micro-actions: src * 6 + die - 1, src 1 the bar, src 2..25 points 1..24
    assert mt.steps_from_actions([7 * 6 + 2, 9 * 6 + 2, -1, -1]) == [(6, 3), (8, 5)]
    assert mt.steps_from_actions([1 * 6 + 3]) == [(25, 21)]
    assert mt.steps_from_actions([4 * 6 + 5]) == [(3, 0)]  # 3/off with a 6
    assert mt.steps_from_actions([0, -1]) == []  # the pass


@pytest.mark.parametrize("text, hops", [
    ("8/5 6/5", [(8, 5, False), (6, 5, False)]),
    ("BAR/22, 13/11", [(25, 22, False), (13, 11, False)]),
    ("25/22 6/0", [(25, 22, False), (6, 0, False)]),
    ("13/7*/2", [(13, 7, True), (7, 2, False)]),
    ("24/20(2)", [(24, 20, False)] * 2),
    ("8-5 6-5", [(8, 5, False), (6, 5, False)]),
    ("6/off(2) 5/off", [(6, 0, False)] * 2 + [(5, 0, False)]),
])
def test_reads_the_usual_forms(text, hops):
    assert [tuple(h) for h in mt.parse_move(text)] == hops


@pytest.mark.parametrize("text, reason", [
    ("", "empty move"),
    ("8/5 foo", "'foo' is not a move part"),
    ("8/x", "'x' is not a point"),
    ("5/8", "goes backwards"),
    ("off/3", "off is where a checker ends"),
    ("8/bar", "the bar is where a checker starts"),
    ("8*/5", "follows the point hit"),
    ("26/20", "points are 1-24"),
    ("6/off*", "nothing is hit when bearing off"),
    ("8/5(5)", "repeated 1 to 4 times"),
    ("8/", "is not a move part"),
])
def test_malformed_text_says_why_in_one_line(text, reason):
    with pytest.raises(ValueError) as err:
        mt.parse_move(text)
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_match_by_end_position_and_hits():
    legal = [[(8, 5), (6, 5)], [(13, 10), (10, 9)], [(24, 21), (24, 23)]]
    assert mt.match_move(START, "6/5 8/5", legal) == 0  # order free
    assert mt.match_move(START, "13/9", legal) == 1  # joined
    assert mt.match_move(START, "13/12 12/9", legal) == 1  # another route, same end
    assert mt.match_move(START, "24/23 24/21", legal) == 2
    with pytest.raises(ValueError, match=r"^illegal: 8/5 is not a legal complete move$"):
        mt.match_move(START, "8/5", legal)  # half a move
    with pytest.raises(ValueError, match=r"^illegal: 8/5 is not a legal complete move for 3-1$"):
        mt.match_move(START, "8/5", legal, roll="3-1")
    with pytest.raises(ValueError, match=r"^illegal: 7/4 6/5: no checker of yours on 7$"):
        mt.match_move(START, "7/4 6/5", legal)
    with pytest.raises(ValueError, match=r"^illegal: 6/5 5/1: 1 is blocked \(2 checkers"):
        mt.match_move(START, "6/5 5/1", legal)
    with pytest.raises(ValueError, match=r"^illegal: 8/5\* 6/5 marks a hit on 5, where the "
                                         "opponent has no checker"):
        mt.match_move(START, "8/5* 6/5", legal)
    with pytest.raises(ValueError, match=r"^not a move: "):
        mt.match_move(START, "8/5 6/", legal)
    # 6-5 from 13 with a blot on 7 and another on 8: the route is named, or ambiguous
    b = START.copy()
    b[6], b[18] = -1, -4  # an opponent blot on our 7 point
    legal = [[(13, 7), (7, 2)], [(13, 8), (8, 2)]]
    assert mt.match_move(b, "13/2", legal) == 1  # unnamed passage: no hit
    assert mt.match_move(b, "13/7*/2", legal) == 0
    assert mt.match_move(b, "13/7/2", legal) == 0  # landing on a blot hits, marked or not
    b[5], b[7], b[18] = 8, -1, -3  # blots on 7 and 8: each route hits one
    with pytest.raises(ValueError, match=r"^ambiguous: 13/2 can be 13/7\*/2, 13/8\*/2"):
        mt.match_move(b, "13/2", legal)
    with pytest.raises(ValueError, match="enter it first"):
        bar = START.copy()
        bar[5], bar[rules.BAR] = 4, 1
        mt.match_move(bar, "13/10 6/5", [[(25, 22), (13, 11)]])


# ---------------------------------------------------------------------------------- gnubg
gnubg = pytest.importorskip("gnubg")
gnubg_nn = pytest.importorskip("gnubg_nn")

from backgammon_positions import random_gboard  # noqa: E402  (the same hard-case positions)

N_POSITIONS = 300


@functools.lru_cache(maxsize=1)
def _cases():
    """(gnubg board, roll, gnubg's moves [(tuple, its string, resulting board pair)])."""
    rng = np.random.default_rng(31)
    out = []
    while len(out) < N_POSITIONS:
        g = random_gboard(rng)
        roll = tuple(int(d) for d in rng.integers(1, 7, 2))
        listed = gnubg_nn.best_move(g, roll[0], roll[1], list=1)
        if not listed or not listed[1]:
            continue  # no legal move: nothing to write
        moves = []
        for key, tup, *_ in listed[1]:
            # best_move's keys are of the position after the move, the opponent on roll
            result = tuple(tuple(x) for x in gnubg_nn.board_from_position_key(key))[::-1]
            moves.append((tup, gnubg.movetupletostring(tup, g), result))
        out.append((g, roll, moves))
    return out


def _steps(tup):
    return [(tup[i], tup[i + 1]) for i in range(0, len(tup), 2)]


def test_sample_has_the_hard_forms():
    strings = [s for _, _, moves in _cases() for _, s, _ in moves]
    for form in ("*", "(", "bar/", "/off", "*/"):
        assert sum(form in s for s in strings) >= 20, form
    assert len(strings) > 3000


def test_written_as_gnubg_writes_it():
    bad = []
    for g, roll, moves in _cases():
        board = notation.gnubg_to_board(g)
        for tup, ref, _ in moves:
            mine = mt.format_move(board, _steps(tup))
            if mine != ref:
                bad.append((notation.encode_position_id(g), roll, tup, ref, mine))
    assert not bad, f"{len(bad)} differ, e.g. {bad[:5]}"


def _spellings(tup, text):
    """Other ways a person may type the same move: gnubg's string without hit marks, with
    FIBS's '-', and the single-die hops in reverse order."""
    hops = [f"{mt._point_text(a)}/{mt._point_text(b)}" for a, b in _steps(tup)]
    return [text, text.replace("*", ""), text.replace("/", "-"), " ".join(reversed(hops)),
            ", ".join(hops).upper()]


def test_gnubg_strings_read_back_as_their_moves():
    """Each of gnubg's strings is its own move among all of the position's legal moves (and
    its other spellings too, on a third of the positions), and every result is where
    apply_steps puts the checkers."""
    bad = []
    n = 0
    for i, (g, roll, moves) in enumerate(_cases()):
        board = notation.gnubg_to_board(g)
        legal = [_steps(tup) for tup, _, _ in moves]
        for k, (tup, text, result) in enumerate(moves):
            assert notation.board_to_gnubg(mt.apply_steps(board, legal[k])) == result
            for typed in _spellings(tup, text) if i % 3 == 0 else [text]:
                n += 1
                try:
                    got = mt.match_move(board, typed, legal)
                except ValueError as err:
                    got = str(err)
                if got != k:
                    bad.append((notation.encode_position_id(g), roll, typed, got))
    assert n > 7000
    assert not bad, f"{len(bad)} of {n} misread, e.g. {bad[:5]}"


def test_afterstates_are_written_as_gnubg_writes_their_positions():
    """The env's complete moves (their micro-actions) written as text: the same string gnubg
    writes for the move to that position, and read back as the same complete move."""
    env = bg.Backgammon()
    listing = jax.jit(lambda s: env.afterstates(s, 4096))
    bad = []
    n = 0
    for g, roll, moves in _cases()[:150]:
        state = bg.from_gnubg_board(g, roll)
        board = np.asarray(state.board)
        out = listing(state)
        rows = np.asarray(out.actions)[np.asarray(out.valid)]
        legal = [mt.steps_from_actions(a) for a in rows]
        by_result = {result: text for _, text, result in moves}
        for k, steps in enumerate(legal):
            n += 1
            text = mt.format_move(board, steps)
            ref = by_result.get(notation.board_to_gnubg(mt.apply_steps(board, steps)))
            if text != ref or mt.match_move(board, text, legal) != k:
                bad.append((notation.encode_position_id(g), roll, text, ref))
    assert n > 1000
    assert not bad, f"{len(bad)} of {n} differ, e.g. {bad[:5]}"
