"""gnubg Position IDs, gnubg board tuples and a text render, in plain numpy/Python.

A gnubg board is a pair of 25-tuples ``(opponent, player_on_roll)``; entry ``j < 24`` counts
that side's checkers on its own point ``j + 1`` and entry 24 its bar. The Position ID encodes
the first tuple then the second, each point (and the bar) as that many 1 bits followed by a 0,
packed least significant bit first into 10 bytes and written in base64 without padding.
"""

from __future__ import annotations

import base64
import binascii

import numpy as np

from envs.backgammon.rules import BAR, OFF, OPP_BAR, OPP_OFF


def board_to_gnubg(board) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Our mover-oriented int[28] board -> gnubg's (opponent, on roll) pair of 25-tuples."""
    b = np.asarray(board, dtype=np.int64)
    me = [int(max(b[i], 0)) for i in range(24)] + [int(b[BAR])]
    # The opponent's own point j + 1 is our index 23 - j.
    opp = [int(max(-b[23 - j], 0)) for j in range(24)] + [int(-b[OPP_BAR])]
    return tuple(opp), tuple(me)


def gnubg_to_board(gboard) -> np.ndarray:
    """gnubg's (opponent, on roll) pair -> our int32[28] board; ValueError if not a position."""
    if len(gboard) != 2 or any(len(side) != 25 for side in gboard):
        raise ValueError("a gnubg board is two sequences of 25 counts")
    opp = np.asarray(gboard[0], dtype=np.int64)
    me = np.asarray(gboard[1], dtype=np.int64)
    if (opp < 0).any() or (me < 0).any():
        raise ValueError("negative checker count in board")
    if me.sum() > 15 or opp.sum() > 15:
        raise ValueError(f"more than 15 checkers for a side ({me.sum()} and {opp.sum()})")
    opp_on_ours = opp[:24][::-1]
    if ((me[:24] > 0) & (opp_on_ours > 0)).any():
        raise ValueError("a point holds checkers of both sides")
    if me.sum() == 0 or opp.sum() == 0:
        raise ValueError("the game is already over: a side has no checker left")
    b = np.zeros(28, dtype=np.int32)
    b[:24] = me[:24] - opp_on_ours
    b[BAR] = me[24]
    b[OPP_BAR] = -opp[24]
    b[OFF] = 15 - me.sum()
    b[OPP_OFF] = -(15 - opp.sum())
    return b


def encode_position_id(gboard) -> str:
    """gnubg Position ID (14 characters) of a gnubg board pair."""
    bits: list[int] = []
    for side in gboard:
        for n in side:
            bits.extend([1] * int(n))
            bits.append(0)
    bits.extend([0] * (80 - len(bits)))
    data = bytearray(10)
    for k, bit in enumerate(bits[:80]):
        if bit:
            data[k // 8] |= 1 << (k % 8)
    return base64.b64encode(bytes(data)).decode("ascii")[:14]


def decode_position_id(position_id: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """gnubg board pair of a Position ID; ValueError when malformed."""
    if not isinstance(position_id, str):
        raise ValueError(f"a Position ID is a string, got {type(position_id).__name__}")
    pid = position_id.strip()
    if len(pid) != 14:
        raise ValueError(f"a Position ID has 14 characters, got {len(pid)}: {position_id!r}")
    try:
        data = base64.b64decode(pid + "==", validate=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"Position ID {position_id!r} is not base64: {e}") from None
    bits = [(data[k // 8] >> (k % 8)) & 1 for k in range(80)]
    sides: list[list[int]] = [[], []]
    side, count = 0, 0
    for bit in bits:
        if side == 2:
            if bit:
                raise ValueError(f"Position ID {position_id!r} has bits past its 50 counts")
            continue
        if bit:
            count += 1
        else:
            sides[side].append(count)
            count = 0
            if len(sides[side]) == 25:
                side += 1
    if side != 2:
        raise ValueError(f"Position ID {position_id!r} does not encode 2 x 25 counts")
    gboard = (tuple(sides[0]), tuple(sides[1]))
    gnubg_to_board(gboard)  # validates checker counts and overlaps
    return gboard


def pip_counts(board) -> tuple[int, int]:
    """(mover's, opponent's) pip count: the pips each side needs to bear every checker off,
    each checker counted by its own point number (the bar is 25)."""
    b = np.asarray(board, dtype=np.int64)
    points = np.arange(1, 25)
    mover = int((np.maximum(b[:24], 0) * points).sum() + 25 * b[BAR])
    # the opponent's own point j + 1 is our index 23 - j: our index i is its point 24 - i
    opponent = int((np.maximum(-b[:24], 0) * (25 - points)).sum() + 25 * -b[OPP_BAR])
    return mover, opponent


def render_board(board, current_player: int, dice, remaining, is_chance: bool,
                 terminated: bool, rewards) -> str:
    """A readable text diagram, from the player to move's side (X moves 24 -> 1, O 1 -> 24)."""
    b = np.asarray(board)

    def cell(i: int) -> str:
        n = int(b[i])
        if n == 0:
            return " . "
        return f"{'X' if n > 0 else 'O'}{abs(n):<2d}"

    top = list(range(12, 24))  # points 13..24, left to right
    bot = list(range(11, -1, -1))  # points 12..1
    lines = []
    lines.append(" " + " ".join(f"{i + 1:>3d}" for i in top))
    lines.append(" " + " ".join(f"{cell(i):>3s}" for i in top))
    lines.append(" " + " ".join(f"{cell(i):>3s}" for i in bot))
    lines.append(" " + " ".join(f"{i + 1:>3d}" for i in bot))
    x_pips, o_pips = pip_counts(b)
    lines.append(
        f"bar: X {int(b[BAR])}  O {int(-b[OPP_BAR])}    off: X {int(b[OFF])}  O {int(-b[OPP_OFF])}"
        f"    pips: X {x_pips}  O {o_pips}"
    )
    left = [v + 1 for v in range(6) for _ in range(int(remaining[v]))]
    if terminated:
        status = f"game over, rewards {[float(r) for r in rewards]}"
    elif is_chance:
        status = f"player {current_player} (X) to roll"
    else:
        status = (f"player {current_player} (X) to move, roll {int(dice[0])}-{int(dice[1])}, "
                  f"dice left {left}")
    lines.append(status)
    pid = encode_position_id(board_to_gnubg(b)) if int(b[OFF]) < 15 and int(-b[OPP_OFF]) < 15 \
        else "-"
    lines.append(f"Position ID {pid} (X on roll)")
    return "\n".join(lines)
