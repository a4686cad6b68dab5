"""How many chain states the castling threat search needs: a plain-Python breadth-first search
over whole board states, written from the engine's rules (`determine_all_threats`,
kreibaum/pacosako), run on every threat set of the engine oracle. It checks itself against the
engine's sets and prints the state-count figures quoted in docs/pacosako.md.

    python benchmarks/experiments/pacosako_threat_states.py

Feeds docs/pacosako.md, "Decisions where the engine leaves something open".
"""
import gzip
import json
import os
import time
from collections import deque

import numpy as np

PAWN, ROOK, KNIGHT, BISHOP, QUEEN, KING = 1, 2, 3, 4, 5, 6
ORTH = [(0, 1), (1, 0), (0, -1), (-1, 0)]
DIAG = [(1, 1), (1, -1), (-1, -1), (-1, 1)]
KN = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]


def add(sq, dx, dy):
    x, y = sq % 8 + dx, sq // 8 + dy
    return 8 * y + x if 0 <= x < 8 and 0 <= y < 8 else None


def targets(mine, theirs, t, pos, c, ep, threat):
    """Squares a `t` lifted at `pos` (player c) threatens (threat) or may be placed on."""
    f = 1 - 2 * c
    out = set()
    if t == PAWN:
        for dx in (-1, 1):
            p = add(pos, dx, f)
            if p is not None and (threat or theirs[p] or ep == p):
                out.add(p)
        if not threat:
            p = add(pos, 0, f)
            if p is not None and not mine[p] and not theirs[p]:
                out.add(p)
                y = pos // 8
                if (y <= 1 if c == 0 else y >= 6):
                    q = add(p, 0, f)
                    if q is not None and not mine[q] and not theirs[q]:
                        out.add(q)
    elif t == KNIGHT:
        for dx, dy in KN:
            p = add(pos, dx, dy)
            if p is not None and (threat or theirs[p] or not mine[p]):
                out.add(p)
    elif t in (ROOK, BISHOP, QUEEN):
        dirs = (ORTH if t != BISHOP else []) + (DIAG if t != ROOK else [])
        for dx, dy in dirs:
            p = add(pos, dx, dy)
            while p is not None:
                if not mine[p] and not theirs[p]:
                    out.add(p)
                    p = add(p, dx, dy)
                    continue
                if threat or theirs[p] or not mine[p]:
                    out.add(p)
                break
    return out


def place(st, target, c):
    """st = (mine, theirs, hand_t, hand_pos, ep, promo); returns new state or None if settled."""
    mine, theirs, t, pos, ep, promo = st
    mine, theirs = list(mine), list(theirs)
    f = 1 - 2 * c
    if t == PAWN and ep == target and add(pos, 0, f) != target:
        src = add(target, 0, -f)
        mine[target], mine[src] = mine[src], mine[target]
        theirs[target], theirs[src] = theirs[src], theirs[target]
        ep = -1
    if t == PAWN and target // 8 == (7 if c == 0 else 0):
        promo = target
    board_piece = mine[target]
    mine[target] = t
    if not board_piece:
        return None
    return (tuple(mine), tuple(theirs), board_piece, target, ep, promo)


def threats(mine, theirs, c, ep, stats=None):
    """Squares player c threatens through chains; appends the chain states seen to `stats`."""
    mine, theirs = tuple(int(v) for v in mine), tuple(int(v) for v in theirs)
    out = set()
    todo = deque()
    for s in range(64):
        if mine[s] and mine[s] != KING and not theirs[s]:
            m = list(mine)
            m[s] = 0
            todo.append((tuple(m), theirs, mine[s], s, ep, -1))
    seen = set()
    while todo:
        st = todo.popleft()
        m, th, t, pos, e, promo = st
        if promo >= 0:
            for nt in (ROOK, KNIGHT, BISHOP, QUEEN):
                mm = list(m)
                mm[promo] = nt
                b = (tuple(mm), th, t, pos, e, -1)
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
            continue
        out |= targets(m, th, t, pos, c, e, True)
        f = 1 - 2 * c
        ep_possible = t == PAWN and e >= 0 and e in (add(pos, -1, f), add(pos, 1, f))
        for tg in targets(m, th, t, pos, c, e, False):
            if not (m[tg] and th[tg]) and not ep_possible:
                continue
            b = place(st, tg, c)
            if b is not None and b not in seen:
                seen.add(b)
                todo.append(b)
    if stats is not None:
        stats.append(len(seen))
    return out


def main():
    from envs import pacosako as P

    path = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "pacosako", "oracle",
                        "oracle.jsonl.gz")
    with gzip.open(path, "rt") as f:
        games = [json.loads(line) for line in f]
    items = [(s[0], s[3]) for g in games for s in g["steps"] if s[3] is not None]
    state = P.from_notations([fen for fen, _ in items])
    board, color, ep = (np.asarray(x) for x in (state.board, state.color, state.ep))
    counts, bad, t0 = [], 0, time.perf_counter()
    for i, (_, want) in enumerate(items):
        c = 1 - int(color[i])
        got = threats(board[i, c], board[i, 1 - c], c, int(ep[i]), counts)
        bad += got != {k for k in range(64) if (int(want) >> k) & 1}
    counts = np.array(counts)
    print(f"{len(items)} engine threat sets, {bad} differ from this search "
          f"({time.perf_counter() - t0:.0f} s)")
    print(f"chain states: mean {counts.mean():.1f}, p99 {np.percentile(counts, 99):.0f}, "
          f"p99.9 {np.percentile(counts, 99.9):.0f}, max {counts.max()}")
    for cap in (1024, 4096):
        # the JAX search also queues the (at most 16) start states
        print(f"sets needing more than {cap} states: {int(np.sum(counts > cap - 16))}")
    king = np.array(["^e1K" in fen or "^e8k" in fen for fen, _ in items])
    print(f"with a lifted king: {king.sum()} sets, max {counts[king].max()}, "
          f"p99 {np.percentile(counts[king], 99):.0f}")


if __name__ == "__main__":
    main()
