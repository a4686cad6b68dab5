"""Random backgammon positions biased towards the hard rules (bear-offs, checkers on the bar,
blocked points), in gnubg's board form; shared by the gnubg checks of moves, move text and
complete moves."""

from __future__ import annotations

import numpy as np


def random_gboard(rng: np.random.Generator):
    """A random position (gnubg pair: opponent, on roll), biased towards hard cases: bear-offs,
    checkers on the bar, crowded boards with blocked points."""
    while True:
        me = np.zeros(25, int)
        op = np.zeros(25, int)
        style = rng.integers(7)
        if style == 6:  # one or two checkers of ours among many blocks: one die often unusable
            for j in rng.choice(24, size=7, replace=False):
                op[j] = 2
            for _ in range(rng.integers(1, 3)):
                me[rng.integers(0, 25)] += 1
            if not ((me[:24] > 0) & (op[:24][::-1] > 0)).any():
                return tuple(int(x) for x in op), tuple(int(x) for x in me)
            continue
        if style == 5:  # (nearly) closed board, our checkers on the bar: entering is forced
            for j in rng.choice(6, size=rng.integers(4, 7), replace=False):
                op[j] = 2
            me[24] = rng.integers(1, 3)
            for _ in range(rng.integers(0, 10)):
                me[rng.integers(0, 18)] += 1
            for _ in range(rng.integers(0, 15 - op.sum() + 1)):
                op[rng.integers(0, 24)] += 1
            if op.sum() > 15 or me.sum() > 15:
                continue
            if not ((me[:24] > 0) & (op[:24][::-1] > 0)).any():
                return tuple(int(x) for x in op), tuple(int(x) for x in me)
            continue
        if style == 4:  # a prime in front of our back checkers, some of them on the bar
            start = rng.integers(0, 12)
            for j in range(start, start + rng.integers(4, 7)):
                op[j] = rng.integers(2, 4)
            me[24] = rng.integers(0, 3)
            back = list(range(24 - start, 25))  # behind the prime (our index 23 - j), or the bar
            for _ in range(rng.integers(1, 6)):
                me[rng.choice(back)] += 1
            for _ in range(rng.integers(0, 8)):
                me[rng.integers(0, 12)] += 1
            for _ in range(rng.integers(0, 5)):
                op[rng.integers(0, 24)] += 1
            if me.sum() > 15 or op.sum() > 15 or me.sum() == 0:
                continue
            if not ((me[:24] > 0) & (op[:24][::-1] > 0)).any():
                return tuple(int(x) for x in op), tuple(int(x) for x in me)
            continue
        for arr in (me, op):
            n = rng.integers(1, 16)
            for _ in range(n):
                if style == 0:  # bear-off
                    pt = rng.integers(0, 6)
                elif style == 1:  # late race / last checkers coming home
                    pt = rng.integers(0, 12)
                elif style == 2:  # anywhere, bar likely
                    pt = 24 if rng.random() < 0.15 else rng.integers(0, 24)
                else:  # crowded: few distinct points, so many blocks
                    pt = rng.choice([0, 2, 3, 5, 7, 12, 17, 18, 19, 20, 22, 23, 24])
                arr[pt] += 1
        if not ((me[:24] > 0) & (op[:24][::-1] > 0)).any():
            return tuple(int(x) for x in op), tuple(int(x) for x in me)
