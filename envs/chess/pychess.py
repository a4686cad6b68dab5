"""Actions of `envs.chess` <-> python-chess moves, on a python-chess board (no device state).

PGN records and outside engines (Stockfish) speak python-chess; keeping a `chess.Board` next
to each game on the host and converting only the actions avoids copying device states back
one game at a time. The conversion reads the encoding's tables (`core.ACT_FROM`, `ACT_TO`,
`ACT_PROMO`, docs/chess.md "Action encoding"): squares are a1 = 0 .. h8 = 63 in both, and
Black's moves are in the rank-mirrored frame (`sq ^ 56`).

python-chess (`chess` on PyPI) is an optional dependency: `pip install -e ".[chess]"`.
"""

from __future__ import annotations

import random
from typing import Any

from envs.chess import core

INSTALL = 'pip install -e ".[chess]"  (or: pip install chess)'
# python-chess piece types are PAWN = 1 .. KING = 6 in the env's order P, N, B, R, Q, K
_QUEEN_TYPE_ACTIONS = 3584  # actions below this index are queen-type (slides, pawn steps)
_UNDER_LETTER = ("", "n", "b", "r")  # core.ACT_PROMO: 0 = none or queen, 1..3 = N, B, R


def require_python_chess(what: str) -> Any:
    """The `chess` module, or a ValueError that says how to install it."""
    try:
        import chess
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ValueError(f"{what} needs python-chess: {INSTALL}") from err
    return chess


def action_to_move(board: Any, action: int) -> Any:
    """The `chess.Move` of an env action in the position `board` (a `chess.Board`).

    ValueError if the action is not a legal move there.
    """
    chess = require_python_chess("action_to_move")
    a = int(action)
    if not 0 <= a < core.NUM_ACTIONS:
        raise ValueError(f"action {a} out of range [0, {core.NUM_ACTIONS})")
    frm, to = int(core.ACT_FROM[a]), int(core.ACT_TO[a])
    if to < 0:
        raise ValueError(f"action {a} leaves the board")
    if board.turn == chess.BLACK:
        frm, to = frm ^ 56, to ^ 56
    letter = _UNDER_LETTER[int(core.ACT_PROMO[a])]
    piece = board.piece_at(frm)
    # a queen-type pawn move onto the last rank is the queen promotion (docs/chess.md)
    if (not letter and a < _QUEEN_TYPE_ACTIONS and piece is not None
            and piece.piece_type == chess.PAWN and to // 8 in (0, 7)):
        letter = "q"
    move = chess.Move.from_uci(chess.square_name(frm) + chess.square_name(to) + letter)
    if move not in board.legal_moves:
        raise ValueError(f"action {a} ({move.uci()}) is not legal in {board.fen()}")
    return move


def move_to_action(board: Any, move: Any) -> int:
    """The env action of a legal `chess.Move` in the position `board`."""
    chess = require_python_chess("move_to_action")
    if move not in board.legal_moves:
        raise ValueError(f"{move.uci()} is not legal in {board.fen()}")
    frm, to = move.from_square, move.to_square
    if board.turn == chess.BLACK:
        frm, to = frm ^ 56, to ^ 56
    promo = {None: 0, chess.QUEEN: 0, chess.KNIGHT: 1, chess.BISHOP: 2, chess.ROOK: 3}[
        move.promotion]
    return core.encode_squares(frm, to, promo)


def game_over(board: Any) -> bool:
    """Whether the env would have ended the game here (its draws are automatic, no claim):
    checkmate, stalemate, insufficient material, 50 moves, threefold repetition."""
    return (board.is_checkmate() or board.is_stalemate() or board.is_insufficient_material()
            or board.halfmove_clock >= 100 or board.is_repetition(3))


__all__ = ["INSTALL", "action_to_move", "game_over", "move_to_action", "require_python_chess"]


def random_fens(n: int, seed: int = 0, plies: tuple[int, int] = (1, 120)) -> list[str]:
    """`n` FENs of unfinished positions reached by uniformly random legal moves from the start
    (a random number of plies in `[plies[0], plies[1])`), with python-chess; for tests and
    benchmarks of FEN input."""
    chess = require_python_chess("random_fens")
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        board = chess.Board()
        for _ in range(rng.randrange(*plies)):
            if board.is_game_over():
                break
            board.push(rng.choice(list(board.legal_moves)))
        if not board.is_game_over():
            out.append(board.fen())
    return out
