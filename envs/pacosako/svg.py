"""An SVG picture of a Paco Ŝako position (plain numpy): a chess board, each square showing
White's piece on the left and Black's on the right (a union shows both), the lifted piece and
the side to act below."""

from __future__ import annotations

import numpy as np

from envs.pacosako.notation import square_name

# piece codes 1..6 = pawn, rook, knight, bishop, queen, king (rules.PAWN..KING)
_WHITE = "\u2659\u2656\u2658\u2657\u2655\u2654"
_BLACK = "\u265f\u265c\u265e\u265d\u265b\u265a"


def board_svg(board, color: int, hand_piece: int, hand_partner: int, hand_pos: int,
              status: str, size: int = 360) -> str:
    b = np.asarray(board)
    sq = size / 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size + 24}" '
           f'viewBox="0 0 {size} {size + 24}" font-family="sans-serif">',
           f'<rect width="{size}" height="{size + 24}" fill="white"/>']
    for rank in range(8):
        for f in range(8):
            s = rank * 8 + f
            x, y = f * sq, (7 - rank) * sq
            fill = "#b58863" if (rank + f) % 2 == 0 else "#f0d9b5"
            if int(hand_piece) and s == int(hand_pos):
                fill = "#cdd26a"  # the square the piece in hand was lifted from
            out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{sq:.1f}" height="{sq:.1f}" '
                       f'fill="{fill}"/>')
            w, k = int(b[0, s]), int(b[1, s])
            glyphs = [(_WHITE[w - 1], 0.3 if k else 0.5)] if w else []
            glyphs += [(_BLACK[k - 1], 0.7 if w else 0.5)] if k else []
            font = sq * (0.55 if w and k else 0.8)
            for g, fx in glyphs:
                out.append(f'<text x="{x + sq * fx:.1f}" y="{y + sq * 0.75:.1f}" '
                           f'font-size="{font:.1f}" text-anchor="middle">{g}</text>')
    line = status
    if int(hand_piece):
        own, other = int(hand_piece), int(hand_partner)
        w, k = (own, other) if int(color) == 0 else (other, own)
        held = (_WHITE[w - 1] if w else "") + (_BLACK[k - 1] if k else "")
        line += f"; in hand {held} from {square_name(int(hand_pos))}"
    out.append(f'<text x="4" y="{size + 17}" font-size="13">{line}</text>')
    out.append("</svg>")
    return "\n".join(out)
