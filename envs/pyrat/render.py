"""PyRat pictures: text (`render_text`) and matplotlib (`draw`)."""

from __future__ import annotations

from typing import Any

import numpy as np


def render_text(state: Any) -> str:
    """Rows from the top: '1'/'2' rats ('B' both), 'c' cheese, '.' empty; walls '|' and '---',
    mud shown by its weight in the passage, open passages blank."""
    cost = np.asarray(state.maze)
    cheese = np.asarray(state.cheese)
    pos = np.asarray(state.positions)
    h, w = cheese.shape
    lines = ["+" + "---+" * w]
    for y in range(h - 1, -1, -1):
        row = "|"
        for x in range(w):
            here = [p for p in range(2) if pos[p, 0] == x and pos[p, 1] == y]
            ch = "B" if len(here) == 2 else str(here[0] + 1) if here else (
                "c" if cheese[y, x] else ".")
            row += f" {ch} "
            c = cost[y, x, 1]
            row += "|" if c == 0 else (" " if c == 1 else str(min(c, 9)))
        lines.append(row)
        sep = "+"
        for x in range(w):
            c = cost[y, x, 2] if y > 0 else 0
            sep += ("---" if c == 0 else "   " if c == 1 else f" {min(c, 9)} ") + "+"
        lines.append(sep)
    turn = int(np.asarray(state.step_count))
    sc = np.asarray(state.scores)
    lines.append(f"turn {turn}  scores {sc[0]:g} - {sc[1]:g}  mud {[int(v) for v in np.asarray(state.mud_turns)]}")
    return "\n".join(lines)


def draw(ax: Any, state: Any, title: str = "") -> None:
    """Draw an unbatched state on a matplotlib axis: walls black, mud brown with its weight,
    cheese yellow, player 1 blue, player 2 red."""
    cost = np.asarray(state.maze)
    cheese = np.asarray(state.cheese)
    pos = np.asarray(state.positions)
    h, w = cheese.shape
    ax.set_xlim(-0.5, w - 0.5)
    ax.set_ylim(-0.5, h - 0.5)
    ax.set_aspect("equal")
    ax.set_xticks(range(w))
    ax.set_yticks(range(h))
    ax.tick_params(labelsize=6)
    ax.add_patch(__import__("matplotlib.patches", fromlist=["Rectangle"]).Rectangle(
        (-0.5, -0.5), w, h, fill=False, lw=2))
    for y in range(h):
        for x in range(w):
            for d, (x0, y0, x1, y1) in ((0, (x - .5, y + .5, x + .5, y + .5)),
                                        (1, (x + .5, y - .5, x + .5, y + .5))):
                inside = (y + 1 < h) if d == 0 else (x + 1 < w)
                if not inside:
                    continue
                c = cost[y, x, d]
                if c == 0:
                    ax.plot([x0, x1], [y0, y1], color="black", lw=2.5)
                elif c > 1:
                    mx, my = (x, y + .5) if d == 0 else (x + .5, y)
                    ax.plot([x, x + (d == 1)], [y, y + (d == 0)], color="saddlebrown", lw=4,
                            alpha=0.5)
                    ax.text(mx, my, str(c), color="saddlebrown", fontsize=7, ha="center",
                            va="center")
            if cheese[y, x]:
                ax.plot(x, y, marker="o", color="gold", markersize=9, mec="orange")
    for p, col in ((0, "tab:blue"), (1, "tab:red")):
        ax.plot(pos[p, 0] + (p - 0.5) * 0.2, pos[p, 1], marker="s", color=col, markersize=9)
    sc = np.asarray(state.scores)
    ax.set_title(title or f"turn {int(np.asarray(state.step_count))}: {sc[0]:g} - {sc[1]:g}",
                 fontsize=9)


def render_svg(state: Any, cell: int = 28) -> str:
    """An SVG of an unbatched state, drawn as `draw` does (top row first): walls black, mud
    brown with its weight, cheese gold, player 1 blue, player 2 red, turn and scores below."""
    cost = np.asarray(state.maze)
    cheese = np.asarray(state.cheese)
    pos = np.asarray(state.positions)
    h, w = cheese.shape
    pad = cell // 2
    width, height = w * cell + 2 * pad, h * cell + 2 * pad + 18

    def xy(x: float, y: float) -> tuple[float, float]:  # cell centre, y up -> SVG y down
        return pad + (x + 0.5) * cell, pad + (h - 1 - y + 0.5) * cell

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<rect x="{pad}" y="{pad}" width="{w * cell}" height="{h * cell}" fill="none" '
           f'stroke="black" stroke-width="3"/>']
    for y in range(h):
        for x in range(w):
            cx, cy = xy(x, y)
            for d, inside in ((0, y + 1 < h), (1, x + 1 < w)):  # the passage up / right
                if not inside:
                    continue
                c = int(cost[y, x, d])
                if d == 0:  # the edge between (x, y) and (x, y + 1)
                    line = (cx - cell / 2, cy - cell / 2, cx + cell / 2, cy - cell / 2)
                    mid = (cx, cy - cell / 2)
                else:
                    line = (cx + cell / 2, cy - cell / 2, cx + cell / 2, cy + cell / 2)
                    mid = (cx + cell / 2, cy)
                if c == 0:
                    out.append(f'<line x1="{line[0]:.1f}" y1="{line[1]:.1f}" x2="{line[2]:.1f}" '
                               f'y2="{line[3]:.1f}" stroke="black" stroke-width="3"/>')
                elif c > 1:
                    out.append(f'<text x="{mid[0]:.1f}" y="{mid[1] + 4:.1f}" font-size="10" '
                               f'fill="saddlebrown" text-anchor="middle">{c}</text>')
            if cheese[y, x]:
                out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{cell * 0.22:.1f}" '
                           f'fill="gold" stroke="orange"/>')
    for p, colour in ((0, "royalblue"), (1, "crimson")):
        cx, cy = xy(pos[p, 0] + (p - 0.5) * 0.2, pos[p, 1])
        s = cell * 0.4
        out.append(f'<rect x="{cx - s / 2:.1f}" y="{cy - s / 2:.1f}" width="{s:.1f}" '
                   f'height="{s:.1f}" fill="{colour}"/>')
    sc = np.asarray(state.scores)
    out.append(f'<text x="{pad}" y="{height - 6}" font-size="12">turn '
               f'{int(np.asarray(state.step_count))}: {sc[0]:g} - {sc[1]:g}</text>')
    out.append("</svg>")
    return "\n".join(out)
