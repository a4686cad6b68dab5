"""Text notation for Paco Ŝako positions (plain Python, used at the boundary only).

The notation is the engine's X-FEN extension (kreibaum/pacosako `lib/src/fen.rs`), e.g.

    rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -

fields: board (rank 8 first; upper case White, lower case Black, letters a-z/A-Z other than the
piece letters are unions), an optional lifted piece `^<square><char>` glued to the board, side to
move, half-moves without progress, castling (`A`/`H` White queen/king side, `a`/`h` Black, or
`-`), en passant square or `-`, and a final `-` (the unused "union move" field). One field is
ours: a pending promotion, appended as ` promote:<square>:<lift|place|finish>`.
"""

from __future__ import annotations

import re

import numpy as np

from envs.pacosako import rules as R

LETTERS = "prnbqk"  # piece codes 1..6
# union letters: lower case = (black piece, white piece), upper case swaps the colours
_UNION = {
    "a": (1, 1), "c": (1, 2), "d": (1, 3), "e": (1, 4), "f": (1, 5), "g": (1, 6),
    "h": (2, 2), "i": (2, 3), "j": (2, 4), "l": (2, 5), "m": (2, 6),
    "o": (3, 3), "s": (3, 4), "t": (3, 5), "u": (3, 6),
    "v": (4, 4), "w": (4, 5), "x": (4, 6), "y": (5, 5), "z": (5, 6), "_": (6, 6),
}
CHAR_TO_SQUARE: dict[str, tuple[int, int]] = {}  # char -> (white piece, black piece)
for _i, _ch in enumerate(LETTERS):
    CHAR_TO_SQUARE[_ch] = (0, _i + 1)
    CHAR_TO_SQUARE[_ch.upper()] = (_i + 1, 0)
for _ch, (_b, _w) in _UNION.items():
    CHAR_TO_SQUARE[_ch] = (_w, _b)
    if _ch.upper() != _ch:
        CHAR_TO_SQUARE[_ch.upper()] = (_b, _w)
SQUARE_TO_CHAR: dict[tuple[int, int], str] = {}
for _ch, _sq in CHAR_TO_SQUARE.items():  # lower case first, as the engine prefers it
    if _ch.islower() or _ch == "_":
        SQUARE_TO_CHAR.setdefault(_sq, _ch)
for _ch, _sq in CHAR_TO_SQUARE.items():
    SQUARE_TO_CHAR.setdefault(_sq, _ch)

_FEN = re.compile(
    r"^((?:[a-zA-Z_1-8]+/){7}[a-zA-Z_1-8]+)(\^[a-h][1-8][a-zA-Z_])? ([wb]) ([0-9]+) "
    r"([AHah]{1,4}|-) ([a-h][1-8]|-) -(?: promote:([a-h][1-8]):(lift|place|finish))?$")
START = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w 0 AHah - -"


def square_name(sq: int) -> str:
    return "abcdefgh"[sq % 8] + str(sq // 8 + 1)


def parse_square(s: str) -> int:
    if len(s) != 2 or s[0] not in "abcdefgh" or s[1] not in "12345678":
        raise ValueError(f"pacosako: bad square {s!r}")
    return "abcdefgh".index(s[0]) + 8 * (int(s[1]) - 1)


def parse(text: str) -> dict:
    """Notation -> dict of numpy position fields. Raises ValueError on malformed input."""
    if not isinstance(text, str):
        raise ValueError(f"pacosako: notation must be a string, got {type(text).__name__}")
    m = _FEN.match(text.strip())
    if m is None:
        raise ValueError(f"pacosako: malformed notation {text!r} (expected e.g. {START!r})")
    rows, lifted, side, clock, castle, ep, promo_sq, promo_kind = m.groups()
    board = np.zeros((2, 64), np.int8)
    for v, row in enumerate(rows.split("/")):
        h = 0
        for ch in row:
            if ch.isdigit():
                h += int(ch)
                continue
            if ch not in CHAR_TO_SQUARE:
                raise ValueError(f"pacosako: unknown piece letter {ch!r} in {text!r}")
            if h >= 8:
                raise ValueError(f"pacosako: rank {8 - v} is longer than 8 squares in {text!r}")
            w, b = CHAR_TO_SQUARE[ch]
            sq = 8 * (7 - v) + h
            board[0, sq], board[1, sq] = w, b
            h += 1
        if h != 8:
            raise ValueError(f"pacosako: rank {8 - v} has {h} squares, not 8, in {text!r}")
    color = 0 if side == "w" else 1
    hand = (0, 0, -1)
    if lifted:
        sq = parse_square(lifted[1:3])
        w, b = CHAR_TO_SQUARE[lifted[3]]
        own, other = (w, b) if color == 0 else (b, w)
        if own == 0:
            raise ValueError(f"pacosako: the lifted piece must belong to the side to move: {text!r}")
        if board[:, sq].any():
            raise ValueError(f"pacosako: the lifted piece hovers over an occupied square: {text!r}")
        hand = (own, other, sq)
    pieces = [(board[c] > 0).sum() + (hand[0] > 0 if c == color else hand[1] > 0) for c in (0, 1)]
    kings = [(board[c] == R.KING).sum() + ((hand[0] if c == color else hand[1]) == R.KING)
             for c in (0, 1)]
    if max(pieces) > 16 or max(kings) > 1:
        raise ValueError(f"pacosako: at most 16 pieces and one king per side: {text!r}")
    # a king in a union: that side has lost (the engine's FEN does not record the result)
    united = [bool(np.any((board[c] == R.KING) & (board[1 - c] > 0))) for c in (0, 1)]
    if all(united):
        raise ValueError(f"pacosako: both kings are in unions: {text!r}")
    winner = 1 if united[0] else (0 if united[1] else -1)
    castling = np.array(["A" in castle, "H" in castle, "a" in castle, "h" in castle])
    for i, need in enumerate([(0, 4), (0, 4), (1, 60), (1, 60)]):
        c, ksq = need
        king_there = board[c, ksq] == R.KING or (hand[2] == ksq and c == color and hand[0] == R.KING)
        if castling[i] and not king_there:
            raise ValueError("pacosako: castling rights need the king on its e-file start square "
                             f"(Fischer random castling is not supported): {text!r}")
    ep_sq = -1 if ep == "-" else parse_square(ep)
    promotion, required = -1, (R.PLACE if hand[0] else R.LIFT)
    if promo_sq:
        promotion = parse_square(promo_sq)
        required = {"lift": R.PROMOTE_THEN_LIFT, "place": R.PROMOTE_THEN_PLACE,
                    "finish": R.PROMOTE_THEN_FINISH}[promo_kind]
        if (required == R.PROMOTE_THEN_PLACE) != bool(hand[0]):
            raise ValueError(f"pacosako: 'promote:...:place' needs a lifted piece and the others "
                             f"none: {text!r}")
        row = 7 if color == 0 else 0
        if board[color, promotion] != R.PAWN or promotion // 8 != row:
            raise ValueError(f"pacosako: no pawn of the side to move to promote on "
                             f"{promo_sq}: {text!r}")
    return dict(board=board, color=np.int32(color), required=np.int32(required),
                hand_piece=np.int32(hand[0]), hand_partner=np.int32(hand[1]),
                hand_pos=np.int32(hand[2]), ep=np.int32(ep_sq), promotion=np.int32(promotion),
                castling=castling, no_progress=np.int32(int(clock)), winner=np.int32(winner))


def write(board, color, required, hand_piece, hand_partner, hand_pos, ep, promotion, castling,
          no_progress) -> str:
    """Numpy position fields -> notation (inverse of `parse`)."""
    board = np.asarray(board)
    rows = []
    for v in range(8):
        row, run = "", 0
        for h in range(8):
            sq = 8 * (7 - v) + h
            w, b = int(board[0, sq]), int(board[1, sq])
            if w == 0 and b == 0:
                run += 1
                continue
            if run:
                row, run = row + str(run), 0
            row += SQUARE_TO_CHAR[(w, b)]
        rows.append(row + (str(run) if run else ""))
    text = "/".join(rows)
    color = int(color)
    if int(hand_piece):
        own, other = int(hand_piece), int(hand_partner)
        key = (own, other) if color == 0 else (other, own)
        text += "^" + square_name(int(hand_pos)) + SQUARE_TO_CHAR[key]
    castle = "".join(ch for ch, ok in zip("AHah", np.asarray(castling)) if ok) or "-"
    ep_s = "-" if int(ep) < 0 else square_name(int(ep))
    text += f" {'wb'[color]} {int(no_progress)} {castle} {ep_s} -"
    if int(promotion) >= 0:
        kind = {R.PROMOTE_THEN_LIFT: "lift", R.PROMOTE_THEN_PLACE: "place",
                R.PROMOTE_THEN_FINISH: "finish"}[int(required)]
        text += f" promote:{square_name(int(promotion))}:{kind}"
    return text


def render(board, color, hand_piece, hand_partner, hand_pos) -> str:
    """A text diagram: each square `Wb` (White's piece upper case, Black's lower case, `.`)."""
    board = np.asarray(board)
    lines = []
    for r in range(7, -1, -1):
        cells = []
        for f in range(8):
            w, b = int(board[0, 8 * r + f]), int(board[1, 8 * r + f])
            # two characters a square: White's piece (upper case) then Black's (lower case)
            cells.append((LETTERS[w - 1].upper() if w else ".") + (LETTERS[b - 1] if b else "."))
        lines.append(f"{r + 1} " + " ".join(cells))
    lines.append("  " + " ".join(f" {f}" for f in "abcdefgh"))
    if int(hand_piece):
        own, other = int(hand_piece), int(hand_partner)
        w, b = (own, other) if int(color) == 0 else (other, own)
        held = (LETTERS[w - 1].upper() if w else "") + (LETTERS[b - 1] if b else "")
        lines.append(f"in hand: {held} lifted from {square_name(int(hand_pos))}")
    return "\n".join(lines)
