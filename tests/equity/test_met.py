"""Match play checked against gnubg: its MET, its cubeless match winning chance, eq2mwc/mwc2eq.

gnubg (PyPI wheel 1.1.0a16) is the referee: `gnubg.met` gives the table it uses,
`gnubg.evaluate` with a match cubeinfo gives the cubeless equity `mwc2eq(MWC)` of a position,
and `gnubg.eq2mwc` / `gnubg.mwc2eq` convert at the cubeinfo's score and cube. Only 0-ply
evaluations are used (fast, deterministic). `gnubg.command` is never called.
"""

import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from equity import (
    MAX_MATCH_LENGTH,
    gnubg_to_value_outputs,
    match_equity_table,
    match_winning_chance,
    met_lookup,
    money_equity_to_mwc,
    mwc_to_money_equity,
    outcome_match_winning_chances,
    value_outputs_to_equity,
)

gnubg = pytest.importorskip("gnubg")

N = MAX_MATCH_LENGTH


@pytest.fixture(scope="module")
def gnubg_met():
    pre, post0, post1 = gnubg.met(N)
    return np.array(pre, np.float64), np.array(post0, np.float64), np.array(post1, np.float64)


def _cubeinfo(my_score, opp_score, length, cube=1, crawford=False, move=0):
    """gnubg cubeinfo with `my` being the player on move (player `move`)."""
    score = (my_score, opp_score) if move == 0 else (opp_score, my_score)
    return gnubg.cubeinfo(cube, -1, move, length, score, int(crawford), 0)


def _all_scores(lengths=(1, 2, 3, 4, 5, 7, 9, 11, 15, 25)):
    """Every score of some lengths, with the Crawford flags that can hold there."""
    out = []
    for length in lengths:
        for a in range(length):
            for b in range(length):
                one_away = length - a == 1 or length - b == 1
                for crawford in ((False, True) if one_away and a != b else (False,)):
                    out.append((a, b, length, crawford))
    return out


# ---------------------------------------------------------------- the table itself

def test_table_is_gnubgs_kazaross_xg2(gnubg_met):
    pre, post0, post1 = gnubg_met
    t = match_equity_table()
    assert t.max_length == N == 25 and "Kazaross" in t.name
    # gnubg stores float32: agreement to float32 rounding.
    np.testing.assert_allclose(t.pre_crawford, pre, atol=1e-6, rtol=0)
    # The last post-Crawford entry (trailer 25 away) cannot occur in a match of at most 25
    # points (the trailer won the Crawford game, so is at most 24 away); gnubg does not read it
    # from the XML (it computes 0.0011812, the file says 0.00123). All reachable ones agree.
    np.testing.assert_allclose(t.post_crawford[:N - 1], post0[:N - 1], atol=1e-6, rtol=0)
    np.testing.assert_allclose(t.post_crawford[:N - 1], post1[:N - 1], atol=1e-6, rtol=0)
    assert t.post_crawford[N - 1] == 0.00123 and abs(post0[N - 1] - 0.0011812) < 1e-6
    # Basic shape of a MET: symmetric, 0.5 on the diagonal, better the fewer points I need.
    np.testing.assert_allclose(t.pre_crawford + t.pre_crawford.T, 1.0, atol=1e-12)
    assert np.all(np.diff(t.pre_crawford, axis=0) <= 0)
    assert np.all(np.diff(t.pre_crawford, axis=1) >= 0)
    assert match_equity_table(7).pre_crawford.shape == (7, 7)


def test_json_is_the_xml_verbatim():
    from equity.data.build_met import _default_xml, build

    path = os.path.join(os.path.dirname(__import__("equity").__file__), "data",
                        "kazaross_xg2.json")
    with open(path) as f:
        shipped = json.load(f)
    assert shipped == build(_default_xml())


def test_met_lookup_against_gnubg(gnubg_met):
    pre, post0, _ = gnubg_met
    a = np.arange(1, N + 1)
    mine, theirs = np.meshgrid(a, a, indexing="ij")
    np.testing.assert_allclose(np.asarray(met_lookup(mine, theirs)), pre, atol=1e-6)
    # Post-Crawford: the leader is 1 away. Reachable trailers are 1..24 away.
    t = np.arange(1, N)
    np.testing.assert_allclose(np.asarray(met_lookup(t, 1, True)), post0[:N - 1], atol=1e-6)
    np.testing.assert_allclose(np.asarray(met_lookup(1, t, True)), 1 - post0[:N - 1], atol=1e-6)
    assert float(met_lookup(0, 5)) == 1.0 and float(met_lookup(5, 0)) == 0.0


@pytest.mark.parametrize("args,name", [
    ((0, 0), "both be 0"), ((-1, 3), "my_away"), ((3, 26), "opp_away"), ((2, 3, True), "post_crawford"),
    ((1.5, 2), "my_away"),
])
def test_met_lookup_bad_input(args, name):
    with pytest.raises(ValueError, match=name):
        met_lookup(*args)


def test_match_equity_table_bad_length():
    for bad in (0, 26, -1, 2.5):
        with pytest.raises(ValueError, match="max_length"):
            match_equity_table(bad)


# ---------------------------------------------------------------- hand-computed cases

# Entries of the Kazaross-XG2 file (gnubg data/met/Kazaross-XG2.xml) used below.
PRE_1A_2A, PRE_1A_3A, PRE_2A_3A = 0.67736, 0.75076, 0.59947
POST_TRAILER_2A, POST_TRAILER_3A = 0.48803, 0.32264


def _six(v):
    """Six outcome probabilities of a 4-way vector, written out by hand."""
    w, gw, gl, bg = v
    return np.array([w * (1 - gw), w * gw * (1 - bg), w * gw * bg,
                     (1 - w) * (1 - gl), (1 - w) * gl * (1 - bg), (1 - w) * gl * bg])


VS = [(0.5, 0.2, 0.3, 0.1), (0.7, 0.9, 0.0, 1.0), (0.3, 0.0, 0.8, 0.4), (1.0, 1.0, 1.0, 1.0)]


@pytest.mark.parametrize("score", [(0, 0, 1), (4, 4, 5), (6, 6, 7), (24, 24, 25)])
def test_double_match_point_is_p_win(score):
    v = jnp.array(VS)
    np.testing.assert_allclose(np.asarray(value_outputs_to_equity(v, score)), v[:, 0], atol=1e-6)


@pytest.mark.parametrize("v", VS)
def test_hand_cases(v):
    p = _six(v)

    def mwc(score):
        return float(value_outputs_to_equity(jnp.array(v, jnp.float32), score))

    # 0-0 in a 3-point match: +1 -> 2a-3a, +2 -> 1a-3a (Crawford), +3 -> match won;
    # the losses mirror it (-3 loses the match).
    want = (p[0] * PRE_2A_3A + p[1] * PRE_1A_3A + p[2] * 1.0
            + p[3] * (1 - PRE_2A_3A) + p[4] * (1 - PRE_1A_3A) + p[5] * 0.0)
    assert mwc((0, 0, 3)) == pytest.approx(want, abs=1e-6)
    # Crawford game, I lead 6-3 in 7: any win takes the match; a loss of 1/2/3 points leaves
    # me 1 away against 3/2/1 away, post-Crawford.
    want = (p[0] + p[1] + p[2] + p[3] * (1 - POST_TRAILER_3A) + p[4] * (1 - POST_TRAILER_2A)
            + p[5] * 0.5)
    assert mwc((6, 3, 7)) == pytest.approx(want, abs=1e-6)
    # The trailer's side of it: gammons now matter only for me.
    want = p[0] * POST_TRAILER_3A + p[1] * POST_TRAILER_2A + p[2] * 0.5
    assert mwc((3, 6, 7)) == pytest.approx(want, abs=1e-6)
    # 4-5 in 7 (3 away, 2 away), no one 1 away: a single loss makes the NEXT game the Crawford
    # game (pre-Crawford table 3a-1a = 1 - 0.75076), not post-Crawford (0.32264).
    want = (p[0] * 0.5 + p[1] * PRE_1A_2A + p[2] * 1.0 + p[3] * (1 - PRE_1A_3A))
    assert mwc((4, 5, 7)) == pytest.approx(want, abs=1e-6)


def test_after_crawford_game_is_post_crawford():
    # 6-4 in 7 (a Crawford or post-Crawford game): a single loss gives 6-5, post-Crawford,
    # worth 1 - 0.48803 to me, not the Crawford-game value 0.67736; a gammon loss gives 6-6
    # (double match point, 0.5), a backgammon loss ends the match.
    m = np.asarray(outcome_match_winning_chances((6, 4, 7)))
    np.testing.assert_allclose(m, [1, 1, 1, 1 - POST_TRAILER_2A, 0.5, 0], atol=1e-6)


# ---------------------------------------------------------------- against gnubg positions

def _race(rng, k):
    """A race (no contact, so gnubg's backgammon outputs are exactly 0) with gammon chances:
    one side is nearly home, the other still has checkers far out; `k` picks which."""
    home, out = [0] * 25, [0] * 25
    for p in rng.integers(0, 6, size=15):
        home[int(p)] += 1
    for p in rng.integers(int(rng.integers(4, 9)), 12, size=15):
        out[int(p)] += 1
    return (out, home) if k % 2 == 0 else (home, out)  # (opponent, side on move)


def _contact(rng):
    """15 checkers a side anywhere (bar included), no point held by both."""
    mine, theirs = [0] * 25, [0] * 25
    for p in rng.integers(0, 25, size=15):
        mine[int(p)] += 1
    free = [j for j in range(25) if j == 24 or mine[23 - j] == 0]
    for p in rng.choice(free, size=15):
        theirs[int(p)] += 1
    return theirs, mine


@pytest.fixture(scope="module")
def positions():
    rng = np.random.default_rng(1234)
    ec = gnubg.evalcontext(0, 0, 1, 0, 0.0)
    boards = [_race(rng, k) for k in range(6)] + [_contact(rng) for _ in range(6)]
    boards.append(gnubg.positionfromid("4HPwATDgc/ABMA"))  # the opening position
    return [(b, ec, np.array(gnubg.evaluate(b, gnubg.cubeinfo(), ec)[:5], np.float64))
            for b in boards]


def _gnubg_six(g):
    w, wg, wbg, lg, lbg = g
    return np.array([w - wg, wg - wbg, wbg, 1 - w - lg, lg - lbg, lbg])


def test_outcome_mwc_matches_gnubg_cubeless_mwc(positions):
    """sum P(outcome) x our MET-after-outcome == gnubg's cubeless MWC, at every score."""
    cases = [(my, opp, length, crawford, cube, move)
             for my, opp, length, crawford in _all_scores() for cube in (1, 2) for move in (0, 1)
             # gnubg allows no cube above 1 in the Crawford game; post-Crawford kept at 1 too.
             if cube == 1 or (not crawford and length - max(my, opp) > 1)]
    my, opp, length, _, cube, _ = (np.array(c) for c in zip(*cases))
    ours = np.asarray(outcome_match_winning_chances((my, opp, length), cube), np.float64)
    checked = 0
    for k, (my, opp, length, crawford, cube, move) in enumerate(cases):
        ci = _cubeinfo(my, opp, length, cube, crawford, move)
        for b, ec, _ in positions[:: 4 if length > 5 else 1]:
            r = gnubg.evaluate(b, ci, ec)  # for the side on move, whichever player it is
            theirs = gnubg.eq2mwc(r[5], ci)
            assert _gnubg_six(np.array(r[:5])) @ ours[k] == pytest.approx(theirs, abs=2e-5), (
                my, opp, length, crawford, cube, move)
            checked += 1
    assert checked > 1000


def test_value_outputs_to_equity_matches_gnubg_on_races(positions):
    """In races gnubg's outputs convert to the 4-way format exactly; compare end to end."""
    races = [(b, ec, g) for b, ec, g in positions if g[2] == 0 and g[4] == 0]
    assert len(races) >= 6
    assert any(g[1] > 0.05 for *_, g in races) and any(g[3] > 0.05 for *_, g in races)
    v = gnubg_to_value_outputs(jnp.array([g for *_, g in races], jnp.float32))
    cases = _all_scores((1, 3, 5, 7, 25))
    my, opp, length, _ = (np.array(c)[:, None] for c in zip(*cases))
    ours = np.asarray(value_outputs_to_equity(v[None], (my, opp, length)))
    assert ours.shape == (len(cases), len(races))
    for i, (my, opp, length, crawford) in enumerate(cases):
        ci = _cubeinfo(my, opp, length, 1, crawford)
        for k, (b, ec, _) in enumerate(races):
            want = gnubg.eq2mwc(gnubg.evaluate(b, ci, ec)[5], ci)
            assert ours[i, k] == pytest.approx(want, abs=2e-5), (my, opp, length, crawford)


def test_dmp_against_gnubg(positions):
    v = gnubg_to_value_outputs(jnp.array([g for *_, g in positions], jnp.float32))
    ours = np.asarray(match_winning_chance(v, (0, 0, 1)))
    for k, (b, ec, g) in enumerate(positions):
        ci = _cubeinfo(0, 0, 1)
        assert ours[k] == pytest.approx(gnubg.eq2mwc(gnubg.evaluate(b, ci, ec)[5], ci), abs=2e-6)
        assert ours[k] == pytest.approx(g[0], abs=1e-6)


# ---------------------------------------------------------------- eq2mwc / mwc2eq

def test_eq_mwc_conversions_match_gnubg():
    eqs = np.linspace(-1.5, 1.5, 13)
    mwcs = np.linspace(0.0, 1.0, 7)
    cases = [(my, opp, length, crawford, cube)
             for my, opp, length, crawford in _all_scores() for cube in (1, 2, 4)
             if cube == 1 or (length - my > 1 and length - opp > 1)]
    my, opp, length, _, cube = (np.array(c)[:, None] for c in zip(*cases))
    score = (my, opp, length)
    ours_mwc = np.asarray(money_equity_to_mwc(jnp.array(eqs, jnp.float32)[None], score, cube))
    ours_eq = np.asarray(mwc_to_money_equity(jnp.array(mwcs, jnp.float32)[None], score, cube))
    back = np.asarray(money_equity_to_mwc(jnp.asarray(ours_eq), score, cube))
    assert ours_mwc.shape == (len(cases), len(eqs)) and ours_eq.shape == (len(cases), len(mwcs))
    np.testing.assert_allclose(back, np.broadcast_to(mwcs, back.shape), atol=1e-5)
    for k, (my, opp, length, crawford, cube) in enumerate(cases):
        ci = _cubeinfo(my, opp, length, cube, crawford)
        want = np.array([gnubg.eq2mwc(float(e), ci) for e in eqs])
        np.testing.assert_allclose(ours_mwc[k], want, atol=2e-6,
                                   err_msg=str((my, opp, length, crawford, cube)))
        want = np.array([gnubg.mwc2eq(float(m), ci) for m in mwcs])
        np.testing.assert_allclose(ours_eq[k], want, rtol=1e-4, atol=1e-4,
                                   err_msg=str((my, opp, length, crawford, cube)))
    assert len(cases) > 500


def test_conversion_bad_input():
    with pytest.raises(ValueError, match="cube_value"):
        money_equity_to_mwc(0.0, (0, 0, 7), 0)
    with pytest.raises(ValueError, match="my_score"):
        mwc_to_money_equity(0.5, (7, 0, 7))
