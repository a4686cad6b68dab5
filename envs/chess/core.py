"""Chess rules on bitboards: legal move generation, making a move, hashing, observation.

Everything here is a pure function of arrays, written for one position and `vmap`-ed by the
caller. Move generation works in the *mover frame*: the side to move is "us", seen with the rank
mirror (docs/chess.md) when it is Black, so pawns always move north and promote on rank 8.
Legality comes from check and pin masks (no make/unmake), so one call is a fixed amount of dense
integer work.

Piece types: P=0, N=1, B=2, R=3, Q=4, K=5. A side's pieces are a `BB` of shape [6].
The stored board (`State.board`) is absolute: uint32[12, 2], White P..K then Black P..K.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from envs.chess import bitboard as bbm
from envs.chess.bitboard import BB, DIRS

P, N, B, R, Q, K = range(6)
NUM_ACTIONS = 4672
ALL = 0xFFFFFFFFFFFFFFFF
RANK = [0xFF << (8 * r) for r in range(8)]
DARK = 0xAA55AA55AA55AA55
LIGHT = ~DARK & ALL
# underpromotion direction (docs/chess.md): left = -1 file (NW), straight (N), right = +1 file (NE)
UNDER_DELTAS = (7, 8, 9)

# termination reasons (State.termination)
ONGOING, CHECKMATE, STALEMATE, INSUFFICIENT, FIFTY_MOVES, THREEFOLD, PLY_CAP = range(7)
REASONS = ("ongoing", "checkmate", "stalemate", "insufficient_material", "fifty_moves",
           "threefold_repetition", "ply_cap")


# ------------------------------------------------------------------ action tables
def _build_tables():
    frm = np.zeros(NUM_ACTIONS, np.int32)
    to = np.full(NUM_ACTIONS, -1, np.int32)
    promo = np.zeros(NUM_ACTIONS, np.int32)
    for s in range(64):
        r, f = divmod(s, 8)
        for d, delta in enumerate(DIRS):
            dr = (delta + 1) // 8 if delta > 0 else -((-delta + 1) // 8)
            df = delta - 8 * dr
            for dist in range(1, 8):
                a = s * 56 + d * 7 + dist - 1
                frm[a] = s
                rr, ff = r + dr * dist, f + df * dist
                if 0 <= rr < 8 and 0 <= ff < 8:
                    to[a] = rr * 8 + ff
        for k, (dr, df) in enumerate(bbm.KNIGHT_DELTAS):
            a = 3584 + s * 8 + k
            frm[a] = s
            rr, ff = r + dr, f + df
            if 0 <= rr < 8 and 0 <= ff < 8:
                to[a] = rr * 8 + ff
        for d, delta in enumerate(UNDER_DELTAS):
            for piece in range(3):
                a = 4096 + s * 9 + d * 3 + piece
                frm[a] = s
                promo[a] = piece + 1  # N, B, R
                rr, ff = r + 1, f + (delta - 8)
                if 0 <= rr < 8 and 0 <= ff < 8:
                    to[a] = rr * 8 + ff
    return frm, to, promo


ACT_FROM, ACT_TO, ACT_PROMO = _build_tables()


def encode_squares(frm: int, to: int, promo: int = 0) -> int:
    """Action index of a move in the mover frame; promo 0 = none/queen, 1..3 = N, B, R.

    Raises ValueError if no index of the encoding describes this from/to pair.
    """
    if not (0 <= frm < 64 and 0 <= to < 64) or frm == to:
        raise ValueError(f"bad squares {frm}->{to}")
    r0, f0 = divmod(frm, 8)
    r1, f1 = divmod(to, 8)
    dr, df = r1 - r0, f1 - f0
    if promo:
        if dr != 1 or abs(df) > 1:
            raise ValueError("an underpromotion must move one rank forward")
        return 4096 + frm * 9 + (df + 1) * 3 + (promo - 1)
    if (dr, df) in bbm.KNIGHT_DELTAS:
        return 3584 + frm * 8 + bbm.KNIGHT_DELTAS.index((dr, df))
    if dr != 0 and df != 0 and abs(dr) != abs(df):
        raise ValueError(f"squares {frm}->{to} are not on a line nor a knight move apart")
    dist = max(abs(dr), abs(df))
    delta = int(np.sign(dr)) * 8 + int(np.sign(df))
    return frm * 56 + DIRS.index(delta) * 7 + dist - 1


def side_bbs(x: BB) -> list[BB]:
    return [x[i] for i in range(6)]


def union(x: BB) -> BB:
    return BB(jnp.bitwise_or.reduce(x.lo, axis=0), jnp.bitwise_or.reduce(x.hi, axis=0))


def mirror_sq(sq):
    """Rank mirror of a square index; -1 (no square) stays -1."""
    return jnp.where(sq >= 0, sq ^ 56, sq)


# ------------------------------------------------------------- move generation
ORTH_LANE = np.array([i % 2 == 0 for i in range(8)])  # N, E, S, W are the even directions


def _lane_sliders(orth: BB, diag: BB) -> BB:
    """BB[..., 8]: per direction lane, the pieces that slide that way."""
    m = jnp.asarray(ORTH_LANE)
    return bbm.select(m, bbm.expand(orth), bbm.expand(diag))


def _pawn_attacks_on(sq: BB, them_pawns: BB) -> BB:
    # an enemy pawn (moving south in the mover frame) attacks sq from sq+7 or sq+9
    return (bbm.step(sq, 9) | bbm.step(sq, 7)) & them_pawns


def _bar(x):
    """Materialise `x` in memory.

    XLA's CPU fusion treats integer ops as free and duplicates whole bitboard chains into
    every consumer (the 64-fold bit expansion of the mask recomputed move generation per
    bit: ~50x slower). `optimization_barrier` is expanded away before fusion on CPU, so the
    barrier is a 2-trip while loop whose body XLA cannot prove to be the identity (it xors
    with a value that is 0 for both trips), which no fusion crosses.
    """
    leaves, treedef = jax.tree.flatten(x)
    return jax.tree.unflatten(treedef, jax.lax.fori_loop(0, 2, _bar_body, leaves))


def _bar_body(i, ls):
    # one function object for every barrier, so that jax traces each shape of it once (a
    # body defined per call was traced 58 times in one self-play trace)
    junk = jnp.where(i > 1_000_000, 1, 0).astype(jnp.uint32)
    return [l ^ (junk > 0) if l.dtype == jnp.bool_
            else l + junk.astype(l.dtype) if jnp.issubdtype(l.dtype, jnp.floating)
            else l ^ junk.astype(l.dtype) for l in ls]


class LegalMoves(NamedTuple):
    """What move generation tells about a position (the side to move's view)."""

    mask: jnp.ndarray  # bool[4672] legal actions, mover frame
    in_check: jnp.ndarray  # bool
    ep_legal: jnp.ndarray  # bool: an en-passant capture is legal
    has_moves: jnp.ndarray  # bool: any(mask), read off the from-square bitboards


def legal_moves(us_x: BB, them_x: BB, castle, ep) -> LegalMoves:
    """Legal moves of the side to move, in the mover frame.

    us_x, them_x: BB[6]; castle: bool[2] (our king side, our queen side); ep: int32 square
    (mover frame, rank 6) or -1. Moves are found as from-square sets per (direction,
    distance) / knight offset / underpromotion and expanded square-major into action order.
    """
    us_x, them_x = _bar((us_x, them_x))
    us = side_bbs(us_x)
    them = side_bbs(them_x)
    occ_us, occ_them = _bar((union(us_x), union(them_x)))
    occ = occ_us | occ_them
    empty = ~occ
    king = us[K]
    e_sl = _lane_sliders(them[R] | them[Q], them[B] | them[Q])  # [8]

    # checks and pins: one ray from the king per direction, then one beyond our blocker
    ray = _bar(bbm.vray(bbm.expand(king), bbm.expand(empty)))  # [8]
    hit = ray & e_sl
    line_check = bbm.nz(hit)
    checkers = (bbm.knight_attacks(king) & them[N]) | _pawn_attacks_on(king, them[P])
    checkers = checkers | bbm.reduce_or(hit)
    check_lines = bbm.reduce_or(bbm.mask_if(line_check, ray))
    blocker = ray & bbm.expand(occ_us)
    beyond = bbm.vray(blocker, bbm.expand(empty))
    pin_lane = _bar(bbm.mask_if(bbm.nz(beyond & e_sl), blocker))  # [8]
    # pinned along orientation o = lane % 4 (lanes o and o + 4 are the two ways of one line)
    pin_o = BB(pin_lane.lo[:4] | pin_lane.lo[4:], pin_lane.hi[:4] | pin_lane.hi[4:])
    pinned = bbm.reduce_or(pin_o)
    n_check = bbm.popcount(checkers)
    in_check = n_check > 0
    checkmask = bbm.select(
        n_check == 0, bbm.const(ALL), bbm.mask_if(n_check == 1, checkers | check_lines)
    )
    checkers, check_lines, pinned, checkmask = _bar((checkers, check_lines, pinned, checkmask))
    target = ~occ_us & checkmask
    pin_o8 = BB(jnp.concatenate([pin_o.lo, pin_o.lo]), jnp.concatenate([pin_o.hi, pin_o.hi]))
    movable = _bar(~bbm.expand(pinned) | pin_o8)  # [8]: may move along lane's direction

    # squares the opponent attacks, seen through our king (it cannot hide behind itself)
    empty_nk = empty | king
    att = bbm.knight_attacks(them[N]) | bbm.king_attacks(them[K])
    att = att | bbm.step(them[P], -7) | bbm.step(them[P], -9)
    att = _bar(att | bbm.reduce_or(bbm.vray(e_sl, bbm.expand(empty_nk))))

    # sliders: to-squares per (direction, distance)
    pos = _lane_sliders(us[R] | us[Q], us[B] | us[Q]) & movable
    e8, t8 = bbm.expand(empty), bbm.expand(target)
    dist = []  # dist[k-1][i]: from-squares of a legal move in direction i, distance k
    for k in range(1, 8):
        pos = _bar(bbm.vstep(pos))
        dist.append(bbm.vshl(pos & t8, -k * bbm.DIRS_NP))
        pos = pos & e8

    # king steps (never pinned, never onto an attacked square) and castling
    king_to = bbm.vstep(bbm.expand(king)) & bbm.expand(~occ_us & ~att)
    king_from = bbm.mask_if(bbm.nz(king_to), bbm.expand(king))
    ks = castle[0] & ~bbm.nz(occ & bbm.const(0x60)) & ~bbm.nz(att & bbm.const(0x70))
    qs = castle[1] & ~bbm.nz(occ & bbm.const(0x0E)) & ~bbm.nz(att & bbm.const(0x1C))

    # pawns
    pawns = us[P]
    push1 = bbm.step(pawns & movable[0], 8) & empty
    p_n = push1 & checkmask
    p_nn = bbm.step(push1 & bbm.const(RANK[2]), 8) & empty & checkmask
    p_ne = bbm.step(pawns & movable[1], 9) & occ_them & checkmask
    p_nw = bbm.step(pawns & movable[7], 7) & occ_them & checkmask

    # en passant: the (at most two) captures are each checked by making them, which covers
    # the pinned pawn, the two pawns leaving one rank, and the capture of a checking pawn
    ep_bb = bbm.square_bb(ep)
    cap_bb = bbm.shl(ep_bb, -8)
    cand = BB(
        jnp.stack([bbm.step(ep_bb, -9).lo, bbm.step(ep_bb, -7).lo]),
        jnp.stack([bbm.step(ep_bb, -9).hi, bbm.step(ep_bb, -7).hi]),
    ) & bbm.expand(pawns, 2)  # [2]: capturing NE, capturing NW
    empty2 = ~(bbm.expand(occ, 2) ^ cand ^ bbm.expand(ep_bb | cap_bb, 2))
    ray2 = bbm.vray(bbm.expand(bbm.expand(king, 2)), bbm.expand(empty2))  # [2, 8]
    attacked2 = bbm.nz(bbm.reduce_or(ray2 & BB(e_sl.lo[None], e_sl.hi[None])))
    other = (bbm.knight_attacks(king) & them[N]) | _pawn_attacks_on(king, them[P] & ~cap_bb)
    ep_ok = bbm.nz(cand) & ~attacked2 & ~bbm.nz(other)
    p_ne = p_ne | bbm.mask_if(ep_ok[0], ep_bb)
    p_nw = p_nw | bbm.mask_if(ep_ok[1], ep_bb)
    ep_legal = ep_ok[0] | ep_ok[1]

    # pawn to-squares -> from-squares
    p_n, p_nn = bbm.shl(p_n, -8), bbm.shl(p_nn, -16)
    p_ne, p_nw = bbm.shl(p_ne, -9), bbm.shl(p_nw, -7)
    z = bbm.zeros_like(king)
    add1 = bbm.stack([p_n, p_ne, z, z, z, z, z, p_nw])
    add2 = bbm.stack([p_nn, z, bbm.mask_if(ks, king), z, z, z, bbm.mask_if(qs, king), z])
    dist[0] = dist[0] | king_from | add1
    dist[1] = dist[1] | add2
    queen = BB(jnp.stack([d.lo for d in dist], axis=1), jnp.stack([d.hi for d in dist], axis=1))
    queen = BB(queen.lo.reshape(56), queen.hi.reshape(56))  # row = dir * 7 + dist - 1

    kn_to = bbm.vknight(bbm.expand(us[N] & ~pinned)) & bbm.expand(target)  # [8]
    knights = bbm.vshl(kn_to, -bbm.KNIGHT_NP)
    rank7 = bbm.const(RANK[6])
    promo = bbm.stack([p_nw & rank7, p_n & rank7, p_ne & rank7])
    # from-major bits give the spec's layout directly: from * 56 + row, 3584 + from * 8 + k,
    # 4096 + from * 9 + dir * 3 + piece (each block is a contiguous [64, rows] array)
    queen, knights, promo = _bar((queen, knights, promo))
    # `any(mask)` on the 4672 expanded bits cost more than the rest of the terminal checks;
    # the 56 + 8 + 3 from-square bitboards hold the same information
    has_moves = bbm.nz(
        bbm.reduce_or(queen, 0) | bbm.reduce_or(knights, 0) | bbm.reduce_or(promo, 0))
    promo9 = BB(jnp.repeat(promo.lo, 3), jnp.repeat(promo.hi, 3))  # dir * 3 + piece
    mask = jnp.concatenate([
        bbm.to_bits_sq_major(queen).astype(jnp.bool_).reshape(-1),
        bbm.to_bits_sq_major(knights).astype(jnp.bool_).reshape(-1),
        bbm.to_bits_sq_major(promo9).astype(jnp.bool_).reshape(-1),
    ])
    return LegalMoves(mask, in_check, ep_legal, has_moves)


# -------------------------------------------------------------------- make move
def apply_move(us_x: BB, them_x: BB, castle, ep, halfmove, action):
    """Make `action` (mover frame) and return the position in the *same* frame.

    castle: bool[4] (ours K, ours Q, theirs K, theirs Q). Returns
    (us, them, castle, ep, halfmove, is_zeroing).
    """
    action = jnp.clip(action, 0, NUM_ACTIONS - 1)
    frm = jnp.asarray(ACT_FROM)[action]
    to = jnp.asarray(ACT_TO)[action]
    promo = jnp.asarray(ACT_PROMO)[action]
    fbb = bbm.square_bb(frm)
    tbb = bbm.square_bb(to)
    moving = bbm.nz(us_x & fbb)  # bool[6]
    ptype = jnp.argmax(moving)
    is_pawn = moving[P]
    is_king = moving[K]
    capture = jnp.any(bbm.nz(them_x & tbb))
    new_type = jnp.where(is_pawn & (to >= 56), jnp.where(promo > 0, promo, Q), ptype)
    idx = jnp.arange(6)
    us_new = (us_x & ~fbb) | bbm.mask_if(idx == new_type, tbb)
    is_ep = is_pawn & (ep >= 0) & (to == ep)
    cap_bb = bbm.mask_if(is_ep, bbm.shl(tbb, -8))
    them_new = them_x & ~(tbb | bbm.mask_if(idx == P, cap_bb))
    ks = is_king & (frm == 4) & (to == 6)
    qs = is_king & (frm == 4) & (to == 2)
    rook_toggle = bbm.mask_if(ks, bbm.const(0xA0)) | bbm.mask_if(qs, bbm.const(0x09))
    us_new = us_new ^ bbm.mask_if(idx == R, rook_toggle)
    castle = jnp.asarray(castle)
    castle = castle & jnp.stack(
        [
            ~(is_king | (frm == 7)),
            ~(is_king | (frm == 0)),
            to != 63,
            to != 56,
        ]
    )
    new_ep = jnp.where(is_pawn & (to - frm == 16), frm + 8, -1)
    zeroing = is_pawn | capture | is_ep
    halfmove = jnp.where(zeroing, 0, halfmove + 1)
    return us_new, them_new, castle, new_ep, halfmove, zeroing


# ------------------------------------------------------------- frames and board
def to_mover(board, color, castle_abs, ep_abs):
    """Absolute board uint32[12,2] -> (us BB[6], them BB[6], castle bool[4], ep) for `color`."""
    bb = bbm.from_array(board)
    white, black = bb[0:6], bb[6:12]
    black_mover = color == 1
    us = bbm.select(black_mover, bbm.mirror(black), white)
    them = bbm.select(black_mover, bbm.mirror(white), black)
    castle = jnp.where(black_mover, jnp.roll(castle_abs, 2), castle_abs)
    ep = jnp.where(black_mover, mirror_sq(ep_abs), ep_abs)
    return us, them, castle, ep


def to_absolute(us: BB, them: BB, color, castle, ep):
    """Inverse of `to_mover`."""
    black_mover = color == 1
    white = bbm.select(black_mover, bbm.mirror(them), us)
    black = bbm.select(black_mover, bbm.mirror(us), them)
    board = jnp.concatenate([bbm.to_array(white), bbm.to_array(black)], axis=0)
    castle_abs = jnp.where(black_mover, jnp.roll(castle, 2), castle)
    ep_abs = jnp.where(black_mover, mirror_sq(ep), ep)
    return board, castle_abs, ep_abs


def _fmix32(h):
    h = h ^ (h >> jnp.uint32(16))
    h = h * jnp.uint32(0x85EBCA6B)
    h = h ^ (h >> jnp.uint32(13))
    h = h * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> jnp.uint32(16))


_HASH_KEYS = np.random.default_rng(20240601).integers(0, 2**32, size=(2, 25), dtype=np.uint64)
_HASH_KEYS = _HASH_KEYS.astype(np.uint32)


def position_hash(board, color, castle_abs, ep_abs):
    """uint32[2]: a 64-bit hash of what makes two positions 'the same' for repetitions
    (pieces, side to move, castling rights, en-passant square only when capturable)."""
    words = board.reshape(-1)  # 24 words
    extra = (
        jnp.asarray(color, jnp.uint32)
        | (jnp.sum(castle_abs.astype(jnp.uint32) << jnp.arange(4, dtype=jnp.uint32)) << 1)
        | (jnp.asarray(ep_abs + 1, jnp.uint32) << 5)
    )
    words = jnp.concatenate([words, extra[None]])
    keys = jnp.asarray(_HASH_KEYS)
    mixed = _fmix32(words[None, :] ^ keys) + jnp.arange(25, dtype=jnp.uint32)
    mixed = _fmix32(mixed)
    return jnp.bitwise_xor.reduce(mixed, axis=1)


def insufficient_material(board) -> jnp.ndarray:
    """python-chess's `is_insufficient_material` on an absolute board."""
    bb = bbm.from_array(board)
    w, b = bb[0:6], bb[6:12]
    occ = [union(w), union(b)]
    pawns = w[P] | b[P]
    knights = w[N] | b[N]
    bishops = w[B] | b[B]
    heavy = pawns | w[R] | b[R] | w[Q] | b[Q]
    kings_queens = w[K] | b[K] | w[Q] | b[Q]
    same_colour = ~bbm.nz(bishops & bbm.const(DARK)) | ~bbm.nz(bishops & bbm.const(LIGHT))
    out = []
    for c in range(2):
        own, other = occ[c], occ[1 - c]
        has_heavy = bbm.nz(own & heavy)
        has_knight = bbm.nz(own & knights)
        has_bishop = bbm.nz(own & bishops)
        knight_case = (bbm.popcount(own) <= 2) & ~bbm.nz(other & ~kings_queens)
        bishop_case = same_colour & ~bbm.nz(pawns) & ~bbm.nz(knights)
        side = jnp.where(
            has_heavy, False, jnp.where(has_knight, knight_case, jnp.where(has_bishop, bishop_case, True))
        )
        out.append(side)
    return out[0] & out[1]


# --------------------------------------------------------------------- observation
CASTLE_VALUE = np.array([0.0, 0.33, 0.67, 1.0], np.float32)  # index = 2*K + Q


def observation(board, hist_board, hist_rep, rep, player, castle_abs, fullmove, halfmove):
    """float32[8, 8, 122] from `player`'s side (player 0 = White), layout in docs/chess.md."""
    boards = jnp.concatenate([board[None], hist_board], axis=0)  # [9, 12, 2]
    bb = bbm.from_array(boards)
    black = player == 1
    bb = bbm.select(black, bbm.mirror(bb), bb)
    order = (jnp.arange(12) + 6 * black.astype(jnp.int32)) % 12  # own pieces first
    bb = _bar(BB(bb.lo[:, order], bb.hi[:, order]))
    own_c = jnp.where(black, castle_abs[2:], castle_abs[:2]).astype(jnp.int32)
    scalars = jnp.stack(
        [
            (rep >= 2).astype(jnp.float32),
            (rep >= 3).astype(jnp.float32),
            (~black).astype(jnp.float32),
            jnp.minimum(1.0, fullmove.astype(jnp.float32) / 100.0),
            jnp.asarray(CASTLE_VALUE)[2 * own_c[0] + own_c[1]],
            jnp.minimum(1.0, halfmove.astype(jnp.float32) / 50.0),
        ]
    )
    # every channel c is bit(src[c], square) * val[c]: one elementwise pass writes the
    # channels-last tensor (concatenating along the channel axis was 5x slower on CPU)
    ones = jnp.full((14,), 0xFFFFFFFF, jnp.uint32)
    src = BB(jnp.concatenate([bb.lo.reshape(-1), ones]), jnp.concatenate([bb.hi.reshape(-1), ones]))
    src = BB(src.lo[jnp.asarray(OBS_SRC)], src.hi[jnp.asarray(OBS_SRC)])  # [122]
    val = jnp.concatenate([jnp.ones((108,), jnp.float32), scalars,
                           hist_rep.astype(jnp.float32)])[jnp.asarray(OBS_SRC)]
    # materialise the 122 (word, value) pairs: fused into the expansion below, their gathers
    # and selects ran once per output element, 64 times too often (~35 ms -> ~3 ms per 1024
    # observations, CPU time, docs/chess.md)
    src, val = _bar((src, val))
    sq = np.arange(64)
    word = jnp.where(jnp.asarray(sq < 32)[:, None], src.lo[None, :], src.hi[None, :])
    bit = (word >> jnp.asarray((sq % 32).astype(np.uint32))[:, None]) & jnp.uint32(1)
    return (bit.astype(jnp.float32) * val[None, :]).reshape(8, 8, 122)


def _obs_src():
    """Source of each of the 122 channels: planes 0..107 = (board b of 9, piece j of 12),
    108..113 the scalar channels 12-17, 114..121 the history repetition markers."""
    src = list(range(12)) + list(range(108, 114))
    for k in range(8):
        src += [12 * (k + 1) + j for j in range(12)] + [114 + k]
    return np.array(src, np.int32)


OBS_SRC = _obs_src()
