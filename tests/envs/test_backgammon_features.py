"""Backgammon's observation encodings (envs/backgammon/features.py): every hand-made unit of
"gnubg-lite" against a plain-Python reference (36 ordered rolls walked checker by checker) on
hand-built and random positions, the classic shot counts of an open board, and the refusals."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs.backgammon import features, notation, rules

# the direct and indirect shots at a blot n points away on an open board, out of 36 (the
# standard table of backgammon books)
OPEN_BOARD_SHOTS = {1: 11, 2: 12, 3: 14, 4: 15, 5: 15, 6: 17, 7: 6, 8: 6, 9: 5, 10: 3, 11: 2,
                    12: 3, 15: 1, 16: 1, 18: 1, 20: 1, 24: 1}


def _sequences(d1, d2):
    return [[d1] * k for k in range(1, 5)] if d1 == d2 else [[d1], [d2], [d1, d2], [d2, d1]]


def _reach(sources, is_target, is_open):
    """Out of 36 ordered rolls, those with which a checker at one of `sources` (path
    positions) lands on a target, every stop before it open."""
    count = 0
    for d1 in range(1, 7):
        for d2 in range(1, 7):
            found = False
            for seq in _sequences(d1, d2):
                for s in sources:
                    pos, ok = s, True
                    for k, d in enumerate(seq):
                        pos += d
                        if pos > 24:
                            ok = False
                            break
                        if k < len(seq) - 1 and not is_open(pos):
                            ok = False
                            break
                    if ok and is_target(pos):
                        found = True
            count += found
    return count / 36


def _ref_side(b):
    mine = [max(b[i], 0) for i in range(24)]
    theirs = [max(-b[i], 0) for i in range(24)]
    bar, opp_bar, off = b[24], -b[25], b[26]
    pips = sum((i + 1) * mine[i] for i in range(24)) + 25 * bar
    blots = sum(1 for m in mine if m == 1)
    # shots: their checkers walk up my indices, path position = index + 1 (0: their bar)
    src = [i + 1 for i in range(24) if theirs[i] > 0] + ([0] if opp_bar > 0 else [])
    shots = _reach(src, lambda p: 1 <= p <= 24 and mine[p - 1] == 1,
                   lambda p: p == 0 or mine[p - 1] < 2)
    occupied = [i for i in range(24) if mine[i] > 0] + ([24] if bar > 0 else [])
    if not occupied:
        escapes = 1.0
    else:
        rear = max(occupied)
        ahead = [i for i in range(24) if theirs[i] >= 2 and rear - 12 <= i < rear]
        if not ahead:
            escapes = 1.0
        else:
            block = min(ahead)
            # my path position p is index 24 - p
            escapes = _reach([24 - rear],
                             lambda p: 0 <= 24 - p < block and theirs[24 - p] < 2,
                             lambda p: theirs[24 - p] < 2)
    prime = best = 0
    for i in range(24):
        prime = prime + 1 if mine[i] >= 2 else 0
        best = max(best, prime)
    home = sum(1 for i in range(6) if mine[i] >= 2)
    progress = (off + sum(mine[:6])) / 15
    return [pips / 100, blots / 15, shots, escapes, min(best, 6) / 6, home / 6, progress]


def _ref_contact(b):
    mine = [i for i in range(24) if b[i] > 0] + ([24] if b[24] > 0 else [])
    theirs = [i for i in range(24) if b[i] < 0] + ([-1] if b[25] < 0 else [])
    return bool(mine) and bool(theirs) and max(mine) > min(theirs)


def _flip(b):
    return [-b[23 - i] for i in range(24)] + [-b[25], -b[24], -b[27], -b[26]]


def _reference(b):
    return _ref_side(b) + _ref_side(_flip(b)) + [float(_ref_contact(b))]


_hand_made = jax.jit(features.hand_made)


def _board(mine=None, theirs=None, bar=0, opp_bar=0):
    """Our board from {index: count} of each side; the rest borne off."""
    b = np.zeros(28, np.int32)
    for i, n in (mine or {}).items():
        b[i] = n
    for i, n in (theirs or {}).items():
        b[i] = -n
    b[24], b[25] = bar, -opp_bar
    b[26] = 15 - sum((mine or {}).values()) - bar
    b[27] = -(15 - sum((theirs or {}).values()) - opp_bar)
    return b


def test_start_position():
    got = np.asarray(_hand_made(jnp.asarray(rules.START_BOARD)))
    np.testing.assert_allclose(got, _reference(list(rules.START_BOARD)), atol=1e-6)
    # 167 pips each, no blots, one home point (the 6), contact
    np.testing.assert_allclose(got[[0, 1, 5, 7, 8, 12, 14]], [1.67, 0, 1 / 6, 1.67, 0, 1 / 6, 1])


@pytest.mark.parametrize("distance", sorted(OPEN_BOARD_SHOTS))
def test_shots_at_a_blot_on_an_open_board_are_the_books_counts(distance):
    # my blot on index 23, one checker of theirs `distance` points below it, nothing between
    b = _board(mine={23: 1, 0: 14}, theirs={23 - distance: 1})
    if distance == 24:  # from their bar, which is 24 points from my index 23
        b = _board(mine={23: 1, 1: 14}, opp_bar=1)
    got = np.asarray(_hand_made(jnp.asarray(b)))
    assert got[2] * 36 == pytest.approx(OPEN_BOARD_SHOTS[distance])
    np.testing.assert_allclose(got, _reference(list(b)), atol=1e-6)


def test_a_made_point_between_blocks_the_indirect_shots_through_it():
    # 6 away with my point made 3 away: of the 17 shots only 3-3 must stop on it; the sixes,
    # 5-1 and 4-2 (either order, a free point between) and 2-2 (stops 2 and 4) remain
    b = _board(mine={9: 1, 6: 2, 0: 12}, theirs={3: 1})
    got = np.asarray(_hand_made(jnp.asarray(b)))
    assert got[2] * 36 == pytest.approx(16)
    np.testing.assert_allclose(got, _reference(list(b)), atol=1e-6)


def test_primes_escapes_home_points_progress_and_a_race():
    # a 6-prime of theirs on indices 15..20 in front of my checker on 22: it cannot escape
    theirs = {i: 2 for i in range(15, 21)}
    theirs[23] = 3
    b = _board(mine={22: 1, 5: 4, 4: 2, 3: 2, 0: 6}, theirs=theirs)
    got = np.asarray(_hand_made(jnp.asarray(b)))
    np.testing.assert_allclose(got, _reference(list(b)), atol=1e-6)
    assert got[3] == 0  # no escape
    assert got[7 + 4] == 1.0  # their prime: 6 long
    assert got[5] == pytest.approx(4 / 6)  # my home points: indices 5, 4, 3, 0
    # a race: no contact, every checker of mine home
    b = _board(mine={0: 5, 3: 5}, theirs={20: 6, 23: 4})
    got = np.asarray(_hand_made(jnp.asarray(b)))
    np.testing.assert_allclose(got, _reference(list(b)), atol=1e-6)
    assert got[14] == 0 and got[6] == 1.0 and got[3] == 1.0


def test_random_positions_equal_the_reference():
    from backgammon_positions import random_gboard

    rng = np.random.default_rng(11)
    boards = [notation.gnubg_to_board(random_gboard(rng)) for _ in range(40)]
    got = np.asarray(jax.vmap(features.hand_made)(jnp.asarray(np.stack(boards))))
    for b, g in zip(boards, got):
        np.testing.assert_allclose(g, _reference([int(x) for x in b]), atol=1e-6,
                                   err_msg=str(list(b)))


def test_env_features_option():
    raw = envs.make("backgammon")
    lite = envs.make("backgammon", features="gnubg-lite")
    key = jax.random.PRNGKey(0)
    s_raw, s_lite = raw.init(key), lite.init(key)
    assert s_raw.observation.shape == (203,) and s_lite.observation.shape == (218,)
    np.testing.assert_array_equal(np.asarray(s_lite.observation[:203]),
                                  np.asarray(s_raw.observation))
    moves = lite.afterstates(s_lite)  # listed bare: observed on demand, in the env's encoding
    first = jax.tree_util.tree_map(lambda x: x[0], moves.states)
    assert moves.states.observation is None and lite.observe(first).shape == (218,)
    with pytest.raises(ValueError, match="unknown features 'gnubg'; choose one of 'raw', "
                                         "'gnubg-lite'"):
        envs.make("backgammon", features="gnubg")


def test_a_run_of_another_encoding_is_refused_in_one_line(tmp_path):
    from turbozero.training.checkpoints import check_network_shapes
    from turbozero.training.config import TrainConfig
    from turbozero.training.loop import Trainer

    def config(env_config):
        return TrainConfig(game="backgammon", env_config=env_config, num_envs=2,
                           collect_steps=2, batch_size=2, replay_capacity=2,
                           network={"hidden_sizes": (8,)}, eval_every=0,
                           eval_opponents=())

    run = str(tmp_path / "run")
    Trainer(config(()), run_dir=run)  # writes the run's marker: a raw-encoded network
    lite = Trainer(config((("features", "gnubg-lite"),)))
    with pytest.raises(ValueError, match=r"other shapes than this config builds "
                       r"\(\['dense_0'\]\['kernel'\] is \[203, 8\] there, \[218, 8\] here\): "
                       r"use the run's own env_config"):
        check_network_shapes(run, lite.state.train_state.params)
    check_network_shapes(run, Trainer(config(())).state.train_state.params)  # the same: fine
