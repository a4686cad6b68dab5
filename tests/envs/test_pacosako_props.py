"""Paco Ŝako: random-play invariants (hypothesis) and the ML representations.

Spec vectors: pacosako-representation.md; engine vectors: kreibaum/pacosako
lib/src/ai/repr.rs (`lifting_and_en_passant`) and lib/src/ai/flexible_representation.rs
(`initial_board`, `after_one_move`), commit 5ecb8c143b8e0c7f7133523cab56ccf0a49781ab.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

from envs import pacosako as P
from envs.pacosako import rules as R

BATCH, STEPS = 16, 160
FLAGS = list(itertools.product([True, False], repeat=3))

SPEC_PERSPECTIVE = [64, 129, 194, 259, 324, 197, 134, 71, 8, 9, 10, 11, 12, 13, 14, 15, 432,
                    433, 434, 435, 436, 437, 438, 439, 504, 569, 634, 699, 764, 637, 574, 511, 64,
                    1, 1, 1, 1, 0]
SPEC_WHITE_VIEW_LIFT_PROMOTE = SPEC_PERSPECTIVE[:-1] + [0, 1, 0, 0]


@pytest.fixture(scope="module")
def rollout(pacosako_env):
    """jit(keys -> per-step invariants and states) for BATCH random games of STEPS actions."""

    def invariants(s):
        board = s.board.astype(jnp.int32)
        own_hand = jnp.where(s.color == 0, s.hand_piece, s.hand_partner)
        their_hand = jnp.where(s.color == 0, s.hand_partner, s.hand_piece)
        hand = jnp.stack([own_hand, their_hand])  # White's, Black's lifted piece
        count = jnp.sum(board > 0, axis=1) + (hand > 0)
        kings = jnp.sum(board == R.KING, axis=1) + (hand == R.KING)
        king_union = jnp.any((board[0] == R.KING) & (board[1] > 0)) | jnp.any(
            (board[1] == R.KING) & (board[0] > 0))
        in_hand = s.hand_piece > 0
        needs_hand = (s.required == R.PLACE) | (s.required == R.PROMOTE_THEN_PLACE)
        pawn_wrong_row = jnp.any((board == R.PAWN) & (
            jnp.arange(64)[None, :] // 8 == jnp.array([7, 0])[:, None]) & (
            jnp.arange(64)[None, :] != s.promotion))  # own pawns on the last row: promote now
        ok = jnp.stack([
            jnp.all(count == 16),
            jnp.all(kings == 1),
            ~king_union | (s.termination == R.PACO),
            (in_hand == needs_hand) | s.terminated,
            ~pawn_wrong_row,
            jnp.any(s.legal_action_mask),
            (s.hand_partner == 0) | in_hand,
        ])
        return ok

    def one_game(key):
        s = pacosako_env.init(key)

        def body(s, k):
            logits = jnp.where(s.legal_action_mask, 0.0, -jnp.inf)
            a = jax.random.categorical(k, logits)
            s = pacosako_env.step(s, a)
            return s, (invariants(s), s)

        return jax.lax.scan(body, s, jax.random.split(key, STEPS))[1]

    return jax.jit(jax.vmap(one_game))


@pytest.fixture(scope="module")
def sample(rollout):
    return rollout(jax.random.split(jax.random.PRNGKey(7), BATCH))


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1))
def test_random_play_invariants(seed, rollout):
    _check_invariants(*rollout(jax.random.split(jax.random.PRNGKey(seed), BATCH)))


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**31 - 1))
def test_random_play_invariants_many(seed, rollout):
    """10 x 16 more random games of 160 actions."""
    oks, states = rollout(jax.random.split(jax.random.PRNGKey(seed), BATCH))
    _check_invariants(oks, states)


def _check_invariants(oks, states):
    oks = np.asarray(oks)
    names = ["16 pieces a side", "one king a side", "kings united only at paco", "hand matches the required action",
             "no unpromoted pawn on its last row", "a legal action", "a pair only in hand"]
    for i, name in enumerate(names):
        bad = np.argwhere(~oks[..., i])
        assert bad.size == 0, f"invariant '{name}' broken in game/step {bad[:3].tolist()}"
    # the games go somewhere: chains, unions and the end of games do occur
    assert np.any(np.asarray(states.required) == R.PLACE)
    assert np.any(np.asarray(states.board[..., 0, :] > 0) & np.asarray(states.board[..., 1, :] > 0))


def test_spec_examples(pacosako_env, pacosako_start):
    s = pacosako_start
    assert P.index_representation(s, use_perspective=True).tolist() == SPEC_PERSPECTIVE
    # the spec's second example: white view, must lift and must promote (its "MUST_PLACE")
    got = P.index_representation(s, use_perspective=False, with_must_lift=True,
                                 with_must_promote=True)
    assert got.tolist() == SPEC_WHITE_VIEW_LIFT_PROMOTE and got.dtype == jnp.uint32
    t = P.tensor_representation(s, use_perspective=True)
    assert t.shape == (8, 8, 30) and float(t.sum()) == 32 + 4 * 64


def test_engine_vectors(pacosako_env, pacosako_start):
    step = jax.jit(pacosako_env.step)
    s = step(pacosako_start, P.action_from_string(pacosako_start, "lift e2"))
    assert P.index_representation(s).tolist() == [
        64, 129, 194, 259, 324, 197, 134, 71, 8, 9, 10, 11, 13, 14, 15, 432, 433, 434, 435, 436,
        437, 438, 439, 504, 569, 634, 699, 764, 637, 574, 511, 780, 64, 1, 1, 1, 1, 1]
    s = step(s, P.action_from_string(s, "place e4"))
    assert P.index_representation(s).tolist() == [
        504, 569, 634, 699, 764, 637, 574, 511, 432, 433, 434, 435, 437, 438, 439, 420, 8, 9, 10,
        11, 12, 13, 14, 15, 64, 129, 194, 259, 324, 197, 134, 71, 1580, 1, 1, 1, 1, 1]
    s = pacosako_start
    s = step(s, P.action_from_string(s, "lift c2"))
    s = step(s, P.action_from_string(s, "place c4"))
    got = P.index_representation(s, use_perspective=False, with_must_lift=True,
                                 with_must_promote=True)
    assert got.tolist() == [
        64, 129, 194, 259, 324, 197, 134, 71, 8, 9, 11, 12, 13, 14, 15, 26, 432, 433, 434, 435,
        436, 437, 438, 439, 504, 569, 634, 699, 764, 637, 574, 511, 1554, 1, 1, 1, 1, 1, 1, 0, 1]


@pytest.mark.parametrize("flags", FLAGS, ids=lambda f: "".join("PLM"[i] if v else "-" for i, v in enumerate(f)))
def test_expansion_equals_direct_tensor(flags, sample):
    persp, lift, promo = flags
    _, states = sample
    kw = dict(use_perspective=persp, with_must_lift=lift, with_must_promote=promo)
    # every 8th step of every game: a batch of reachable positions (chains included)
    sub = jax.tree_util.tree_map(lambda x: x[:, ::8].reshape((-1,) + x.shape[2:]), states)
    idx = P.index_representation(sub, **kw)
    direct = P.tensor_representation(sub, **kw)
    expanded = P.expand_index_representation(idx, **kw)
    assert idx.dtype == jnp.uint32 and idx.shape[-1] == 38 + (not persp) + lift + promo
    np.testing.assert_array_equal(np.asarray(expanded), np.asarray(direct))
    # one state at a time gives the same
    one = jax.tree_util.tree_map(lambda x: x[3], sub)
    np.testing.assert_array_equal(np.asarray(P.expand_index_representation(
        P.index_representation(one, **kw), **kw)), np.asarray(direct[3]))
    # and inside jit
    f = jax.jit(lambda i: P.expand_index_representation(i, **kw))
    np.testing.assert_array_equal(np.asarray(f(idx)), np.asarray(direct))


def test_observation_is_the_default_representation(sample, pacosako_env):
    _, states = sample
    s = jax.tree_util.tree_map(lambda x: x[0, 41], states)
    np.testing.assert_array_equal(
        np.asarray(s.observation),
        np.asarray(P.tensor_representation(s, use_perspective=True, with_must_lift=True,
                                           with_must_promote=True)))


def test_observe_other_player(sample, pacosako_env):
    _, states = sample
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), states)
    i = int(np.flatnonzero(np.asarray(flat.color) == 0)[5])
    s = jax.tree_util.tree_map(lambda x: x[i], flat)
    white_view = P.tensor_representation(s, use_perspective=True, with_must_lift=True,
                                         with_must_promote=True)
    np.testing.assert_array_equal(np.asarray(pacosako_env.observe(s, 0)), np.asarray(white_view))
    black_view = np.asarray(pacosako_env.observe(s, 1))
    swap = np.r_[6:12, 0:6, 18:24, 12:18, 24, 27, 28, 25, 26, 29, 30, 31]
    np.testing.assert_array_equal(black_view, np.asarray(white_view)[::-1, :, swap])


def test_perspective_flip(sample):
    """With perspective, Black's view is White's view with ranks mirrored and sides swapped."""
    _, states = sample
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), states)
    black = np.flatnonzero(np.asarray(flat.color) == 1)[:10]
    s = jax.tree_util.tree_map(lambda x: x[black], flat)
    mine = np.asarray(P.tensor_representation(s, use_perspective=True))
    white = np.asarray(P.tensor_representation(s, use_perspective=False))
    swap = np.r_[6:12, 0:6, 18:24, 12:18, 24, 27, 28, 25, 26]
    np.testing.assert_array_equal(mine[..., :29], white[:, ::-1, :, swap])


def test_bad_index_input(pacosako_start):
    good = np.array(SPEC_PERSPECTIVE, np.uint32)
    with pytest.raises(ValueError):
        P.expand_index_representation(good[:-1])
    with pytest.raises(ValueError):
        P.expand_index_representation(good, with_must_lift=True)
    bad = good.copy()
    bad[5] = 1600
    with pytest.raises(ValueError):
        P.expand_index_representation(bad)
    bad = good.copy()
    bad[34] = 2
    with pytest.raises(ValueError):
        P.expand_index_representation(bad)
    bad = good.copy()
    bad[-1] = 101
    with pytest.raises(ValueError):
        P.expand_index_representation(bad)
    with pytest.raises(ValueError):
        P.expand_index_representation(good.astype(np.float32))
    with pytest.raises(ValueError):
        P.index_representation(pacosako_start, use_perspective=1)
