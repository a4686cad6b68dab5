"""Chess environment: rules, encodings, FEN/UCI boundary, observation and rendering.

The referee is python-chess; perft counts are the published ones (chessprogramming.org).
Random-play agreement tests live in tests/envs/test_chess_random.py.
"""

from __future__ import annotations

import xml.dom.minidom

import chess
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import chess as ec
from envs.chess import core
from envs.chess.perft import perft

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
POS3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
POS4 = "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1"
POS4_MIRRORED = "r2q1rk1/pP1p2pp/Q4n2/bbp1p3/Np6/1B3NBn/pPPP1PPP/R3K2R b KQ - 0 1"
POS5 = "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8"
POS6 = "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10"

# published perft counts, depth 1..
PERFT = {
    ec.START_FEN: [20, 400, 8902, 197281, 4865609],
    KIWIPETE: [48, 2039, 97862, 4085603],
    POS3: [14, 191, 2812, 43238, 674624],
    POS4: [6, 264, 9467, 422333],
    POS4_MIRRORED: [6, 264, 9467, 422333],
    POS5: [44, 1486, 62379, 2103487],
    POS6: [46, 2079, 89890, 3894594],
}

# positions exercising special rules, all compared move for move with python-chess
SPECIAL_FENS = [
    "8/8/8/KPp4r/8/8/8/7k w - c6 0 2",  # en passant would expose the king along the rank
    "8/8/8/1KPp3r/8/8/8/7k w - d6 0 2",  # same with the pawns the other way round
    "8/8/8/8/k2Pp2Q/8/8/3K4 b - d3 0 1",  # Black's ep pawn pinned horizontally
    "8/8/3k4/8/2pP4/8/8/3KB3 b - d3 0 1",  # ep capture of the pawn giving check
    "4k3/8/8/2b5/3pP3/8/8/6K1 b - e3 0 1",  # ep while the capturing pawn is pinned? (no)
    "8/8/8/2k5/3pP3/8/8/4K2B b - e3 0 1",  # ep pawn pinned on the diagonal
    "4k3/8/8/8/8/8/5r2/R3K2R w KQ - 0 1",  # castling through an attacked square
    "4k3/8/8/8/8/8/4r3/R3K2R w KQ - 0 1",  # castling out of check
    "4k3/8/8/8/8/8/8/Rr2K2R w KQ - 0 1",  # queen side: b1 attacked is fine, rook blocks?
    "1r2k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # b1 attacked: O-O-O still legal
    "2r1k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # c1 attacked: no O-O-O
    "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N w - - 0 1",  # promotions with captures
    "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
    "7k/5Q2/8/8/8/8/8/K7 b - - 0 1",  # stalemate
    "R5k1/5ppp/8/8/8/8/8/K7 b - - 0 1",  # checkmate
    "4k3/4q3/8/8/8/8/3PKP2/8 w - - 0 1",  # double-check like pressure, king moves only
    "4k3/8/8/8/1b6/8/3N4/4K3 w - - 0 1",  # pinned knight
    "3k4/8/8/8/8/8/8/r2NK3 w - - 0 1",  # knight pinned on rank
    "8/2p5/3p4/KP5r/1R2Pp1k/8/6P1/8 b - e3 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
]


@pytest.fixture(scope="module")
def env():
    return envs.make("chess")


@pytest.fixture(scope="module")
def step(env):
    return jax.jit(env.step)


def _ref_moves(fen: str) -> set[str]:
    return {m.uci() for m in chess.Board(fen).legal_moves}


# ----------------------------------------------------------------------- perft
@pytest.mark.parametrize(
    "fen,depth",
    [(ec.START_FEN, 4), (KIWIPETE, 3), (POS3, 4), (POS4, 3), (POS4_MIRRORED, 3), (POS5, 3),
     (POS6, 3)],
)
def test_perft(fen, depth):
    board, color, castling, ep, _, _ = ec._parse_fen(fen)
    assert perft(board, color, castling, ep, depth) == PERFT[fen][depth - 1]


@pytest.mark.slow
@pytest.mark.parametrize(
    "fen,depth",
    [(ec.START_FEN, 5), (KIWIPETE, 4), (POS3, 5), (POS4, 4), (POS4_MIRRORED, 4), (POS5, 4),
     (POS6, 4)],
)
def test_perft_deep(fen, depth):
    board, color, castling, ep, _, _ = ec._parse_fen(fen)
    assert perft(board, color, castling, ep, depth, chunk=8192) == PERFT[fen][depth - 1]


# ------------------------------------------------------------------- special rules
@pytest.mark.parametrize("fen", SPECIAL_FENS)
def test_special_positions_match_python_chess(fen):
    ref = chess.Board(fen)
    st = ec.from_fen(fen)
    ours = set(ec.legal_moves_uci(st))
    assert ours == {m.uci() for m in ref.legal_moves}
    assert ec.to_fen(st) == ref.fen()
    if ref.is_checkmate():
        assert ec.termination_reason(st) == "checkmate"
    elif ref.is_stalemate():
        assert ec.termination_reason(st) == "stalemate"
    else:
        assert ec.termination_reason(st) == "ongoing"


@pytest.mark.parametrize(
    "fen",
    [
        "8/8/8/8/8/8/8/K1k5 w - - 0 1",
        "8/8/8/8/8/8/8/KBk5 w - - 0 1",
        "8/8/8/8/8/8/8/KNk5 w - - 0 1",
        "8/8/8/8/8/8/8/KNNk4 w - - 0 1",
        "8/8/8/8/8/8/8/KBBk4 w - - 0 1",
        "8/8/8/8/8/8/8/KB1k1B2 w - - 0 1",
        "8/8/8/8/8/8/8/KB1kb3 w - - 0 1",
        "8/8/8/8/8/8/8/KB1k1b2 w - - 0 1",
        "8/8/8/8/8/8/8/KN1kq3 w - - 0 1",
        "8/8/8/8/8/8/8/KN1kr3 w - - 0 1",
        "8/8/8/8/8/8/p7/K1k5 w - - 0 1",
        "3k4/8/8/8/8/8/8/KQ6 w - - 0 1",
    ],
)
def test_insufficient_material_matches_python_chess(fen):
    st = ec.from_fen(fen)
    ref = chess.Board(fen).is_insufficient_material()
    assert (ec.termination_reason(st) == "insufficient_material") == ref
    assert bool(st.terminated) == ref


def test_mate_rewards_and_absorbing(env, step):
    st = ec.from_fen("rnbqkbnr/pppp1ppp/8/4p3/6P1/5P2/PPPPP2P/RNBQKBNR b KQkq - 0 2")
    st = step(st, jnp.int32(ec.encode_move(st, "d8h4")))
    assert ec.termination_reason(st) == "checkmate"
    assert bool(st.terminated) and not bool(st.truncated)
    np.testing.assert_array_equal(np.asarray(st.rewards), [-1.0, 1.0])  # White (0) is mated
    assert bool(np.all(np.asarray(st.legal_action_mask)))
    after = step(st, jnp.int32(0))
    np.testing.assert_array_equal(np.asarray(after.rewards), [0.0, 0.0])
    assert bool(after.terminated)


def test_black_mated(step):
    st = ec.from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1")
    st = step(st, jnp.int32(ec.encode_move(st, "a1a8")))
    assert ec.termination_reason(st) == "checkmate"
    np.testing.assert_array_equal(np.asarray(st.rewards), [1.0, -1.0])


def test_fifty_move_rule(step):
    fen = "4k3/8/8/8/8/8/8/R3K3 w - - 99 80"
    st = ec.from_fen(fen)
    st = step(st, jnp.int32(ec.encode_move(st, "a1a2")))
    ref = chess.Board(fen)
    ref.push_uci("a1a2")
    assert ref.halfmove_clock == 100 and not ref.is_checkmate()
    assert ec.termination_reason(st) == "fifty_moves"
    np.testing.assert_array_equal(np.asarray(st.rewards), [0.0, 0.0])
    # mate on the 100th half-move stands
    st = ec.from_fen("6k1/5ppp/8/8/8/8/8/R5K1 w - - 99 80")
    st = step(st, jnp.int32(ec.encode_move(st, "a1a8")))
    assert ec.termination_reason(st) == "checkmate"


def test_threefold_repetition_and_planes(env, step):
    st = env.init(jax.random.PRNGKey(0))
    ref = chess.Board()
    seq = ["g1f3", "g8f6", "f3g1", "f6g8"] * 2
    for i, m in enumerate(seq):
        st = step(st, jnp.int32(ec.encode_move(st, m)))
        ref.push_uci(m)
        assert ref.is_repetition(3) == (ec.termination_reason(st) == "threefold_repetition")
        if i == 3:  # start position, second time
            assert int(st.repetition) == 2
            obs = np.asarray(st.observation)
            assert np.all(obs[..., 12] == 1.0) and np.all(obs[..., 13] == 0.0)
    assert ec.termination_reason(st) == "threefold_repetition"
    assert int(st.repetition) == 3


def test_repetition_through_start_position_from_init(env, step):
    # pgx's start hash bug (NOTES.md): repetitions through the start position must count
    st = env.init(jax.random.PRNGKey(0))
    for m in ["b1c3", "b8c6", "c3b1", "c6b8"]:
        st = step(st, jnp.int32(ec.encode_move(st, m)))
    assert int(st.repetition) == 2


def test_ply_cap_truncates():
    env = ec.Chess(max_plies=4)
    step = jax.jit(env.step)
    st = env.init(jax.random.PRNGKey(0))
    for i, m in enumerate(["e2e4", "e7e5", "g1f3", "b8c6"]):
        assert not bool(st.truncated)
        st = step(st, jnp.int32(ec.encode_move(st, m)))
    assert bool(st.truncated) and not bool(st.terminated)
    assert ec.termination_reason(st) == "ply_cap"
    np.testing.assert_array_equal(np.asarray(st.rewards), [0.0, 0.0])
    assert ec.Chess().max_plies == 512


# ---------------------------------------------------------------- action encoding
def test_encoding_formulas():
    st = ec.from_fen(ec.START_FEN)
    assert ec.encode_move(st, "e2e4") == 12 * 56 + 0 * 7 + 1  # N, distance 2
    assert ec.encode_move(st, "g1f3") == 3584 + 6 * 8 + 7  # knight (+2, -1)
    assert ec.encode_move(st, "b1c3") == 3584 + 1 * 8 + 0  # knight (+2, +1)
    black = ec.from_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1")
    # Black's e7e5 seen through the rank mirror is White's e2e4
    assert ec.encode_move(black, "e7e5") == 12 * 56 + 1
    assert ec.encode_move(black, "g8f6") == 3584 + 6 * 8 + 7
    promo = ec.from_fen("3r2k1/4P3/8/8/8/8/8/4K2R w K - 0 1")
    assert ec.encode_move(promo, "e7e8q") == 52 * 56 + 0  # queen promotion: N, distance 1
    assert ec.encode_move(promo, "e7e8n") == 4096 + 52 * 9 + 1 * 3 + 0  # straight, knight
    assert ec.encode_move(promo, "e7d8r") == 4096 + 52 * 9 + 0 * 3 + 2  # left, rook
    assert ec.encode_move(promo, "e7d8b") == 4096 + 52 * 9 + 0 * 3 + 1
    assert ec.encode_move(promo, "e1g1") == 4 * 56 + 2 * 7 + 1  # castling: E, distance 2
    assert ec.encode_move(promo, "h1h8", legal_only=False) == 7 * 56 + 0 * 7 + 6
    bpromo = ec.from_fen("4k3/8/8/8/8/8/3p4/2R3K1 b - - 0 1")
    # d2 -> mirrored d7 (51); capture towards the c-file = file - 1 = "left"
    assert ec.encode_move(bpromo, "d2c1r") == 4096 + 51 * 9 + 0 * 3 + 2
    assert ec.encode_move(bpromo, "d2c1q") == 51 * 56 + 7 * 7 + 0  # NW in the mirrored frame
    assert ec.encode_move(bpromo, "e8d7") == 4 * 56 + 7 * 7 + 0  # e1 -> d2 mirrored: NW
    # every action index decodes to at most one (from, to, promotion) and back
    seen = {}
    for a in range(core.NUM_ACTIONS):
        t = int(core.ACT_TO[a])
        if t < 0:
            continue
        key = (int(core.ACT_FROM[a]), t, int(core.ACT_PROMO[a]))
        assert key not in seen
        seen[key] = a
        assert core.encode_squares(*key) == a
    # queen moves on an empty board 1456, knight moves 336, underpromotion slots 3 * 154
    assert len(seen) == 1456 + 336 + 462


def test_mask_is_exactly_the_encoded_legal_moves():
    rng = np.random.default_rng(0)
    n_pos = 0
    for fen in list(PERFT) + SPECIAL_FENS:
        board = chess.Board(fen)
        for _ in range(30):
            if board.is_game_over():
                break
            st = ec.from_fen(board.fen())
            legal = list(board.legal_moves)
            idx = [ec.encode_move(st, m.uci()) for m in legal]
            assert len(set(idx)) == len(idx)
            assert [ec.decode_action(st, a) for a in idx] == [m.uci() for m in legal]
            assert sorted(idx) == list(np.flatnonzero(np.asarray(st.legal_action_mask)))
            board.push(legal[rng.integers(len(legal))])
            n_pos += 1
    assert n_pos > 300


# --------------------------------------------------------------------- boundary
@pytest.mark.parametrize(
    "fen,msg",
    [
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0", "6 fields"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq", "6 fields"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBKR w KQkq - 0 1", "White king"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQ1BNR w kq - 0 1", "White king"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "side to move"),
        ("4k3/8/8/8/8/8/4R3/4K3 w - - 0 1", "not to move is in check"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN1 w KQkq - 0 1", "castling right"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkqK - 0 1", "castling field"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KXkq - 0 1", "castling field"),
        ("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e4 0 1", "en-passant"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq e3 0 1", "en-passant"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq z9 0 1", "square"),
        ("rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "character"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "8 ranks"),
        ("rnbqkbnr/ppppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "8 squares"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - x 1", "counters"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 0", "counters"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 99999999999", "beyond int32"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 2147483648 1", "beyond int32"),
        ("Pnbqkbnr/pppppppp/8/8/8/8/1PPPPPPP/RNBQKBNR w Kkq - 0 1", "pawn"),
    ],
)
def test_bad_fen_raises(fen, msg):
    with pytest.raises(ValueError, match=msg):
        ec.from_fen(fen)


def test_bad_moves_raise_and_penalise_in_jit(env, step):
    st = env.init(jax.random.PRNGKey(0))
    for bad in ["e2e5", "e2", "e9e4", "e7e5", "e2e4q", "0000", "a1h7"]:
        with pytest.raises(ValueError):
            ec.encode_move(st, bad)
    with pytest.raises(ValueError):
        env.step_uci(st, "e1e2")
    with pytest.raises(ValueError):
        env.check_action(st, 0)  # a1 N 1: blocked by the a2 pawn
    with pytest.raises(ValueError):
        env.check_action(st, 4672)
    with pytest.raises(ValueError):
        ec.decode_action(st, -1)
    promo = ec.from_fen("4k3/P7/8/8/8/8/8/4K3 w - - 0 1")
    with pytest.raises(ValueError, match="promotion"):
        ec.encode_move(promo, "a7a8")
    # inside jit an illegal action ends the game with the protocol's penalty
    bad = step(st, jnp.int32(0))
    assert bool(bad.terminated)
    np.testing.assert_array_equal(np.asarray(bad.rewards), [-1.0, 1.0])
    st2 = env.step_uci(st, "e2e4")
    assert ec.to_fen(st2) == "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    bad = step(st2, jnp.int32(ec.encode_move(st2, "e7e5") + 1))  # e7e4: blocked
    np.testing.assert_array_equal(np.asarray(bad.rewards), [1.0, -1.0])


# ------------------------------------------------------------------ observation
def test_observation_layout(env, step):
    st = env.init(jax.random.PRNGKey(0))
    obs = np.asarray(st.observation)
    assert obs.shape == (8, 8, 122) and obs.dtype == np.float32
    assert env.observation_shape == (8, 8, 122)
    # [row = rank from the observer's side, column = file, channel]
    np.testing.assert_array_equal(obs[1, :, 0], 1.0)  # own pawns on the second rank
    assert obs[0, 4, 5] == 1.0 and obs[7, 4, 11] == 1.0  # own king e1, enemy king e8
    assert obs[7, 3, 10] == 1.0  # enemy queen d8
    assert obs[:, :, :12].sum() == 32
    assert np.all(obs[..., 14] == 1.0)  # White to move
    assert np.all(obs[..., 16] == 1.0)  # both castling rights
    assert np.allclose(obs[..., 15], 0.01) and np.all(obs[..., 17] == 0.0)
    assert np.all(obs[..., 18:] == 0.0)  # no history yet

    st = step(st, jnp.int32(ec.encode_move(st, "e2e4")))
    obs = np.asarray(st.observation)
    # Black to move: ranks mirrored, Black's pieces first
    np.testing.assert_array_equal(obs[1, :, 0], 1.0)  # black pawns on their 7th rank -> row 1
    assert obs[0, 4, 5] == 1.0 and obs[0, 3, 4] == 1.0  # black king e8, queen d8 -> row 0
    assert obs[4, 4, 6] == 1.0 and obs[6, 4, 6] == 0.0  # white e-pawn on e4 -> row 4
    assert np.all(obs[..., 14] == 0.0)
    # history block 0 = the previous position (the start), same perspective
    np.testing.assert_array_equal(obs[..., 18:30], _mirror_start_planes())
    assert np.all(obs[..., 30] == 0.0) and np.all(obs[..., 31:] == 0.0)
    # the other player's view of the same state
    white_view = np.asarray(env.observe(st, jnp.int32(0)))
    assert white_view[3, 4, 0] == 1.0 and np.all(white_view[..., 14] == 1.0)


def _mirror_start_planes():
    st = ec.from_fen("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR b KQkq - 0 1")
    return np.asarray(st.observation)[..., :12]


def test_observation_castling_planes(env):
    st = ec.from_fen("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 12 30")
    obs = np.asarray(st.observation)
    assert np.allclose(obs[..., 16], 0.67)  # White (the observer) keeps only the king side
    assert np.allclose(obs[..., 17], 12 / 50) and np.allclose(obs[..., 15], 0.3)
    assert np.allclose(np.asarray(env.observe(st, jnp.int32(1)))[..., 16], 0.33)
    st = ec.from_fen("r3k2r/8/8/8/8/8/8/R3K2R b - - 70 30")
    obs = np.asarray(st.observation)
    assert np.all(obs[..., 16] == 0.0) and np.all(obs[..., 17] == 1.0)


def test_observation_history_order_and_repetition_markers(env, step):
    st = env.init(jax.random.PRNGKey(0))
    states = [st]
    for m in ["g1f3", "g8f6", "f3g1", "f6g8", "e2e4", "e7e5", "g1f3", "b8c6", "d2d4"]:
        st = step(st, jnp.int32(ec.encode_move(st, m)))
        states.append(st)
    obs = np.asarray(st.observation)  # Black to move after 9 plies
    assert int(states[4].repetition) == 2  # the start position again
    for k in range(8):
        prev = states[8 - k]  # block k = the position k + 1 plies ago
        planes = np.asarray(env.observe(prev, jnp.int32(1)))[..., :12]
        np.testing.assert_array_equal(obs[..., 18 + 13 * k : 30 + 13 * k], planes)
        marker = 1.0 if k == 4 else 0.0
        assert np.all(obs[..., 30 + 13 * k] == marker), k


# -------------------------------------------------------------------- vmap, render
def test_batched_init_and_step(env):
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    st = jax.vmap(env.init)(keys)
    assert st.observation.shape == (3, 8, 8, 122)
    assert st.legal_action_mask.shape == (3, 4672)
    a = jnp.full((3,), ec.encode_move(env.init(keys[0]), "d2d4"), jnp.int32)
    st = jax.jit(jax.vmap(env.step))(st, a)
    assert np.all(np.asarray(st.current_player) == 1)
    assert np.all(np.asarray(st.legal_action_mask).sum(axis=1) == 20)


def test_fen_round_trip_and_render(env):
    for fen in list(PERFT) + SPECIAL_FENS:
        assert ec.to_fen(ec.from_fen(fen)) == chess.Board(fen).fen()
    st = env.init(jax.random.PRNGKey(0))
    text = ec.render_text(st)
    assert text.splitlines()[0] == "8 r n b q k b n r"
    assert text.splitlines()[7] == "1 R N B Q K B N R"
    assert "White to move" in text
    svg = ec.render_svg(st, last_action=None)
    doc = xml.dom.minidom.parseString(svg)
    assert len(doc.getElementsByTagName("rect")) == 64
    assert len(doc.getElementsByTagName("text")) == 32
