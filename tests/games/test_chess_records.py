"""Chess records: PGN written with python-chess and read back by it, games recorded from two
policies with the search's notes, action <-> move conversion, and encode_batch (spec §2.4)."""

import io
import re

import chess
import chess.pgn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import chess as ec
from envs.chess.encode import encode_batch, states_from_fens
from envs.chess.pgn import (GameRecord, game_to_pgn, games_to_pgn, move_comment, parse_comment,
                                 record_games)
from envs.chess.pychess import action_to_move, move_to_action, random_fens
from turbozero.search import SearchResult, random_actions

SCHOLAR = ("e2e4", "e7e5", "f1c4", "b8c6", "d1h5", "g8f6", "h5f7")
# positions with castling both ways, en passant, promotions and underpromotions for each colour
SPECIAL_FENS = [
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R b KQkq - 0 1",
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",
    "4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 2",
    "1n2k3/P7/8/8/8/8/7p/4K1N1 w - - 0 1",
    "1n2k3/P7/8/8/8/8/7p/4K1N1 b - - 0 1",
]


@pytest.fixture(scope="module")
def env():
    return envs.make("chess")


# ------------------------------------------------------------------------------- PGN
def read_all(text):
    stream, games = io.StringIO(text), []
    while (game := chess.pgn.read_game(stream)) is not None:
        games.append(game)
    return games


def test_pgn_round_trip_with_comments():
    values = (0.12, -0.3, 0.5, -0.05, 0.91, -0.99, 1.0)
    shares = (0.45, 0.2, 1.0, 0.333, 0.6, 0.01, 0.875)
    rec = GameRecord(SCHOLAR, "1-0", values=values, shares=shares,
                     headers=(("White", "agent"), ("Black", "random")))
    text = games_to_pgn([rec, GameRecord(SCHOLAR[:3], "*")])
    assert "Qxf7#" in text and "{ v=+0.12 p=0.45 }" in text
    first, second = read_all(text)
    assert first.headers["Result"] == "1-0" and first.headers["White"] == "agent"
    assert [m.uci() for m in first.mainline_moves()] == list(SCHOLAR)
    assert first.end().board().is_checkmate()
    notes = [parse_comment(node.comment) for node in first.mainline()]
    assert notes == [(round(v, 2), round(p, 2)) for v, p in zip(values, shares)]
    assert second.headers["Result"] == "*"
    assert [m.uci() for m in second.mainline_moves()] == list(SCHOLAR[:3])
    assert all(node.comment == "" for node in second.mainline())


def test_pgn_from_a_position():
    fen = "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2"
    (game,) = read_all(games_to_pgn([GameRecord(("e5d6", "e8d7"), "*", start_fen=fen)]))
    assert game.headers["FEN"] == fen and game.board().fen() == fen
    assert [m.uci() for m in game.mainline_moves()] == ["e5d6", "e8d7"]


def test_pgn_rejects_bad_records():
    with pytest.raises(ValueError, match="move 2 'e2e4' is not legal"):
        games_to_pgn([GameRecord(("e2e4", "e2e4"), "*")])
    with pytest.raises(ValueError, match="result"):
        GameRecord(("e2e4",), "1-1")
    with pytest.raises(ValueError, match="values has 2 entries for 1 moves"):
        GameRecord(("e2e4",), "*", values=(0.1, 0.2), shares=(0.5,))
    assert move_comment(None, 0.5) == "" and move_comment(float("nan"), 0.5) == ""


# ------------------------------------------------------------------------- recording
def fixed_moves(ucis_by_ply):
    """A policy playing a fixed list of actions, one per ply (`step_count` indexes it)."""
    table = jnp.asarray(ucis_by_ply, jnp.int32)

    def policy(variables, states, key):
        del variables, key
        return table[jnp.minimum(states.step_count, table.shape[0] - 1)]

    return policy


def test_record_a_finished_game(env):
    # fool's mate: both games end at ply 4, Black wins; the loop stops there, not at max_steps
    board, actions = chess.Board(), []
    for uci in ("f2f3", "e7e5", "g2g4", "d8h4"):
        move = chess.Move.from_uci(uci)
        actions.append(move_to_action(board, move))
        board.push(move)
    policy = fixed_moves(actions)
    records = record_games(env, policy, policy, jax.random.PRNGKey(0), 2, 50,
                           names=("a", "b"))
    for rec in records:
        assert rec.moves == ("f2f3", "e7e5", "g2g4", "d8h4") and rec.result == "0-1"
        assert dict(rec.headers)["Termination"] == "checkmate"
        assert rec.values is None
    (game, _) = read_all(games_to_pgn(records))
    assert game.headers["Result"] == "0-1" and game.end().board().is_checkmate()


def fake_search(variables, states, key):
    """A search-shaped output: a random legal move, visits spread evenly over the legal moves,
    root value (ply % 7) / 10 - 0.3, so each move's notes are known to the test."""
    del variables
    legal = states.legal_action_mask.astype(jnp.float32)
    value = (states.step_count % 7) / 10.0 - 0.3
    return SearchResult(action=random_actions(states, key),
                        policy=legal / legal.sum(-1, keepdims=True), root_value=value,
                        root_values=jnp.stack([value, -value], -1))


def test_record_games_with_search_notes(env):
    rand = lambda v, s, k: random_actions(s, k)  # noqa: E731
    records = record_games(env, fake_search, rand, jax.random.PRNGKey(3), 2, 30,
                           names=("search", "random"))
    assert len(records) == 2 and records[0].moves != records[1].moves
    games = read_all(games_to_pgn(records))
    step_jit = jax.jit(env.step)
    for rec, game in zip(records, games):
        assert rec.result == "*" and len(rec.moves) == 30  # random play lasts beyond 30 plies
        assert game.headers["White"] == "search" and game.headers["Result"] == "*"
        board = chess.Board()
        state = env.init(jax.random.PRNGKey(0))
        for ply, node in enumerate(game.mainline()):
            if ply % 2 == 0:  # White, the search: value and visit share of the move
                want = (round((ply % 7) / 10 - 0.3, 2), round(1 / board.legal_moves.count(), 2))
                assert parse_comment(node.comment) == pytest.approx(want, abs=1e-9)
            else:
                assert node.comment == ""
            # the same move replayed in the env (its own UCI encoder) gives the same position
            state = step_jit(state, jnp.int32(ec.encode_move(state, node.move.uci())))
            board.push(node.move)
            assert ec.to_fen(state) == board.fen()
        assert [m.uci() for m in game.mainline_moves()] == list(rec.moves)


def test_record_games_checks_its_settings(env):
    rand = lambda v, s, k: random_actions(s, k)  # noqa: E731
    with pytest.raises(ValueError, match="num_games"):
        record_games(env, rand, rand, jax.random.PRNGKey(0), 0, 10)
    with pytest.raises(ValueError, match="max_steps"):
        record_games(env, rand, rand, jax.random.PRNGKey(0), 1, 0)
    with pytest.raises(ValueError, match="chess"):
        record_games(envs.make("pgx/tic_tac_toe"), rand, rand, jax.random.PRNGKey(0), 1, 5)


# ---------------------------------------------------------------- actions <-> moves
def test_actions_and_moves_agree_with_the_env():
    fens = SPECIAL_FENS + random_fens(10, seed=11)
    for fen in fens:
        state = ec.from_fen(fen)
        board = chess.Board(fen)
        actions = np.flatnonzero(np.asarray(state.legal_action_mask))
        moves = [action_to_move(board, int(a)) for a in actions]
        assert {m.uci() for m in moves} == {m.uci() for m in board.legal_moves}, fen
        for a, m in zip(actions, moves):
            assert m.uci() == ec.decode_action(state, int(a))
            assert move_to_action(board, m) == a
    board = chess.Board()
    with pytest.raises(ValueError, match="not legal"):
        action_to_move(board, ec.encode_move(ec.from_fen(ec.START_FEN), "e2e4", legal_only=False)
                       + 2)  # e2-e6: not a legal move
    with pytest.raises(ValueError, match="not legal"):
        move_to_action(board, chess.Move.from_uci("e2e5"))


# ------------------------------------------------------------------ encode_batch (§2.4)
def test_encode_batch_equals_one_fen_at_a_time():
    fens = [ec.START_FEN] + SPECIAL_FENS + random_fens(1, seed=5)  # 8 positions
    obs = np.asarray(encode_batch(fens))
    assert obs.shape == (8, 8, 8, 122) and obs.dtype == np.float32
    for i, fen in enumerate(fens):
        np.testing.assert_array_equal(obs[i], np.asarray(ec.from_fen(fen).observation), fen)
    # fewer FENs than the compiled bucket: padded rows are cut off
    assert encode_batch(fens[:5]).shape == (5, 8, 8, 122)
    np.testing.assert_array_equal(np.asarray(encode_batch(fens[:5])), obs[:5])


def test_encode_batch_equals_the_position_reached_by_moves(env):
    # castling, en passant, a capture and a quiet king move, as White and Black
    line = ("e2e4", "g8f6", "e4e5", "d7d5", "e5d6", "e7d6", "g1f3", "f8e7", "f1c4", "e8g8",
            "e1g1", "b8c6")
    state = env.init(jax.random.PRNGKey(0))
    states, fens = [], []
    for uci in line:
        state = env.step_uci(state, uci)
        states.append(state)
        fens.append(ec.to_fen(state))
    obs = np.asarray(encode_batch(fens[:8]))  # one bucket of 8
    for i, st in enumerate(states[:8]):
        played = np.asarray(st.observation)
        # the present (pieces, repetitions, colour, counters, castling) is the same; a FEN has
        # no past, so its history planes are zero where the played game's hold earlier boards
        np.testing.assert_array_equal(obs[i][..., :18], played[..., :18], fens[i])
        assert not obs[i][..., 18:].any()
        assert played[..., 18:30].any()


def test_encode_batch_errors():
    with pytest.raises(ValueError, match="single string"):
        encode_batch(ec.START_FEN)
    with pytest.raises(ValueError, match="at least one"):
        encode_batch([])
    with pytest.raises(ValueError, match="FEN 1 .*8 ranks"):
        encode_batch([ec.START_FEN, "8/8 w - - 0 1"])
    states = states_from_fens(SPECIAL_FENS[:2] * 4)
    assert states.current_player.tolist() == [0, 1] * 4


@pytest.mark.slow
def test_trainer_games_to_pgn():
    """The tiny chess trainer's search against random, recorded: every agent move carries its
    searched value and visit share, python-chess reads the games back."""
    from turbozero.games.chess.records import record_trainer_games
    from turbozero.presets import get_preset
    from turbozero.training import Trainer

    trainer = Trainer(get_preset("chess", "tiny", eval_games=2))
    records = record_trainer_games(trainer, "random", num_games=2, max_steps=6)
    games = read_all(games_to_pgn(records))
    assert [g.headers["White"] for g in games] == ["agent", "random"]
    for rec, game in zip(records, games):
        assert [m.uci() for m in game.mainline_moves()] == list(rec.moves) and len(rec.moves) == 6
        agent_plies = range(0 if game.headers["White"] == "agent" else 1, 6, 2)
        for ply, node in enumerate(game.mainline()):
            note = parse_comment(node.comment)
            if ply in agent_plies:
                value, share = note
                assert -1.0 <= value <= 1.0 and 0.0 < share <= 1.0
            else:
                assert note is None
    with pytest.raises(ValueError, match="no jittable policy"):
        record_trainer_games(trainer, "stockfish", num_games=1, max_steps=2)


FOOLS_MATE = ("f2f3", "e7e5", "g2g4", "d8h4")  # Black mates


@pytest.mark.parametrize("result", ["1-0", "1/2-1/2", "*"])
def test_pgn_refuses_a_result_that_contradicts_the_final_position(result):
    """Issue 32: a record of a checkmate scored for the mated side (or as a draw, or as
    unfinished) was written to PGN as it came."""
    with pytest.raises(ValueError, match=rf"result {re.escape(result)} contradicts the final "
                                         r"position \(checkmate, 0-1\)") as err:
        game_to_pgn(GameRecord(FOOLS_MATE, result))
    assert "\n" not in str(err.value)
    assert "Qh4#" in game_to_pgn(GameRecord(FOOLS_MATE, "0-1"))


def test_pgn_refuses_a_win_at_a_stalemate_or_a_dead_draw():
    stalemate = "7k/4Q3/6K1/8/8/8/8/8 w - - 0 1"  # Qf7 leaves Black no move, not in check
    with pytest.raises(ValueError, match=r"contradicts the final position \(stalemate"):
        game_to_pgn(GameRecord(("e7f7",), "1-0", start_fen=stalemate))
    game_to_pgn(GameRecord(("e7f7",), "1/2-1/2", start_fen=stalemate))
    bare_kings = "8/8/8/4k3/8/3qK3/8/8 w - - 0 1"  # Kxd3: king against king
    with pytest.raises(ValueError, match=r"\(insufficient_material, 1/2-1/2\)"):
        game_to_pgn(GameRecord(("e3d3",), "0-1", start_fen=bare_kings))
    # a recorder that does not apply the dead-draw rule may cut the game later: "*" stays
    game_to_pgn(GameRecord(("e3d3",), "*", start_fen=bare_kings))
    # a position not over by the rules takes any result (a resignation, an adjudication)
    game_to_pgn(GameRecord(SCHOLAR[:3], "0-1"))


@pytest.mark.parametrize("values,shares,msg", [
    ((0.1, float("inf")), (0.5, 0.5), r"GameRecord.values\[1\] \(move 2\) must be a finite"),
    ((0.1, -float("inf")), (0.5, 0.5), r"values\[1\]"),
    ((0.1, 0.2), (0.5, float("inf")), r"shares\[1\] \(move 2\) must be a number in \[0, 1\]"),
    ((0.1, 0.2), (1.5, 0.5), r"shares\[0\]"),
])
def test_non_finite_notes_are_refused_not_written(values, shares, msg):
    """`v=+inf` was written into the move comments."""
    with pytest.raises(ValueError, match=msg):
        GameRecord(("e2e4", "e7e5"), "*", values=values, shares=shares)
    with pytest.raises(ValueError, match="move_comment"):
        move_comment(float("inf"), 0.5)
    # NaN and None stay "no note": nothing is written for that move
    text = games_to_pgn([GameRecord(("e2e4", "e7e5"), "*", values=(float("nan"), 0.25),
                                    shares=(0.5, 0.75))])
    assert "{ v=+0.25 p=0.75 }" in text and text.count("v=") == 1
