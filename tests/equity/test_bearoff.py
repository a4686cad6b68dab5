"""equity.bearoff: gnubg's bear-off databases as a jittable evaluator, checked against gnubg-nn's
own reading of the database (ids and distributions), a plain-Python reference of the race
formula, and gnubg's 0-ply evaluation (docs/equity.md, "Bear-off database")."""

from __future__ import annotations

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

gnubg_nn = pytest.importorskip("gnubg_nn")
gnubg = pytest.importorskip("gnubg")

from envs.backgammon import notation, rules  # noqa: E402
from equity import (  # noqa: E402
    BearoffTable,
    bearoff_index,
    bearoff_value,
    flip_value,
    gnubg_to_value_outputs,
    load_bearoff_table,
    money_equity,
    outcome_probabilities,
    race_probabilities,
)
from equity import bearoff  # noqa: E402

# jitted once here: eager calls would compile every primitive for every new shape
value_fn = jax.jit(bearoff_value)
index_fn = jax.jit(bearoff_index)

N_IDS = bearoff.NUM_POSITIONS
N_SMALL = bearoff.TWO_SIDED_POSITIONS
N_GNUBG = 1200  # random positions evaluated by gnubg (gnubg takes ~10 us each)
# gnubg's 0-ply evaluation is the same formula on the same 16-bit data; what is left is float32
# rounding of sums of 32 products (measured: 1.8e-7 at most over 1,200 positions).
GNUBG_ATOL = 1e-6
# The one-sided estimate of the winning chance against the two-sided database's exact value,
# over all 923 x 923 pairs of positions with 1..6 checkers: at most 0.01396 (measured, slow test).
ONE_VS_TWO_SIDED_MAX = 0.0140


def make_board(me6, opp6) -> np.ndarray:
    """int32[..., 28]: the mover's home points 1..6 hold `me6`, the opponent's `opp6`
    (its point k is our index 24 - k); everything else is borne off."""
    me6 = np.asarray(me6, np.int32)
    opp6 = np.asarray(opp6, np.int32)
    b = np.zeros(me6.shape[:-1] + (28,), np.int32)
    b[..., :6] = me6
    b[..., 23:17:-1] = -opp6
    b[..., rules.OFF] = 15 - me6.sum(-1)
    b[..., rules.OPP_OFF] = -(15 - opp6.sum(-1))
    return b


def random_side(rng: np.random.Generator, n: int, top: int = 6) -> np.ndarray:
    side = np.zeros(6, np.int32)
    np.add.at(side, rng.integers(0, top, size=n), 1)
    return side


@pytest.fixture(scope="module")
def table() -> BearoffTable:
    return load_bearoff_table()


@pytest.fixture(scope="module")
def np_table(table):
    """float64 copies for the plain-Python references."""
    return (np.asarray(table.off, np.float64), np.asarray(table.first_off, np.float64),
            np.asarray(table.two_sided, np.float64))


@pytest.fixture(scope="module")
def positions() -> np.ndarray:
    """int[54264, 6]: gnubg-nn's position of every id (row 0, the empty position, is zeros)."""
    pos = np.zeros((N_IDS, 6), np.int32)
    for i in range(1, N_IDS):
        pos[i] = gnubg_nn.bearoff_id_2_pos(i)
    return pos


@pytest.fixture(scope="module")
def gnubg_sample():
    """(boards int32[N, 28], gnubg's 5 outputs float64[N, 5], gnubg's position classes int[N])
    for random bear-off positions: a quarter each with both sides uniform in 1..15 checkers,
    the mover with all 15 on its points 4..6 against 1..3 checkers (gammon losses likely), the
    opponent with all 15 against 1..7 (gammon wins), and both with at most 6 (gnubg's two-sided
    region)."""
    rng = np.random.default_rng(31)
    boards = []
    for k in range(N_GNUBG):
        style = k % 4
        n_me, n_opp = rng.integers(1, 16, size=2)
        if style == 1:
            n_me, n_opp = 15, rng.integers(1, 4)
        elif style == 2:
            n_me, n_opp = rng.integers(1, 8), 15
        elif style == 3:
            n_me, n_opp = rng.integers(1, 7, size=2)
        me = random_side(rng, n_me)
        opp = random_side(rng, n_opp)
        if style == 1:  # all 15 on points 4..6: the first checker is slow to come off
            me = np.roll(random_side(rng, 15, top=3), 3)
        boards.append(make_board(me, opp))
    boards = np.stack(boards)
    ctx = gnubg.evalcontext(0, 0, 1, 0, 0.0)  # cubeless, 0-ply, deterministic
    outputs, classes = [], []
    for b in boards:
        gb = notation.board_to_gnubg(b)
        outputs.append(gnubg.evaluate(gb, gnubg.cubeinfo(), ctx)[:5])
        classes.append(gnubg.classify(gb))
    return boards, np.asarray(outputs, np.float64), np.asarray(classes)


# --- the index ---------------------------------------------------------------------------------

def test_index_is_gnubgs_one_sided_id_for_every_position(positions):
    """Every one of the 54,263 non-empty positions maps to the id gnubg-nn decodes it from, for
    the mover and (mirrored onto its own home board) for the opponent."""
    ids = np.arange(1, N_IDS)
    boards = make_board(positions[1:], positions[1:][::-1])
    is_bo, my_id, opp_id = index_fn(boards)
    assert bool(jnp.all(is_bo))
    np.testing.assert_array_equal(np.asarray(my_id), ids)
    np.testing.assert_array_equal(np.asarray(opp_id), ids[::-1])


def test_index_formula_by_hand():
    # ids 1..6: one checker on point 1..6; 7: two on point 1 (gnubg's order: by count first)
    # 15 on the 6-point is the last id; 6 checkers on the 6-point the last of the two-sided range
    me = np.concatenate([np.eye(6, dtype=np.int32), [[2, 0, 0, 0, 0, 0], [0] * 5 + [15],
                                                     [0] * 5 + [6]]])
    _, my_id, _ = index_fn(make_board(me, np.broadcast_to([1, 0, 0, 0, 0, 0], me.shape)))
    np.testing.assert_array_equal(np.asarray(my_id), [1, 2, 3, 4, 5, 6, 7, N_IDS - 1,
                                                      N_SMALL - 1])
    assert int(bearoff._one_sided_index(jnp.zeros(6, jnp.int32))) == 0  # the empty position
    assert N_IDS == math.comb(21, 6) and N_SMALL == math.comb(12, 6)


def test_non_bearoff_positions():
    home = make_board([3, 3, 3, 2, 2, 2], [2, 2, 2, 3, 3, 3])
    cases = {"opening": rules.START_BOARD.copy()}
    b = home.copy(); b[5] -= 1; b[6] += 1; cases["mover on point 7"] = b
    b = home.copy(); b[23 - 5] += 1; b[17] -= 1; cases["opponent on its point 7"] = b
    b = home.copy(); b[0] -= 1; b[rules.BAR] += 1; cases["mover on the bar"] = b
    b = home.copy(); b[23] += 1; b[rules.OPP_BAR] -= 1; cases["opponent on the bar"] = b
    cases["mover finished"] = make_board([0] * 6, [1, 0, 0, 0, 0, 0])
    cases["opponent finished"] = make_board([1, 0, 0, 0, 0, 0], [0] * 6)
    table = load_bearoff_table()
    boards = np.stack(list(cases.values()))
    is_bo, my_id, opp_id = index_fn(boards)
    is_bo2, value = value_fn(table, boards)
    for k, name in enumerate(cases):
        assert not bool(is_bo[k]) and not bool(is_bo2[k]), name
        assert int(my_id[k]) == 0 and int(opp_id[k]) == 0, name
        np.testing.assert_array_equal(np.asarray(value[k]), 0.0, err_msg=name)
    assert bool(index_fn(home)[0])


# --- the table ---------------------------------------------------------------------------------

def test_table_matches_gnubg_nn_distributions(table):
    """Our reading of gnubg_os0.bd gives gnubg-nn's own bear-off distributions for every id
    (gnubg-nn returns P(n rolls) for n = 1.. up to the last non-zero one)."""
    want = np.zeros((N_IDS, 32))
    want[0, 0] = 1.0  # the empty position (not a gnubg-nn id): off after 0 rolls
    for i in range(1, N_IDS):
        p = gnubg_nn.bearoff_probabilities(i)
        want[i, 1:len(p) + 1] = p
    np.testing.assert_allclose(np.asarray(table.off, np.float64), want, rtol=0, atol=1e-7)


def test_table_structure_and_dice_facts(table, positions):
    off = np.asarray(table.off, np.float64)
    first = np.asarray(table.first_off, np.float64)
    np.testing.assert_allclose(off.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(first.sum(1), 1.0, atol=1e-6)
    full = positions.sum(1) == 15
    # a side with a checker already off has saved the gammon before rolling
    np.testing.assert_array_equal(first[~full, 0], 1.0)
    assert np.all(first[full, 0] == 0)
    # the first checker cannot come off later than the last (cumulative distributions)
    assert np.all(np.cumsum(first, 1) >= np.cumsum(off, 1) - 1e-6)
    q = 2 / 65535  # the file's 16-bit rounding (gnubg puts the rounding remainder on the mode)
    # one checker on the 4-point: off in one roll unless 2-1 (2 of 36)
    assert off[4, 1] == pytest.approx(34 / 36, abs=q)
    # 15 on the 6-point: the first is off in one roll with a 6, 5-1, 4-2, 3-3 or 2-2: 17 of 36
    assert first[N_IDS - 1, 1] == pytest.approx(17 / 36, abs=q)
    # two-sided: one checker on the 6-point against one on the 1-point wins unless 1-1..2-3,
    # i.e. 27 of 36 rolls bear it off at once; with one on the 1-point the roller always wins
    ts = np.asarray(table.two_sided, np.float64)
    assert ts[6, 1] == pytest.approx(27 / 36, abs=q)
    np.testing.assert_allclose(ts[1, 1:], 1.0)


# --- the race formula --------------------------------------------------------------------------

def reference_race(p_me, g_me, p_opp, g_opp):
    """Plain-Python loops over the number of rolls n (0..31) of each side: the side on roll
    finishes on its n-th roll, before the opponent's n-th."""
    p_me, g_me, p_opp, g_opp = (list(map(float, x)) for x in (p_me, g_me, p_opp, g_opp))
    win = gammon_win = loss = gammon_loss = 0.0
    for i in range(32):
        for j in range(32):
            if i <= j:  # I need i rolls, the opponent j >= i: I finish first
                win += p_me[i] * p_opp[j]
                gammon_win += p_me[i] * g_opp[j]  # its first checker needs >= i rolls
            else:
                loss += p_opp[j] * p_me[i]
            if j > i:  # the opponent finishes on its i-th roll while my first needs j > i
                gammon_loss += p_opp[i] * g_me[j]
    return win, gammon_win, loss, gammon_loss


def test_race_probabilities_match_reference(np_table, positions):
    off, first, _ = np_table
    rng = np.random.default_rng(4)
    # ids with all 15 checkers on points 4..6: their first checker is slow, gammons likely
    full = np.flatnonzero((positions.sum(1) == 15) & (positions[:, :3].sum(1) == 0))
    few = np.arange(1, math.comb(9, 6))  # ids with 1..3 checkers: gammons are likely
    my = np.concatenate([rng.integers(1, N_IDS, 40), rng.choice(few, 40), rng.choice(full, 40)])
    opp = np.concatenate([rng.integers(1, N_IDS, 40), rng.choice(full, 40), rng.choice(few, 40)])
    got = np.stack([np.asarray(x, np.float64) for x in race_probabilities(
        jnp.asarray(off[my]), jnp.asarray(first[my]), jnp.asarray(off[opp]),
        jnp.asarray(first[opp]))], axis=-1)
    want = np.array([reference_race(off[a], first[a], off[b], first[b])
                     for a, b in zip(my, opp)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got[:, 0] + got[:, 2], 1.0, atol=1e-6)
    assert (want[:, 1] > 0.05).sum() > 20 and (want[:, 3] > 0.01).sum() > 20  # both gammons seen
    # one on the 6-point against one on the 1-point, by hand: 27 of 36 rolls win at once
    w, gw, l, gl = reference_race(off[6], first[6], off[1], first[1])
    assert (w, gw, gl) == (pytest.approx(0.75, abs=2e-5), 0.0, 0.0)


def test_bearoff_value_is_the_formula_and_the_two_sided_table(table, np_table):
    off, first, ts = np_table
    rng = np.random.default_rng(5)
    sides = [random_side(rng, n) for n in rng.integers(1, 16, size=300)]
    boards = np.stack([make_board(a, b) for a, b in zip(sides[:150], sides[150:])])
    is_bo, my_id, opp_id = (np.asarray(x) for x in index_fn(boards))
    _, value = value_fn(table, boards)
    value = np.asarray(value, np.float64)
    assert is_bo.all()
    small = (my_id < N_SMALL) & (opp_id < N_SMALL)
    assert 10 < small.sum() < len(small)
    for k, (a, b) in enumerate(zip(my_id, opp_id)):
        w, gw, l, gl = reference_race(off[a], first[a], off[b], first[b])
        if small[k]:  # both sides at most 6 checkers: the exact two-sided winning chance
            w = ts[a, b]
            assert gw == gl == 0.0
        want = [w, gw / w if w > 0 else 0.0, gl / l if l > 0 else 0.0, 0.0]
        np.testing.assert_allclose(value[k], want, rtol=0, atol=2e-6, err_msg=str(boards[k]))


# --- against gnubg -----------------------------------------------------------------------------

def test_bearoff_value_agrees_with_gnubg(table, gnubg_sample):
    """gnubg's cubeless 0-ply evaluation uses its two-sided database (class 4, CLASS_BEAROFF2)
    where both sides have at most 6 checkers and the one-sided one (class 6, CLASS_BEAROFF1)
    in every other bear-off position; bearoff_value does the same and agrees to rounding."""
    boards, outputs, classes = gnubg_sample
    small = (boards[:, :6].sum(1) <= 6) & (-boards[:, 18:24].sum(1) <= 6)
    np.testing.assert_array_equal(classes, np.where(small, 4, 6))
    is_bo, value = value_fn(table, boards)
    assert bool(jnp.all(is_bo))
    # gnubg's float32 sums can exceed 1 by an ulp; the 4-way conversion wants [0, 1]
    want = np.asarray(gnubg_to_value_outputs(np.clip(outputs, 0.0, 1.0)), np.float64)
    np.testing.assert_allclose(np.asarray(value, np.float64), want, rtol=0, atol=GNUBG_ATOL)
    # the sample exercises what it should: both gammon sides, certain and uncertain races
    assert (outputs[:, 1] > 0.05).sum() > 50 and (outputs[:, 3] > 0.01).sum() > 50
    assert small.sum() > 200 and ((outputs[:, 0] > 0.05) & (outputs[:, 0] < 0.95)).sum() > 200


def test_afterstate_value_is_the_flip(table, gnubg_sample):
    """The value of a position for the player who just moved (the opponent on roll) is the flip
    of the opponent's value: checked against gnubg evaluating with the other side on roll."""
    boards, _, _ = gnubg_sample
    ctx = gnubg.evalcontext(0, 0, 1, 0, 0.0)
    outputs = []
    for b in boards:
        opp, me = notation.board_to_gnubg(b)
        outputs.append(gnubg.evaluate((me, opp), gnubg.cubeinfo(), ctx)[:5])  # opponent on roll
    # the 4-way conversion's ratios can pass 1 by an ulp; flip_value wants [0, 1]
    g = np.clip(np.asarray(gnubg_to_value_outputs(np.clip(outputs, 0.0, 1.0))), 0.0, 1.0)
    flipped = jax.jit(jax.vmap(rules.flip))(jnp.asarray(boards))
    _, value = value_fn(table, flipped)
    np.testing.assert_allclose(np.asarray(flip_value(value)), np.asarray(flip_value(g)),
                               rtol=0, atol=GNUBG_ATOL)


def test_flip_value():
    rng = np.random.default_rng(6)
    v = rng.random((50, 4)).astype(np.float32)
    f = np.asarray(flip_value(v))
    np.testing.assert_allclose(np.asarray(flip_value(f)), v, rtol=0, atol=1e-7)
    np.testing.assert_array_equal(f[:, 1:], v[:, [2, 1, 3]])
    np.testing.assert_allclose(np.asarray(outcome_probabilities(f)),
                               np.asarray(outcome_probabilities(v))[:, [3, 4, 5, 0, 1, 2]],
                               atol=1e-6)
    np.testing.assert_allclose(np.asarray(money_equity(f)), -np.asarray(money_equity(v)),
                               atol=1e-6)
    with pytest.raises(ValueError, match="shape"):
        flip_value(np.zeros(5))


def test_one_sided_estimate_against_two_sided_sample(np_table):
    """Where both databases apply, the one-sided winning chance is an approximation of the
    two-sided (optimal play) one: close, but not equal (sampled here; all pairs: slow test)."""
    off, first, ts = np_table
    rng = np.random.default_rng(7)
    a = rng.integers(1, N_SMALL, 4000)
    b = rng.integers(1, N_SMALL, 4000)
    win = np.asarray(race_probabilities(jnp.asarray(off[a]), jnp.asarray(first[a]),
                                        jnp.asarray(off[b]), jnp.asarray(first[b]))[0])
    gap = np.abs(win - ts[a, b])
    assert gap.max() <= ONE_VS_TWO_SIDED_MAX
    assert 1e-4 < gap.mean() < 3e-3 and (gap > 1e-3).mean() > 0.1


@pytest.mark.slow
def test_one_sided_estimate_against_two_sided_all_pairs(np_table):
    """All 923 x 923 pairs with 1..6 checkers a side: the one-sided winning chance is within
    0.0140 of the two-sided one (docs/equity.md quotes the measured max and mean)."""
    off, first, ts = np_table
    ids = np.arange(1, N_SMALL)
    off_j = jnp.asarray(off[:N_SMALL], jnp.float32)  # [924, 32]
    first_j = jnp.asarray(first[:N_SMALL], jnp.float32)

    @jax.jit
    def win_rows(rows, off_j, first_j):  # [R] ids on roll x all 923 opponents -> [R, 923]
        return race_probabilities(off_j[rows][:, None], first_j[rows][:, None],
                                  off_j[1:][None], first_j[1:][None])[0]

    # 71 rows a chunk (923 = 13 x 71): one compiled shape, [71, 923, 33] intermediates
    gaps = [np.abs(np.asarray(win_rows(jnp.asarray(rows), off_j, first_j)) - ts[rows][:, 1:])
            for rows in np.split(ids, 13)]
    gap = np.concatenate(gaps)
    print(f"one-sided vs two-sided win: max {gap.max():.5f} mean {gap.mean():.6f}")
    assert 0.013 < gap.max() <= ONE_VS_TWO_SIDED_MAX


# --- jit, vmap, batches ------------------------------------------------------------------------

def test_jit_vmap_and_batch_shapes(table, gnubg_sample):
    boards, _, _ = gnubg_sample
    mixed = np.concatenate([boards[:60], rules.START_BOARD[None].repeat(4, 0)])  # [64, 28]
    # the same boards one at a time (no batch axis at all) and as one batch without vmap
    singles = [value_fn(table, b) for b in mixed[::7]]
    batched = value_fn(table, mixed)
    f = jax.jit(jax.vmap(bearoff_value, in_axes=(None, 0)))
    is_bo, value = f(table, jnp.asarray(mixed))
    assert is_bo.shape == (64,) and value.shape == (64, 4) and value.dtype == jnp.float32
    assert not bool(jnp.any(is_bo[60:])) and bool(jnp.all(is_bo[:60]))
    np.testing.assert_array_equal(np.asarray(is_bo[::7]), [bool(x[0]) for x in singles])
    np.testing.assert_allclose(np.asarray(value[::7]), np.stack([x[1] for x in singles]),
                               atol=1e-7)
    np.testing.assert_array_equal(np.asarray(is_bo), np.asarray(batched[0]))
    np.testing.assert_allclose(np.asarray(value), np.asarray(batched[1]), atol=1e-7)
    # any leading batch shape, without vmap
    is_bo2, value2 = jax.jit(bearoff_value)(table, jnp.asarray(mixed).reshape(2, 32, 28))
    np.testing.assert_array_equal(np.asarray(is_bo2).reshape(64), np.asarray(is_bo))
    np.testing.assert_allclose(np.asarray(value2).reshape(64, 4), np.asarray(value), atol=1e-7)
    ids = jax.jit(jax.vmap(bearoff_index))(jnp.asarray(mixed))
    assert ids[1].dtype == jnp.int32 and ids[1].shape == (64,)


# --- bad input ---------------------------------------------------------------------------------

def test_bad_input(table):
    good = make_board([3, 3, 3, 2, 2, 2], [15, 0, 0, 0, 0, 0])
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 28\)"):
        bearoff_index(good[:27])
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 28\)"):
        bearoff_value(table, np.int32(3))
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 28\)"):
        jax.jit(bearoff_index)(jnp.zeros((4, 26), jnp.int32))  # shapes are checked under jit
    with pytest.raises(ValueError, match="integer"):
        bearoff_value(table, good.astype(np.float32))
    sixteen = good.copy(); sixteen[0] += 1
    with pytest.raises(ValueError, match="15"):
        bearoff_index(sixteen)
    bad_sign = good.copy(); bad_sign[rules.BAR] = -1; bad_sign[0] += 1  # 15, a negative bar
    with pytest.raises(ValueError, match="15"):
        bearoff_value(table, np.stack([good, bad_sign]))
    with pytest.raises(ValueError, match="BearoffTable"):
        bearoff_value((table.off, table.first_off, table.two_sided), good)
    with pytest.raises(ValueError, match="table.off"):
        bearoff_value(table._replace(off=table.off[:100]), good)


def test_missing_gnubg_nn_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "gnubg_nn", None)  # import gnubg_nn now raises ImportError
    with pytest.raises(ValueError, match=r'needs gnubg-nn: pip install -e "\.\[backgammon\]"'):
        load_bearoff_table.__wrapped__()


def test_damaged_database_is_a_clear_error(monkeypatch, tmp_path):
    import os

    real = bearoff._data_folder()
    for name in ("gnubg_os0.bd", "gnubg_ts0.bd"):
        with open(os.path.join(real, name), "rb") as f:
            (tmp_path / name).write_bytes(f.read())
    monkeypatch.setattr(bearoff, "_data_folder", lambda: str(tmp_path))
    assert load_bearoff_table.__wrapped__().off.shape == (N_IDS, 32)  # the copies load
    os_bytes = (tmp_path / "gnubg_os0.bd").read_bytes()
    (tmp_path / "gnubg_os0.bd").write_bytes(os_bytes.replace(b"-1-1-0", b"-0-1-0", 1))
    with pytest.raises(ValueError, match="header"):
        load_bearoff_table.__wrapped__()
    (tmp_path / "gnubg_os0.bd").write_bytes(os_bytes[:-1000])
    with pytest.raises(ValueError, match="outside"):
        load_bearoff_table.__wrapped__()
    (tmp_path / "gnubg_os0.bd").write_bytes(os_bytes)
    (tmp_path / "gnubg_ts0.bd").unlink()
    with pytest.raises(ValueError, match="cannot read"):
        load_bearoff_table.__wrapped__()
