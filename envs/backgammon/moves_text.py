"""Complete backgammon moves as text, in gnubg's notation, and typed moves read back.

Points are numbered from the side of the player who moves (1..24, that player runs 24 -> 1),
the bar is ``bar`` (or 25) and borne off is ``off`` (or 0). A complete move is written the way
gnubg writes it (`gnubg.movetupletostring`), and `tests/envs/test_moves_text.py` checks it does on
gnubg's own moves:

* one part per checker, the parts in order of decreasing starting point: ``8/5 6/5``;
* the hops of one checker joined, a point passed through written only where it hits:
  ``24/20``, ``13/7*/2``, ``bar/20*/5``;
* a hit marked ``*`` once, at the first place its point is written: ``8/5* 6/5``;
* identical parts counted: ``13/10(2)``, ``6/off(2)``.

What a person may type (`parse_move`): any of those forms, case-insensitive, parts separated by
spaces or commas, ``-`` accepted for ``/`` (FIBS writes ``8-5``), hit marks optional, hops in
any order, a checker's path split (``24/22 22/20``) or joined (``24/20``). A typed move is
legal when the position it leads to is the position of one of the legal complete moves
(`match_move`): the move is checked by where the checkers end, not by how it was spelled.

Plain Python and numpy: the game loop of `turbozero play` calls it between jitted steps.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence

import numpy as np

from envs.backgammon.render import BAR_SOURCE, FIRST_POINT_SOURCE
from envs.backgammon.rules import BAR, OFF, OPP_BAR, PASS_ACTION

BAR_POINT = 25  # the bar, as a starting point
OFF_POINT = 0  # borne off, as an end point

Step = tuple[int, int]  # (from, to): one checker moved by one die or a typed hop


class Hop(NamedTuple):
    """One typed hop of one checker."""

    start: int  # 25 (bar) or 1..24
    end: int  # 1..24 or 0 (off)
    hit: bool  # the typed text marks a hit at `end`


# ------------------------------------------------------------------------------ writing
def steps_from_actions(actions: Sequence[int]) -> list[Step]:
    """The single-die steps of the env's micro-actions (`rules` layout: src * 6 + die - 1),
    in the order played; padding (negative) and the pass are skipped."""
    steps = []
    for a in actions:
        a = int(a)
        if a < 0 or a == PASS_ACTION:
            continue
        src, die = divmod(a, 6)
        die += 1
        if src == 0:
            raise ValueError(f"backgammon: action {a} moves no checker")
        start = BAR_POINT if src == BAR_SOURCE else src - FIRST_POINT_SOURCE + 1
        steps.append((start, max(start - die, OFF_POINT)))
    return steps


def _point_text(point: int) -> str:
    return "bar" if point == BAR_POINT else "off" if point == OFF_POINT else str(point)


def format_move(board, steps: Sequence[Step]) -> str:
    """gnubg's text of a complete move: `board` int32[28] before the move, from the mover's side
    (`rules` layout); `steps` its single-checker hops (from, to), in any order. "" for none."""
    b = np.asarray(board)
    # the points a checker lands on where the opponent stands: for a legal move, its blots
    opponent_on = {p for p in range(1, 25) if b[p - 1] < 0}
    hops = sorted(((int(f), int(t)) for f, t in steps), key=lambda s: (-s[0], -s[1]))
    # join the hops of one checker: taken far to near, a hop from p continues a path that ends
    # at p (every hop into p starts further back, so it is already placed)
    paths: list[list[int]] = []
    for start, end in hops:
        for path in paths:
            if path[-1] == start and start != OFF_POINT:
                path.append(end)
                break
        else:
            paths.append([start, end])
    # identical paths count once, "(n)"; first appearance keeps the order
    counted: list[list] = []
    for path in paths:
        for entry in counted:
            if entry[0] == path:
                entry[1] += 1
                break
        else:
            counted.append([path, 1])
    unmarked = set(opponent_on)  # a hit is marked at the first place its point is written
    parts = []
    for path, n in counted:
        text = _point_text(path[0])
        for k, p in enumerate(path[1:], start=1):
            last = k == len(path) - 1
            if p in unmarked:
                text += f"/{_point_text(p)}*"
                unmarked.discard(p)
            elif last:
                text += f"/{_point_text(p)}"
        parts.append(text + (f"({n})" if n > 1 else ""))
    return " ".join(parts)


def format_actions(board, actions: Sequence[int]) -> str:
    """The text of a complete move given as the env's micro-actions from `board`."""
    return format_move(board, steps_from_actions(actions))


def apply_steps(board, steps: Sequence[Step]) -> np.ndarray:
    """`board` (int32[28], the mover's side) after moving one checker along each step in order,
    hitting a lone opponent checker where one lands; ValueError naming the first step that
    cannot be made (no checker of the mover there, the point held by the opponent). Dice and
    the rules of entering and bearing off are not checked here: the legal moves are the env's."""
    b = np.array(board, dtype=np.int32)
    for start, end in steps:
        src = BAR if start == BAR_POINT else start - 1
        if b[src] <= 0:
            where = "on the bar" if start == BAR_POINT else f"on {start}"
            raise ValueError(f"no checker of yours {where}")
        b[src] -= 1
        if end == OFF_POINT:
            b[OFF] += 1
            continue
        dst = end - 1
        if b[dst] < -1:
            raise ValueError(f"{end} is blocked ({-int(b[dst])} checkers of the opponent)")
        if b[dst] == -1:  # the hit checker goes to the opponent's bar
            b[dst] = 0
            b[OPP_BAR] -= 1
        b[dst] += 1
    return b


# ------------------------------------------------------------------------------ reading
_PART = re.compile(r"^(?P<path>[^()]+?)(?:\((?P<count>\d+)\))?$")
_POINT = re.compile(r"^(?P<point>bar|off|\d{1,2})(?P<hit>\*?)$")
EXAMPLES = "e.g. 8/5 6/5, bar/22 13/11, 13/7*, 24/20(2), 6/off 5/off"


def _read_point(text: str, part: str) -> tuple[int, bool]:
    m = _POINT.match(text)
    if not m:
        raise ValueError(f"{part!r}: {text!r} is not a point (1-24, bar or off)")
    p = m.group("point")
    point = BAR_POINT if p == "bar" else OFF_POINT if p == "off" else int(p)
    if not 0 <= point <= 25:
        raise ValueError(f"{part!r}: points are 1-24, bar (25) and off (0)")
    return point, bool(m.group("hit"))


def parse_move(text: str) -> list[Hop]:
    """The hops of a typed complete move (module docstring for the forms), repetitions
    expanded; ValueError with a one-line reason when the text is not a move."""
    t = text.strip().lower().replace(",", " ")
    if not t:
        raise ValueError("empty move")
    hops: list[Hop] = []
    for part in t.split():
        m = _PART.match(part)
        if not m:
            raise ValueError(f"{part!r} is not a move part ({EXAMPLES})")
        count = int(m.group("count")) if m.group("count") else 1
        if not 1 <= count <= 4:
            raise ValueError(f"{part!r}: a part is repeated 1 to 4 times")
        fields = re.split(r"[/-]", m.group("path"))
        if len(fields) < 2 or any(not f for f in fields):
            raise ValueError(f"{part!r} is not a move part ({EXAMPLES})")
        points = [_read_point(f, part) for f in fields]
        if points[0][1]:
            raise ValueError(f"{part!r}: a hit mark '*' follows the point hit, not the start")
        path = []
        for k, ((start, _), (end, hit)) in enumerate(zip(points, points[1:])):
            if end == BAR_POINT:
                raise ValueError(f"{part!r}: the bar is where a checker starts, not ends")
            if start == OFF_POINT:
                raise ValueError(f"{part!r}: off is where a checker ends, not starts")
            if end >= start:
                raise ValueError(f"{part!r}: {_point_text(start)}/{_point_text(end)} goes "
                                 "backwards; you move from 24 towards 1 and off")
            if hit and end == OFF_POINT:
                raise ValueError(f"{part!r}: nothing is hit when bearing off")
            path.append(Hop(start, end, hit))
        hops.extend(path * count)
    if len(hops) > 4 * 4:
        raise ValueError("too many checkers moved (a roll moves at most 4)")
    return hops


def _slot(point: int) -> int:
    """Index of a point in the mover's counts [26]: points 1..24, the bar, off."""
    return 24 if point == BAR_POINT else 25 if point == OFF_POINT else point - 1


def _mover_counts(board: np.ndarray) -> np.ndarray:
    """int64[26]: the mover's checkers on points 1..24, the bar and off."""
    return np.concatenate([np.maximum(board[:24], 0), [board[BAR], board[OFF]]]).astype(np.int64)


def _effects(board: np.ndarray, legal: Sequence[Sequence[Step]]) -> tuple[np.ndarray, np.ndarray]:
    """For each legal move (its steps, a legal order): the mover's counts after it int64[K, 26]
    and the points it hits bool[K, 25] (1..24 at 1..24). Order-free: the opponent does not move
    during the move, so a step hits exactly when it lands on a point where the opponent had
    one checker before (vectorised: a few thousand moves of doubles in one call)."""
    k = len(legal)
    starts = np.full((k, 4), -1, np.int64)
    ends = np.full((k, 4), -1, np.int64)
    for i, steps in enumerate(legal):
        for j, (a, b) in enumerate(steps):
            starts[i, j], ends[i, j] = _slot(a), _slot(b)
    used = starts >= 0
    rows = np.broadcast_to(np.arange(k)[:, None], starts.shape)
    counts = np.broadcast_to(_mover_counts(board), (k, 26)).copy()
    np.add.at(counts, (rows[used], starts[used]), -1)
    np.add.at(counts, (rows[used], ends[used]), 1)
    blot = np.concatenate([[False], board[:24] == -1])  # by point number 0..24 (0: off)
    point = np.where(used, ends + 1, 0)  # slot -> point number; off (slot 25) is no point
    point = np.where(point > 24, 0, point)
    hits = np.zeros((k, 25), bool)
    hits[rows, point] = blot[point]
    hits[:, 0] = False
    return counts, hits


def match_move(board, text: str, legal: Sequence[Sequence[Step]], roll: str = "") -> int:
    """Which of the `legal` complete moves (each its steps from `board`, the mover's side) the
    typed `text` is; ValueError with a one-line reason: "not a move: ..." when it cannot be
    read, "illegal: ..." when it reads but is none of them (naming `roll`, e.g. "3-1").

    Read by its end position: where the typed hops leave the mover's checkers must be where a
    legal move leaves them. A hop longer than one die passes over points the text may not
    name; moves that differ only there (13/7*/2 or 13/8/2 for a 6-5) are told apart by the
    points the text names: a checker landing on a lone opponent checker hits it (marked with
    '*' or not), and of the moves with those hits the one with the fewest others is taken (as
    gnubg writes, a point passed over unnamed is one where nothing is hit)."""
    try:
        hops = parse_move(text)
    except ValueError as err:
        raise ValueError(f"not a move: {err}") from None
    b = np.asarray(board, dtype=np.int32)
    # the typed end position, order-free: the mover's counts (hops may be typed in any order)
    mine = _mover_counts(b)
    for h in hops:
        mine[_slot(h.start)] -= 1
        mine[_slot(h.end)] += 1
    for h in hops:
        if h.hit and b[h.end - 1] != -1:
            raise ValueError(f"illegal: {text.strip()} marks a hit on {h.end}, where the "
                             f"opponent has {'no' if b[h.end - 1] >= 0 else 'more than one'} "
                             "checker")
    # a checker that lands on a blot hits it, marked or not; the opponent does not move
    required = np.zeros(25, bool)
    for h in hops:
        if h.end != OFF_POINT and b[h.end - 1] == -1:
            required[h.end] = True
    counts, hits = _effects(b, legal) if len(legal) else (np.zeros((0, 26)), np.zeros((0, 25)))
    ok = np.all(counts == mine, axis=1) & ~np.any(required & ~hits, axis=1)
    if not ok.any():
        raise ValueError(f"illegal: {_why_not(b, hops, text, roll)}")
    extra = np.where(ok, np.sum(hits & ~required, axis=1), 99)
    best = np.flatnonzero(extra == extra.min()).tolist()
    if len(best) > 1:  # two routes each hitting a different unmarked blot
        options = ", ".join(format_move(b, legal[k]) for k in best)
        raise ValueError(f"ambiguous: {text.strip()} can be {options}; mark the hit with '*'")
    return best[0]


def _why_not(board: np.ndarray, hops: Sequence[Hop], text: str, roll: str) -> str:
    """A reason a typed move is not legal: a hop that cannot be made (no checker there, the
    point blocked), a checker left on the bar, else only that it is no legal complete move."""
    # far to near, so that a hop from a point comes after the hop that brings a checker there
    # (the person may type them in any order)
    order = sorted(((h.start, h.end) for h in hops), key=lambda s: (-s[0], -s[1]))
    try:
        apply_steps(board, order)
    except ValueError as err:
        return f"{text.strip()}: {err}"
    if board[BAR] > 0 and not any(h.start == BAR_POINT for h in hops):
        return f"{text.strip()}: you have a checker on the bar; enter it first (bar/..)"
    return f"{text.strip()} is not a legal complete move" + (f" for {roll}" if roll else "")


def roll_text(dice) -> str:
    """'3-1': the roll, high die first (as gnubg writes it)."""
    d = sorted((int(x) for x in dice), reverse=True)
    return f"{d[0]}-{d[1]}"


RESULT_NAMES = {1: "single game", 2: "gammon", 3: "backgammon"}


def result_name(points: float) -> str:
    """What a finished game's points mean: 1 single game, 2 gammon, 3 backgammon."""
    return RESULT_NAMES.get(int(round(abs(points))), f"{abs(points):g} points")


class BackgammonMoveText:
    """Backgammon for `turbozero play` (`turbozero.play.MoveText`): states are the env's."""

    help = ("you are X on the board when asked for a move, moving 24 -> 1 (home 1-6, then "
            "off); a move is its checkers' hops: 8/5 6/5, bar/22 13/11, 6/off 5/off (or 6/0), "
            "13/7*/2 (a hit marked '*', optional), 24/20(2) (twice), 24/22 22/20 = 24/20; "
            "parts in any order, separated by spaces or commas; bar = 25, off = 0; '-' for '/'")

    def board(self, state) -> str:
        from envs.backgammon import render_text  # the env's own drawing

        drawing = render_text(state)
        # a finished game is drawn from its winner's side (the env keeps that board); no
        # colour named: X is whoever won, which `turbozero play` says as "you" / "the agent"
        return drawing + ("\n(the final board, drawn from the winner's side)"
                          if bool(state.terminated) else "")

    def roll(self, state) -> str:
        return roll_text(np.asarray(state.dice))

    def describe(self, state, actions) -> str:
        return format_actions(np.asarray(state.board), actions)

    def match(self, state, text: str, legal) -> int:
        return match_move(np.asarray(state.board), text,
                          [steps_from_actions(a) for a in legal], self.roll(state))

    def result(self, points: float) -> str:
        return result_name(points)

    def mirror(self, move: str) -> str:
        """The move written from the other side: each point n becomes 25 - n (bar and off
        keep their names: the other player's bar is off its board, as seen from here)."""
        return re.sub(r"\d+", lambda m: m.group(0) if m.start() and move[m.start() - 1] == "("
                      else str(25 - int(m.group(0))), move)

    def sort_key(self, move: str) -> list[int]:
        """Moves listed as gnubg orders parts: by their points, far to near (bar 25, off 0)."""
        words = re.findall(r"bar|off|\d+", re.sub(r"\(\d\)", "", move))  # not the counts
        return [-(BAR_POINT if w == "bar" else OFF_POINT if w == "off" else int(w))
                for w in words]


MOVE_TEXT = BackgammonMoveText()  # turbozero.games: GameSpec.move_text

__all__ = ["BAR_POINT", "EXAMPLES", "BackgammonMoveText", "Hop", "MOVE_TEXT", "OFF_POINT",
           "apply_steps", "format_actions", "format_move", "match_move", "parse_move",
           "result_name", "roll_text", "steps_from_actions"]
