"""Backgammon at the Python boundary: move text and an SVG picture (plain numpy, no jax).

Move text is gnubg's, one checker at a time, from the mover's side (points 1..24, the mover
runs 24 -> 1): ``"13/9"``, ``"bar/22"``, ``"3/off"``. A bear-off with a die larger than the
point needs the die to stay one-to-one with actions (``"3/off"`` with a 3 and with a 5 can be
legal together): ``"3/off:5"``. ``"pass"`` is action 0, the only action of a player who cannot
move. Action layout (`rules`): ``src * 6 + die - 1``, src 1 = the bar, src 2..25 = point 1..24.
"""

from __future__ import annotations

import re

import numpy as np

from envs.backgammon.rules import BAR, NUM_ACTIONS, OFF, OPP_BAR, OPP_OFF, PASS_ACTION

BAR_SOURCE = 1  # the `src` of a move from the bar
FIRST_POINT_SOURCE = 2  # the `src` of point 1
_MOVE = re.compile(r"^(bar|\d{1,2})/(off|\d{1,2})(?::([1-6]))?$")


def action_text(action: int) -> str:
    """The text of a micro-action (any index in range; ValueError outside it)."""
    if not 0 <= action < NUM_ACTIONS:
        raise ValueError(f"backgammon: action {action} out of range [0, {NUM_ACTIONS})")
    src, die = divmod(action, 6)
    die += 1
    if action == PASS_ACTION:
        return "pass"
    if src == 0:  # (no-op, die > 1): never legal, written so that every index has a text
        return f"pass:{die}"
    if src == BAR_SOURCE:
        return f"bar/{25 - die}"
    point = src - FIRST_POINT_SOURCE + 1
    if point - die >= 1:
        return f"{point}/{point - die}"
    return f"{point}/off" if point == die else f"{point}/off:{die}"


def parse_action(text: str) -> int:
    """Inverse of `action_text`; ValueError naming the text when it is no move."""
    t = text.strip().lower()
    if t == "pass":
        return PASS_ACTION
    m = re.fullmatch(r"pass:([2-6])", t)
    if m:
        return int(m.group(1)) - 1
    m = _MOVE.match(t)
    if not m:
        raise ValueError(f"backgammon: {text!r} is not a move (e.g. '13/9', 'bar/22', "
                         "'3/off', '3/off:5', 'pass')")
    frm, to, die_text = m.groups()
    if frm == "bar":
        if to == "off" or die_text or not 19 <= int(to) <= 24:
            raise ValueError(f"backgammon: {text!r}: from the bar a checker enters on 19..24")
        return BAR_SOURCE * 6 + (25 - int(to)) - 1
    point = int(frm)
    if not 1 <= point <= 24:
        raise ValueError(f"backgammon: {text!r}: points are 1..24")
    if to == "off":
        die = int(die_text) if die_text else point
        if die < point or (die_text and die == point) or die > 6:
            raise ValueError(f"backgammon: {text!r}: bearing off from {point} takes a die "
                             f">= {point} (written only when larger)")
    else:
        die = point - int(to)
        if die_text or not 1 <= die <= 6:
            raise ValueError(f"backgammon: {text!r}: a move goes 1..6 points forward")
    return (point - 1 + FIRST_POINT_SOURCE) * 6 + die - 1


def board_svg(board, current_player: int, dice, is_chance: bool, terminated: bool,
              size: int = 420) -> str:
    """An SVG of the board from the mover's side: X (the mover) and O checkers as discs with
    their count, points 13..24 on top and 12..1 below, bars and borne-off counts on the right."""
    b = np.asarray(board)
    w, h = size, size * 0.75
    col = w / 14.0  # 12 points, a gap for the bar, a column for the bar/off counts
    tri_h = h * 0.4
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w:.0f}" height="{h:.0f}" '
           f'viewBox="0 0 {w:.1f} {h:.1f}" font-family="sans-serif">',
           f'<rect width="{w:.1f}" height="{h:.1f}" fill="#d2b48c"/>']

    def x_of(k: int) -> float:  # column of the k-th point from the left (bar after 6)
        return (k + (1 if k >= 6 else 0)) * col

    for k in range(12):
        for top in (True, False):
            idx = 12 + k if top else 11 - k
            x = x_of(k)
            base, tip = (0.0, tri_h) if top else (h, h - tri_h)
            fill = "#8b4513" if (k + top) % 2 else "#f5deb3"
            out.append(f'<polygon points="{x:.1f},{base:.1f} {x + col:.1f},{base:.1f} '
                       f'{x + col / 2:.1f},{tip:.1f}" fill="{fill}" stroke="#555"/>')
            label_y = tri_h + 12 if top else h - tri_h - 4
            out.append(f'<text x="{x + col / 2:.1f}" y="{label_y:.1f}" font-size="9" '
                       f'text-anchor="middle">{idx + 1}</text>')
            n = int(b[idx])
            if n:
                r = col * 0.42
                for j in range(min(abs(n), 5)):
                    cy = (r + 2 * r * j) if top else (h - r - 2 * r * j)
                    fill_c = "white" if n > 0 else "black"
                    out.append(f'<circle cx="{x + col / 2:.1f}" cy="{cy:.1f}" r="{r:.1f}" '
                               f'fill="{fill_c}" stroke="#333"/>')
                if abs(n) > 5:
                    cy = (r + 8 * r) if top else (h - 9 * r)
                    out.append(f'<text x="{x + col / 2:.1f}" y="{cy + 4:.1f}" font-size="11" '
                               f'text-anchor="middle" fill="red">{abs(n)}</text>')
    side = 13 * col + col / 2
    for y, label in ((h * 0.2, f"O bar {-int(b[OPP_BAR])}"), (h * 0.3, f"O off {-int(b[OPP_OFF])}"),
                     (h * 0.7, f"X off {int(b[OFF])}"), (h * 0.8, f"X bar {int(b[BAR])}")):
        out.append(f'<text x="{side:.1f}" y="{y:.1f}" font-size="9" '
                   f'text-anchor="middle">{label}</text>')
    if terminated:
        status = "game over"
    elif is_chance:
        status = f"player {current_player} (X, white) to roll"
    else:
        status = f"player {current_player} (X, white) to move, roll {int(dice[0])}-{int(dice[1])}"
    out.append(f'<text x="{6.5 * col:.1f}" y="{h / 2 + 4:.1f}" font-size="12" '
               f'text-anchor="middle">{status}</text>')
    out.append("</svg>")
    return "\n".join(out)
