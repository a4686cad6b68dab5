"""Gomoku pictures of an unbatched state: text (`render_text`) and SVG (`render_svg`)."""

from __future__ import annotations

from typing import Any
from xml.sax.saxutils import escape

import numpy as np

# stone letters by seat; the last stone placed is written in capitals
STONE_CHARS = "xov"
STONE_COLOURS = ("#111111", "#f4f4f4", "#d62728")
VIEW_COLOUR = "#1f77b4"


def _fields(state: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """board, last move, view centre and the view's side (from the V * V action mask, so that
    a state draws itself without its env)."""
    view = int(round(np.sqrt(np.shape(state.legal_action_mask)[-1])))
    return (np.asarray(state.board), np.asarray(state.last_move), np.asarray(state.view_centre),
            view)


def _status(state: Any) -> str:
    player = int(np.asarray(state.current_player))
    step = int(np.asarray(state.step_count))
    if bool(np.asarray(state.terminated)) or bool(np.asarray(state.truncated)):
        places = np.asarray(state.places)
        order = " > ".join(f"{STONE_CHARS[p]}" for p in np.argsort(places))
        winner = int(np.asarray(state.winner))
        how = f"{STONE_CHARS[winner]} made a line" if winner >= 0 else "no line (draw)"
        return f"step {step}: game over, {how}; places {order}"
    return f"step {step}: {STONE_CHARS[player]} to play"


def render_text(state: Any) -> str:
    """Rows from the top: '.' empty, x / o / v the stones of seats 0 / 1 / 2 (the last one in
    capitals); the view's rows and columns are marked with '+' on the margins."""
    board, last, centre, view = _fields(state)
    size = board.shape[0]
    h = view // 2
    rows = set(range(centre[0] - h, centre[0] + h + 1))
    cols = set(range(centre[1] - h, centre[1] + h + 1))
    lines = [" " + "".join("+" if c in cols else " " for c in range(size))]
    for r in range(size):
        chars = []
        for c in range(size):
            v = int(board[r, c])
            ch = "." if v == 0 else STONE_CHARS[v - 1]
            if (r, c) == (int(last[0]), int(last[1])):
                ch = ch.upper()
            chars.append(ch)
        lines.append(("+" if r in rows else " ") + "".join(chars))
    lines.append(_status(state))
    return "\n".join(lines)


def render_svg(state: Any) -> str:
    """Stones on a grid, the last one ringed, the local view as a blue frame."""
    board, last, centre, view = _fields(state)
    size = board.shape[0]
    cell = max(4, min(24, 600 // size))
    margin = cell
    width = size * cell + 2 * margin
    height = width + 2 * cell
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}">',
             '<rect width="100%" height="100%" fill="#dcb35c"/>']
    for i in range(size):
        x = margin + i * cell + cell / 2
        end = margin + size * cell - cell / 2
        start = margin + cell / 2
        parts.append(f'<line x1="{x}" y1="{start}" x2="{x}" y2="{end}" stroke="#6b5326" '
                     'stroke-width="0.5"/>')
        parts.append(f'<line x1="{start}" y1="{x}" x2="{end}" y2="{x}" stroke="#6b5326" '
                     'stroke-width="0.5"/>')
    for r, c in zip(*np.nonzero(board)):
        cx, cy = margin + c * cell + cell / 2, margin + r * cell + cell / 2
        colour = STONE_COLOURS[int(board[r, c]) - 1]
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="{cell * 0.45}" fill="{colour}" '
                     'stroke="#333" stroke-width="0.5"/>')
    if last[0] >= 0:
        cx, cy = margin + last[1] * cell + cell / 2, margin + last[0] * cell + cell / 2
        parts.append(f'<circle cx="{cx}" cy="{cy}" r="{cell * 0.2}" fill="none" '
                     f'stroke="{VIEW_COLOUR}" stroke-width="1.5"/>')
    h = view // 2
    x0, y0 = margin + (centre[1] - h) * cell, margin + (centre[0] - h) * cell
    parts.append(f'<rect x="{x0}" y="{y0}" width="{view * cell}" height="{view * cell}" '
                 f'fill="none" stroke="{VIEW_COLOUR}" stroke-width="2"/>')
    parts.append(f'<text x="{margin}" y="{width + cell}" font-family="monospace" '
                 f'font-size="12">{escape(_status(state))}</text>')
    parts.append("</svg>")
    return "".join(parts)
