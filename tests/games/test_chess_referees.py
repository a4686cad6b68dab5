"""Chess referees: the 1-ply material-greedy player against a python-chess reference, and the
Stockfish match (skipped when no Stockfish binary is installed)."""

import io
import random

import chess
import chess.engine
import chess.pgn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from envs import chess as ec
from envs.chess import material as mat
from envs.chess.encode import states_from_fens
from envs.chess.pgn import games_to_pgn, parse_comment
from envs.chess.pychess import action_to_move
from turbozero.games.chess import referees as cr
from turbozero.games import game_spec
from turbozero.search import SearchResult, random_actions

VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9,
          chess.KING: 0}


@pytest.fixture(scope="module")
def env():
    return envs.make("chess")


BATCH = 8  # every greedy call below runs on this batch: one compilation for the module


@pytest.fixture(scope="module")
def choose(env):
    """The material-greedy decision for a batch of BATCH states, jitted once for the module."""

    def run(states, key):
        keys = jax.random.split(key, states.current_player.shape[0])
        return jax.vmap(lambda s, k: mat.material_greedy_choice(env, s, k))(states, keys)

    return jax.jit(run)


def reference_score(board: chess.Board, move: chess.Move) -> int:
    """Plain-Python material-greedy score with python-chess (the module docstring's rule)."""
    mover = board.turn
    board.push(move)
    try:
        if board.is_checkmate():
            return mat.MATE_SCORE
        if (board.is_stalemate() or board.is_insufficient_material()
                or board.halfmove_clock >= 100 or board.is_repetition(3)):
            return 0
        return sum(VALUES[p.piece_type] * (1 if p.color == mover else -1)
                   for p in board.piece_map().values())
    finally:
        board.pop()


def random_positions(n: int, seed: int) -> list[str]:
    """FENs from random games at various plies (lopsided material, many captures)."""
    rng = random.Random(seed)
    fens = []
    while len(fens) < n:
        board = chess.Board()
        for _ in range(rng.randrange(6, 90)):
            if board.is_game_over():
                break
            board.push(rng.choice(list(board.legal_moves)))
        if not board.is_game_over():
            fens.append(board.fen())
    return fens


def picks(choose, fen, seed=0) -> list[str]:
    """The greedy's move in `fen` under BATCH independent tie-break keys."""
    states = states_from_fens([fen] * BATCH)
    actions = np.asarray(choose(states, jax.random.PRNGKey(seed)).action)
    board = chess.Board(fen)
    return [action_to_move(board, int(a)).uci() for a in actions]


def test_material_is_the_registered_opponent():
    spec = {o.name: o for o in game_spec("chess").opponents}
    assert spec["material"].policy is mat.material_policy


def test_material_scores_equal_python_chess(choose):
    fens = random_positions(BATCH, seed=3)
    out = jax.device_get(choose(states_from_fens(fens), jax.random.PRNGKey(0)))
    for g, fen in enumerate(fens):
        board = chess.Board(fen)
        ours = {action_to_move(board, int(a)).uci(): int(v)
                for a, v in zip(out.candidates.actions[g], out.scores[g])
                if v != mat.NO_MOVE_SCORE}
        ref = {m.uci(): reference_score(board, m) for m in board.legal_moves}
        assert ours == ref, fen
        chosen = action_to_move(board, int(out.action[g]))
        assert ref[chosen.uci()] == max(ref.values()), fen


def test_material_captures_hanging_queen(choose):
    # White: Bc1xg5 wins the queen; Black (mirrored): Bc8xg4
    for fen, want in (("rnb1kbnr/pppp1ppp/8/4p1q1/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 1", "c1g5"),
                      ("rnbqkbnr/ppp1pppp/8/3p4/4P1Q1/8/PPPP1PPP/RNB1KBNR b KQkq - 0 1", "c8g4")):
        assert picks(choose, fen) == [want] * BATCH


def test_material_prefers_mate_to_a_queen(choose):
    # White can take the queen (Nf3xh4, +9) or mate (Re1-e8); Black: the mirror image
    for fen, want in (("6k1/5ppp/8/8/7q/5N2/5PPP/4R1K1 w - - 0 1", "e1e8"),
                      ("4r1k1/5ppp/5n2/7Q/8/8/5PPP/6K1 b - - 0 1", "e8e1")):
        assert picks(choose, fen) == [want] * BATCH


def test_material_breaks_ties_at_random(choose):
    # at the start every move keeps the balance at 0: the key chooses among all 20
    seen = set(picks(choose, ec.START_FEN, 0)) | set(picks(choose, ec.START_FEN, 1))
    assert len(seen) >= 6, seen


def test_material_beats_random(env, choose):
    """BATCH games against uniform random, seats alternating (as evaluation.play_match)."""
    init = jax.jit(jax.vmap(env.init))
    step = jax.jit(jax.vmap(env.step))
    rand = jax.jit(random_actions)
    key = jax.random.PRNGKey(0)
    states = init(jax.random.split(key, BATCH))
    seat = np.arange(BATCH) % 2
    ret = np.zeros(BATCH)
    for _ in range(200):
        if bool(jnp.all(states.terminated | states.truncated)):
            break
        key, kg, kr = jax.random.split(key, 3)
        greedy_moves = np.asarray(choose(states, kg).action)
        random_moves = np.asarray(rand(states, kr))
        actions = np.where(np.asarray(states.current_player) == seat, greedy_moves, random_moves)
        states = step(states, jnp.asarray(actions, jnp.int32))
        ret += np.asarray(states.rewards)[np.arange(BATCH), seat]
    assert (ret >= 0).all(), ret
    assert (ret > 0).sum() >= BATCH // 2, ret


# ----------------------------------------------------------------------------- Stockfish
def test_stockfish_settings_are_checked():
    with pytest.raises(ValueError, match="skill_level"):
        cr.StockfishSettings(skill_level=21)
    with pytest.raises(ValueError, match="depth"):
        cr.StockfishSettings(depth=0)
    with pytest.raises(ValueError, match="path"):
        cr.find_stockfish("/nonexistent/stockfish")


def test_missing_stockfish_says_how_to_install(monkeypatch):
    monkeypatch.setattr(cr.shutil, "which", lambda name: None)
    monkeypatch.setattr(cr, "DEBIAN_STOCKFISH", "/nonexistent/stockfish")
    with pytest.raises(ValueError, match="apt-get install stockfish"):
        cr.find_stockfish()


def test_stockfish_registered_for_chess():
    spec = {o.name: o for o in game_spec("chess").opponents}
    assert spec["stockfish"].match is cr.stockfish_match
    assert spec["stockfish"].module == "chess"
    assert "apt-get install stockfish" in spec["stockfish"].install


def _have_stockfish() -> bool:
    try:
        cr.find_stockfish()
    except ValueError:
        return False
    return True


needs_stockfish = pytest.mark.skipif(not _have_stockfish(),
                                     reason="no stockfish binary: " + cr.STOCKFISH_INSTALL)


@needs_stockfish
def test_stockfish_weakest_settings_take_the_queen():
    # even at skill 0, depth 1 it does not leave a free queen (the settings reach the engine)
    engine = cr.open_stockfish()
    try:
        board = chess.Board("rnb1kbnr/pppp1ppp/8/4p1q1/3P4/8/PPP1PPPP/RNBQKBNR w KQkq - 0 1")
        move = engine.play(board, chess.engine.Limit(depth=1)).move
        assert move.uci() == "c1g5"
    finally:
        engine.quit()


def annotated_random(variables, states, key):
    """Random moves dressed as a search output: root value 0.25, visits spread evenly."""
    del variables
    legal = states.legal_action_mask.astype(jnp.float32)
    value = jnp.full(states.step_count.shape, 0.25)
    return SearchResult(action=random_actions(states, key),
                        policy=legal / legal.sum(-1, keepdims=True), root_value=value,
                        root_values=jnp.stack([value, -value], -1))


@needs_stockfish
def test_random_loses_to_stockfish(env):
    summary = cr.play_against_stockfish(
        env, lambda v, s, k: random_actions(s, k), None, jax.random.PRNGKey(0), 2, 300)
    assert summary["games"] == 2 and summary["finished"] == 2
    assert summary["losses"] == 2, summary


@needs_stockfish
def test_stockfish_games_as_pgn(env):
    match = cr.play_stockfish_match(env, annotated_random, None, jax.random.PRNGKey(1), 2, 300,
                                    agent_name="random")
    assert match.summary["losses"] == 2, match.summary
    text = games_to_pgn(match.records)
    stream = io.StringIO(text)
    for g, rec in enumerate(match.records):
        game = chess.pgn.read_game(stream)
        agent_white = g % 2 == 0  # seats alternate as in evaluation.play_match
        assert game.headers["White" if agent_white else "Black"] == "random"
        assert game.headers["Result"] == ("0-1" if agent_white else "1-0")
        assert game.headers["Termination"] == "checkmate" and game.end().board().is_checkmate()
        assert [m.uci() for m in game.mainline_moves()] == list(rec.moves)
        for ply, node in enumerate(game.mainline()):
            agent_move = (ply % 2 == 0) == agent_white
            note = parse_comment(node.comment)
            if agent_move:
                board = node.parent.board()
                assert note == pytest.approx((0.25, round(1 / board.legal_moves.count(), 2)))
            else:
                assert note is None


def test_stockfish_refuses_other_games():
    with pytest.raises(ValueError, match="only play chess"):
        cr.play_against_stockfish(envs.make("pgx/tic_tac_toe"), None, None,
                                  jax.random.PRNGKey(0), 2, 10)


@pytest.mark.slow
def test_registered_material_beats_random_in_play_match(env):
    """The registered opponent's policy, as the trainer plays it (evaluation.play_match):
    16 games against random, seats alternating."""
    from turbozero.training.evaluation import match_summary, play_match

    policy = {o.name: o for o in game_spec("chess").opponents}["material"].policy(env)
    rand = lambda v, s, k: random_actions(s, k)  # noqa: E731
    summary = match_summary(jax.jit(
        lambda key: play_match(env, policy, rand, None, None, key, 16, 300))(
            jax.random.PRNGKey(1)))
    assert summary["losses"] == 0, summary
    assert summary["wins"] >= 12, summary
