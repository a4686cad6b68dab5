"""Paco Ŝako rules as pure JAX functions over one position (vmap at the edge).

Squares are absolute: a1 = 0, b1 = 1, ..., h8 = 63 (index = 8 * rank + file). Colour 0 is White
(moves up), colour 1 is Black. Piece codes: 0 empty, 1 pawn, 2 rook, 3 knight, 4 bishop,
5 queen, 6 king (the engine's piece order, shifted by one so that 0 means "none").

The rules follow the public engine kreibaum/pacosako (`lib/src/lib.rs`, `castling.rs`,
`draw_state.rs`); docs/pacosako.md lists them and the few places where this code differs.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import jax
from jax import custom_batching
import jax.numpy as jnp

EMPTY, PAWN, ROOK, KNIGHT, BISHOP, QUEEN, KING = range(7)
# required next action (the engine's RequiredAction)
LIFT, PLACE, PROMOTE_THEN_LIFT, PROMOTE_THEN_PLACE, PROMOTE_THEN_FINISH = range(5)
# termination reasons
RUNNING, PACO, NO_PROGRESS_DRAW, REPETITION_DRAW, NO_LEGAL_ACTION = range(5)
REASONS = ("running", "paco", "no-progress draw", "repetition draw", "no legal action")
NUM_ACTIONS = 132  # lift 0..63, place 64..127, promote 128..131 (rook, knight, bishop, queen)
PROMOTE_TYPES = np.array([ROOK, KNIGHT, BISHOP, QUEEN], np.int32)
REP_CAP = 128  # repetition history: cleared on progress, and 100 lifts without progress end it
NO_PROGRESS_LIMIT = 100
DRAW_AFTER_REPETITIONS = 3
OFF = 64  # the "off the board" square index used in the tables

# --------------------------------------------------------------------------- geometry tables
# directions: 0-3 orthogonal (rook), 4-7 diagonal (bishop)
_DIRS = [(0, 1), (1, 0), (0, -1), (-1, 0), (1, 1), (1, -1), (-1, -1), (-1, 1)]
_KNIGHT = [(1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2)]


def _on(x, y):
    return 0 <= x < 8 and 0 <= y < 8


def _tables():
    ray = np.full((64, 8, 7), OFF, np.int32)
    knight = np.full((64, 8), OFF, np.int32)
    for s in range(64):
        x, y = s % 8, s // 8
        for d, (dx, dy) in enumerate(_DIRS):
            for k in range(7):
                nx, ny = x + dx * (k + 1), y + dy * (k + 1)
                if not _on(nx, ny):
                    break
                ray[s, d, k] = 8 * ny + nx
        for j, (dx, dy) in enumerate(_KNIGHT):
            if _on(x + dx, y + dy):
                knight[s, j] = 8 * (y + dy) + x + dx
    return ray, knight


RAY, KNIGHT_T = _tables()
NEIGH = RAY[:, :, 0]  # [64, 8] the king's steps
RANK = np.arange(64) // 8
FILE = np.arange(64) % 8
# castling options: 0 White queen side, 1 White king side, 2 Black queen side, 3 Black king side
C_ROOK_FROM = np.array([0, 7, 56, 63], np.int32)
C_ROOK_TO = np.array([3, 5, 59, 61], np.int32)
C_KING_TO = np.array([2, 6, 58, 62], np.int32)  # also the square the king is placed on
C_KING_FROM = np.array([4, 4, 60, 60], np.int32)


def _mask(squares):
    m = np.zeros(64, bool)
    m[list(squares)] = True
    return m


# squares between rook and king that must be empty, squares the king passes that must be safe
C_EMPTY = np.stack([_mask([1, 2, 3]), _mask([5, 6]), _mask([57, 58, 59]), _mask([61, 62])])
C_SAFE = np.stack([_mask([2, 3, 4]), _mask([4, 5, 6]), _mask([58, 59, 60]), _mask([60, 61, 62])])

# Zobrist keys for the repetition hash (two 32-bit words = one 64-bit key)
_rng = np.random.default_rng(20240512)
Z_PIECE = _rng.integers(0, 2**32, size=(2, 2, 64, 7), dtype=np.uint64).astype(np.uint32)
Z_PIECE[:, :, :, 0] = 0
Z_SIDE = _rng.integers(0, 2**32, size=(2, 2), dtype=np.uint64).astype(np.uint32)
Z_EP = _rng.integers(0, 2**32, size=(2, 65), dtype=np.uint64).astype(np.uint32)
Z_EP[:, 64] = 0
Z_CASTLE = _rng.integers(0, 2**32, size=(2, 4), dtype=np.uint64).astype(np.uint32)


def forward(color):
    """+1 for White (moves up the board), -1 for Black."""
    return 1 - 2 * color


def flip(sq, color):
    """The square seen from `color`'s side: ranks mirrored for Black (files kept)."""
    return jnp.where(color == 1, sq ^ 56, sq)


# --------------------------------------------------------------------------- target sets
def _gather(arr, idx):
    """arr[idx] with idx == OFF reading False/0."""
    padded = jnp.concatenate([arr, jnp.zeros((1,), arr.dtype)])
    return padded[idx]


def ray_targets(ray, occ, blocker_ok):
    """bool[..., 8 dir, 7 step]: which squares of `ray` (RAY rows, OFF past the edge) a slider
    may be placed on. occ: bool[64] occupied squares; blocker_ok: bool[64] whether the first
    occupied square on a ray is itself a target."""
    o = _gather(occ, ray)
    # a square is reachable when no earlier step on the ray is occupied
    blocked_before = jnp.cumsum(o, axis=-1) - o > 0
    free = (ray < OFF) & ~blocked_before
    return free & (~o | _gather(blocker_ok, ray))


# one-hot of every ray step's square: [64 src, 8 dir * 7 step, 64 dst] (off-board rows are 0)
RAY_ONEHOT = (RAY.reshape(64, 56)[:, :, None] == np.arange(64)[None, None, :]).astype(np.float32)
RAY_TARGETS = RAY_ONEHOT.reshape(64, 56, 64) > 0  # [src, ray step, dst]
KNIGHT_TABLE = np.zeros((64, 64), bool)
PAWN_TABLE = np.zeros((2, 64, 64), bool)  # forward-diagonal squares of a White / Black pawn
for _s in range(64):
    for _t in KNIGHT_T[_s]:
        if _t < OFF:
            KNIGHT_TABLE[_s, _t] = True
    for _c, _dirs in ((0, (4, 7)), (1, (5, 6))):
        for _d in _dirs:
            if NEIGH[_s, _d] < OFF:
                PAWN_TABLE[_c, _s, NEIGH[_s, _d]] = True


def ray_squares(t, p):
    """(orthogonal, diagonal) bool[64] squares of the ray steps `t` (bool[8, 7]) from `p`."""
    onehot = jnp.asarray(RAY_TARGETS)[p]  # [56 ray step, 64 dst]
    orth = jnp.any(t[:4].reshape(28, 1) & onehot[:28], axis=0)
    diag = jnp.any(t[4:].reshape(28, 1) & onehot[28:], axis=0)
    return orth, diag


def pawn_diagonals(color):
    """int32[64, 2] the two forward-diagonal squares of a `color` pawn (OFF if none)."""
    # directions (1,1),(-1,1) for White are 4 and 7; (1,-1),(-1,-1) for Black are 5 and 6
    white = NEIGH[:, [4, 7]]
    black = NEIGH[:, [5, 6]]
    return jnp.where(color == 0, jnp.asarray(white), jnp.asarray(black))


def pawn_forward(color):
    """int32[64] the square in front of a `color` pawn (OFF if none)."""
    return jnp.where(color == 0, jnp.asarray(NEIGH[:, 0]), jnp.asarray(NEIGH[:, 2]))


# --------------------------------------------------------------------------- threats
# The castling check asks which squares the opponent threatens, counting chains. As the engine
# (`determine_all_threats`), this searches every chain state: breadth first over (start square,
# piece in hand and the union it came from, `color`'s piece in each union, en passant used),
# deduplicated. Nothing else changes during a chain: placing on a square that is not a union
# ends it, so the occupancy is the board's with the start square vacated (and, after an en
# passant chain, the advanced pair moved back). The search keeps at most THREAT_CAPACITY states;
# the rare boards that need more are searched again with THREAT_CAPACITY_LARGE (a second, bigger
# static shape, so the common case does not pay for it). A search that needs more than that
# reports `overflow`, and the castling check then treats every square as threatened (castling
# forbidden; docs/pacosako.md gives the measured state counts).
THREAT_CAPACITY = 1024
THREAT_CAPACITY_LARGE = 65536
MAX_UNIONS = 16  # at most 16 pieces a side, so at most 16 unions
_NCHILD = MAX_UNIONS * 4 + 1  # (union, promotion type) children plus the en passant child


def _threat_row(piece, p, occ, color):
    """bool[64]: squares a lifted `piece` at `p` threatens (sliders up to and including the
    first occupied square, knights and pawn diagonals everywhere; a king threatens nothing)."""
    orth, diag = ray_squares(ray_targets(jnp.asarray(RAY)[p], occ, jnp.ones(64, jnp.bool_)), p)
    zeros = jnp.zeros(64, jnp.bool_)
    table = jnp.stack([zeros, jnp.asarray(PAWN_TABLE)[color, p], orth,
                       jnp.asarray(KNIGHT_TABLE)[p], diag, orth | diag, zeros])
    return table[piece]


def _state_key(u, hand, slot, start, ep_used):
    """uint32[3]: a chain state (3 bits per union content, hand piece, its union, start)."""
    u = u.astype(jnp.uint32)
    shifts = jnp.uint32(3) * jnp.arange(10, dtype=jnp.uint32)
    w0 = jnp.sum(u[:10] << shifts)
    w1 = (jnp.sum(u[10:] << shifts[:6]) | (hand.astype(jnp.uint32) << 18)
          | (slot.astype(jnp.uint32) << 21) | (ep_used.astype(jnp.uint32) << 26))
    return jnp.stack([w0, w1, start.astype(jnp.uint32)])


TABLE_PROBES = 16


def _hash(key):
    """uint32 hash of uint32[..., 3] keys (multiply-xorshift)."""
    h = (key[..., 0] * jnp.uint32(0x9E3779B1)) ^ (key[..., 1] * jnp.uint32(0x85EBCA77)) ^ (
        key[..., 2] * jnp.uint32(0xC2B2AE3D))
    h = (h ^ (h >> 15)) * jnp.uint32(0x27D4EB2F)
    return h ^ (h >> 13)


def _table_insert(table, probe, insert, value):
    """Writes value[i] into the first empty slot of probe[i] where insert[i]. Children that pick
    the same slot are settled in rounds (lowest index first). Returns (table, lost): lost when a
    key found no empty slot within its probes."""
    idx = jnp.arange(probe.shape[0])
    size = table.shape[0]

    def round_(c):
        table, pending, lost = c
        empty = table[probe] == EMPTY_ENTRY
        has = jnp.any(empty, axis=1)
        lost = lost | jnp.any(pending & ~has)
        pending = pending & has
        slot = jnp.take_along_axis(probe, jnp.argmax(empty, axis=1)[:, None], axis=1)[:, 0]
        # the lowest pending child wins a contested slot (compared among the children only,
        # so a round costs the same whatever the table size)
        clash = pending[None, :] & (slot[None, :] == slot[:, None]) & (idx[None, :] < idx[:, None])
        win = pending & ~jnp.any(clash, axis=1)
        table = table.at[jnp.where(win, slot, size)].set(value, mode="drop")
        return table, pending & ~win, lost

    table, _, lost = jax.lax.while_loop(lambda c: jnp.any(c[1]), round_,
                                        (table, insert, jnp.bool_(False)))
    return table, lost


NO_SQUARE = -1  # an empty en passant / hand / promotion square field
HAND_ON_START = MAX_UNIONS  # chain slot: the lifted piece still stands on its start square
EMPTY_ENTRY = 0  # table entries hold queue index + 1; 0 is a free slot


class ChainState(NamedTuple):
    """One state of the threat search: the chain so far, seen from `color`."""

    unions: jax.Array  # int32[MAX_UNIONS]: `color`'s piece in each union slot (0 = none)
    hand: jax.Array  # int32: the lifted piece
    slot: jax.Array  # int32: the union it was placed on, HAND_ON_START before any placement
    start: jax.Array  # int32: the square the chain started from
    ep_used: jax.Array  # bool: the chain went through the en passant capture


class ChainQueue(NamedTuple):
    """The breadth-first queue: `ChainState` rows (unions stored as int8) and their keys."""

    unions: jax.Array  # int8[capacity, MAX_UNIONS]
    hand: jax.Array  # int32[capacity]
    slot: jax.Array  # int32[capacity]
    start: jax.Array  # int32[capacity]
    ep_used: jax.Array  # bool[capacity]
    key: jax.Array  # uint32[capacity, 3] (`_state_key`)


class ThreatCarry(NamedTuple):
    """The `threat_search` loop carry."""

    head: jax.Array  # int32: next queue row to expand
    tail: jax.Array  # int32: rows written so far (<= capacity)
    queue: ChainQueue
    table: jax.Array  # int32[table_size]: queue index + 1 per key slot, EMPTY_ENTRY if free
    threatened: jax.Array  # bool[64]
    overflow: jax.Array  # bool: a state found no room (queue or table)
    current: ChainState  # row `head`, read at the end of the previous iteration


def threat_search(board, color, ep, capacity=THREAT_CAPACITY, active=True):
    """(bool[64] threatened squares, int32 chain states searched, bool overflow).

    The squares `color` threatens on `board` (en passant square `ep` or NO_SQUARE), counting
    every chain, as the engine's castling check (`determine_all_threats`) computes them. With
    `active` False nothing is searched (all False), which lets a vmapped caller pad a batch.
    """
    if not isinstance(capacity, int) or capacity < MAX_UNIONS:
        raise ValueError(f"capacity must be an int >= {MAX_UNIONS} (the start states), got "
                         f"{capacity!r}")
    mine, theirs = board[color].astype(jnp.int32), board[1 - color].astype(jnp.int32)
    occ0 = (mine > 0) | (theirs > 0)
    union = (mine > 0) & (theirs > 0)
    slot_sq = jnp.nonzero(union, size=MAX_UNIONS, fill_value=OFF)[0]
    slot_ok = slot_sq < OFF
    last_rank = jnp.where(color == 0, 7, 0)
    has_ep = ep != NO_SQUARE
    # en passant: a pawn placed on `ep` first moves the advanced pawn (or pair) at ep_src back
    # onto ep; when that was a union, its `color` piece is picked up (a chain)
    ep_src = jnp.where(has_ep, ep - 8 * forward(color), OFF)
    ep_slot = jnp.argmax(slot_sq == ep_src)
    ep_chain = has_ep & jnp.any(slot_sq == ep_src)
    u0 = _gather(mine, slot_sq)
    starts = (mine > 0) & (theirs == 0) & (mine != KING)
    start_sq = jnp.nonzero(starts, size=MAX_UNIONS, fill_value=OFF)[0]
    n0 = jnp.where(active, jnp.sum(starts), 0)

    cap = capacity
    table_size = 1 << (2 * cap - 1).bit_length()  # a power of two, at least twice cap
    queue = ChainQueue(
        unions=jnp.zeros((cap, MAX_UNIONS), jnp.int8).at[:MAX_UNIONS].set(u0.astype(jnp.int8)),
        hand=jnp.zeros(cap, jnp.int32).at[:MAX_UNIONS].set(_gather(mine, start_sq)),
        slot=jnp.full(cap, HAND_ON_START, jnp.int32),
        start=jnp.zeros(cap, jnp.int32).at[:MAX_UNIONS].set(start_sq),
        ep_used=jnp.zeros(cap, jnp.bool_),
        key=jnp.zeros((cap, 3), jnp.uint32).at[:MAX_UNIONS].set(jax.vmap(_state_key)(
            jnp.broadcast_to(u0, (MAX_UNIONS, MAX_UNIONS)), _gather(mine, start_sq),
            jnp.full(MAX_UNIONS, HAND_ON_START), start_sq, jnp.zeros(MAX_UNIONS, jnp.bool_))))
    kinds = jnp.arange(4)
    slots = jnp.arange(MAX_UNIONS)

    def read(q: ChainQueue, i) -> ChainState:
        i = jnp.minimum(i, cap - 1)
        return ChainState(q.unions[i].astype(jnp.int32), q.hand[i], q.slot[i], q.start[i],
                          q.ep_used[i])

    def body(c: ThreatCarry) -> ThreatCarry:
        # the state at `head` was read at the end of the previous iteration, after its writes:
        # read here, XLA fused the reads into later ops and copied two whole queue arrays
        # every iteration to keep them (O(capacity) per state)
        u, hand, slot, s, ep_used = c.current
        q = c.queue
        occ = occ0 & (jnp.arange(64) != s)
        occ = jnp.where(ep_used, occ.at[jnp.clip(ep_src, 0, 63)].set(False).at[
            jnp.clip(ep, 0, 63)].set(True), occ)
        sq = jnp.where(ep_used & (slots == ep_slot), ep, slot_sq)
        p = jnp.where(slot == HAND_ON_START, s, _gather(sq, slot))
        row = _threat_row(hand, p, occ, color)
        # chain children: on a union, threat and place targets agree (pawn diagonals and the
        # first occupied square of a ray are valid places there)
        hit = _gather(row, sq) & slot_ok
        promo = (hand == PAWN) & (sq // 8 == last_rank)
        placed = jnp.where(promo[:, None], jnp.asarray(PROMOTE_TYPES)[None, :], hand)  # [16, 4]
        ok = hit[:, None] & (promo[:, None] | (kinds == 0)[None, :])
        child_u = jnp.where(slots[None, None, :] == slots[:, None, None], placed[:, :, None],
                            u[None, None, :])  # [16 union, 4 kind, 16]
        ep_ok = (hand == PAWN) & ~ep_used & ep_chain & _gather(
            jnp.asarray(PAWN_TABLE)[color, jnp.clip(p, 0, 63)], jnp.clip(ep, 0, 63))
        c_u = jnp.concatenate([child_u.reshape(-1, MAX_UNIONS),
                               u.at[ep_slot].set(PAWN)[None, :]])
        c_hand = jnp.concatenate([jnp.repeat(u, 4), u[ep_slot][None]])
        c_slot = jnp.concatenate([jnp.repeat(slots, 4), ep_slot[None]])
        c_ep = jnp.concatenate([jnp.broadcast_to(ep_used, (_NCHILD - 1,)), jnp.ones(1, bool)])
        c_ok = jnp.concatenate([ok.reshape(-1), ep_ok[None]])
        c_start = jnp.broadcast_to(s, (_NCHILD,))
        c_key = jax.vmap(_state_key)(c_u, c_hand, c_slot, c_start, c_ep)
        # dedup through the open-addressing table (linear probing, TABLE_PROBES slots)
        probe = (_hash(c_key)[:, None] + jnp.arange(TABLE_PROBES, dtype=jnp.uint32)) & (
            jnp.uint32(table_size - 1))
        probe = probe.astype(jnp.int32)
        entry = c.table[probe]  # [child, probe]: queue index + 1, EMPTY_ENTRY = free
        seen = jnp.any((entry != EMPTY_ENTRY) & jnp.all(
            q.key[jnp.maximum(entry - 1, 0)] == c_key[:, None, :], axis=-1), axis=1)
        new = c_ok & ~seen
        pos = c.tail + jnp.cumsum(new) - 1
        fits = new & (pos < cap)
        at = jnp.where(fits, pos, cap)  # out of range: dropped
        table, lost = _table_insert(c.table, probe, fits, pos + 1)
        overflow = c.overflow | jnp.any(new & (pos >= cap)) | lost
        q = ChainQueue(
            unions=q.unions.at[at].set(c_u.astype(jnp.int8), mode="drop"),
            hand=q.hand.at[at].set(c_hand, mode="drop"),
            slot=q.slot.at[at].set(c_slot, mode="drop"),
            start=q.start.at[at].set(c_start, mode="drop"),
            ep_used=q.ep_used.at[at].set(c_ep, mode="drop"),
            key=q.key.at[at].set(c_key, mode="drop"))
        tail = jnp.minimum(c.tail + jnp.sum(new), cap)
        return ThreatCarry(head=c.head + 1, tail=tail, queue=q, table=table,
                           threatened=c.threatened | row, overflow=overflow,
                           current=read(q, c.head + 1))

    # the start states need no table entries: no chain returns to a start square
    init = ThreatCarry(head=jnp.int32(0), tail=n0.astype(jnp.int32), queue=queue,
                       table=jnp.full(table_size, EMPTY_ENTRY, jnp.int32),
                       threatened=jnp.zeros(64, jnp.bool_), overflow=jnp.bool_(False),
                       current=read(queue, 0))
    out = jax.lax.while_loop(lambda c: c.head < c.tail, body, init)
    return out.threatened, out.tail, out.overflow


# Under vmap the search runs only for the games that need it, THREAT_CHUNK at a time: a
# vmapped while loop costs its longest lane, and castling checks are rare in play.
THREAT_CHUNK = 4


def _no_threats():
    return jnp.zeros(64, jnp.bool_)


def _search_flagged(board, color, ep, capacity, active=True):
    threatened, _, overflow = threat_search(board, color, ep, capacity, active)
    return threatened | overflow, overflow


def make_castle_threats(capacities=(THREAT_CAPACITY, THREAT_CAPACITY_LARGE)):
    """Builds castle_threats(need, board, color, ep) for a (first, second) pair of search
    capacities (tests use small ones to reach the overflow paths)."""
    small, large = capacities
    if not (isinstance(small, int) and isinstance(large, int) and MAX_UNIONS <= small <= large):
        raise ValueError(f"capacities must be two ints with {MAX_UNIONS} <= first <= second, "
                         f"got {capacities!r}")

    # jitted: their constant tables stay inside their own jaxprs (custom_vmap needs a body
    # without closed-over constants, which a surrounding vmapped lax.cond would batch)
    @jax.jit
    def search_large(board, color, ep):
        return _search_flagged(board, color, ep, large)[0]

    @jax.jit
    def search_one(board, color, ep):
        threatened, overflow = _search_flagged(board, color, ep, small)
        return jax.lax.cond(overflow, lambda: search_large(board, color, ep), lambda: threatened)

    @jax.jit
    @jax.vmap
    def search_chunk(active, board, color, ep):
        # padding lanes (active False) search nothing, so they end the while loop at once
        threatened, overflow = _search_flagged(board, color, ep, small, active)
        return threatened & active, overflow & active

    def one(need, board, color, ep):
        return jax.lax.cond(need, lambda: search_one(board, color, ep), _no_threats)

    @custom_batching.custom_vmap
    def castle_threats(need, board, color, ep):
        """threats(board, color, ep) where `need`, else all False; batched: searched only for
        the games that need it, a chunk at a time."""
        return one(need, board, color, ep)

    @castle_threats.def_vmap
    def _vmap_rule(axis_size, in_batched, need, board, color, ep):
        args = [a if b else jnp.broadcast_to(a, (axis_size,) + jnp.shape(a))
                for a, b in zip((need, board, color, ep), in_batched)]
        need, board, color, ep = args
        if axis_size == 1:  # measured: a while loop here makes batch-1 steps 5x slower than a cond
            return one(need[0], board[0], color[0], ep[0])[None], True
        chunk = min(axis_size, THREAT_CHUNK)

        def body(c):
            pending, out, over = c
            idx = jnp.nonzero(pending, size=chunk, fill_value=axis_size)[0]
            active = idx < axis_size
            safe = jnp.minimum(idx, axis_size - 1)
            thr, ovf = search_chunk(active, board[safe], color[safe], ep[safe])
            out = out.at[idx].set(thr, mode="drop")
            over = over.at[idx].set(ovf, mode="drop")
            return pending.at[idx].set(False, mode="drop"), out, over

        zeros = jnp.zeros(axis_size, jnp.bool_)
        _, out, over = jax.lax.while_loop(lambda c: jnp.any(c[0]), body,
                                          (need, jnp.zeros((axis_size, 64), jnp.bool_), zeros))

        def again(c):  # the games that overflowed the first search, one at a time
            pending, out = c
            i = jnp.argmax(pending)
            return pending.at[i].set(False), out.at[i].set(search_large(board[i], color[i], ep[i]))

        _, out = jax.lax.while_loop(lambda c: jnp.any(c[0]), again, (over, out))
        return out, True

    return castle_threats


castle_threats = make_castle_threats()


def threats(board, color, ep):
    """bool[64]: squares `color` threatens through chains, as the engine's castling check; all
    squares when even the second search overflows (castling is then forbidden). Batches under
    vmap as castle_threats does."""
    return castle_threats(jnp.bool_(True), board, color, ep)


# --------------------------------------------------------------------------- move generation
def _cps(mine, theirs):
    """Squares where a single piece may be placed: an opponent is there or no own piece is."""
    return (theirs > 0) | (mine == 0)


def lift_mask(board, color, ep):
    """bool[64] own squares whose piece (or pair) has at least one place target."""
    mine, theirs = board[color], board[1 - color]
    empty = (mine == 0) & (theirs == 0)
    pair = (mine > 0) & (theirs > 0)
    cps = _cps(mine, theirs)
    first = jnp.asarray(RAY[:, :, 0])  # [64, 8]
    first_ok = _gather(empty, first) | (~pair[:, None] & _gather(cps, first))
    orth = jnp.any(first_ok[:, :4], axis=1)
    diag = jnp.any(first_ok[:, 4:], axis=1)
    kn = jnp.asarray(KNIGHT_T)
    kn_ok = jnp.any(jnp.where(pair[:, None], _gather(empty, kn), _gather(cps, kn)), axis=1)
    king_ok = jnp.any(_gather(empty, jnp.asarray(NEIGH)), axis=1)
    fwd = pawn_forward(color)
    dg = pawn_diagonals(color)
    ep_hit = (dg == ep) & (ep >= 0)
    strike = jnp.any(_gather(theirs > 0, dg) | ep_hit, axis=1) & ~pair
    pawn_ok = _gather(empty, fwd) | strike
    ok = jnp.stack([jnp.zeros(64, jnp.bool_), pawn_ok, orth, kn_ok, diag, orth | diag, king_ok])
    return (mine > 0) & jnp.take_along_axis(ok, mine.astype(jnp.int32)[None, :], axis=0)[0]


def place_mask(board, color, hand_piece, hand_partner, hand_pos, ep, castling):
    """bool[64] squares the piece (or pair) in hand may be placed on."""
    mine, theirs = board[color], board[1 - color]
    empty = (mine == 0) & (theirs == 0)
    occ = ~empty
    pair = hand_partner > 0
    cps = _cps(mine, theirs)
    p = jnp.clip(hand_pos, 0, 63)
    # sliders from the hand square only
    rook, bishop = ray_squares(ray_targets(jnp.asarray(RAY)[p], occ, cps & ~pair), p)

    def scatter(m, idx):
        return jnp.zeros(65, jnp.bool_).at[idx.reshape(-1)].max(m.reshape(-1))[:64]

    kn_sq = jnp.asarray(KNIGHT_T)[p]
    kn = scatter(jnp.where(pair, _gather(empty, kn_sq), _gather(cps, kn_sq)), kn_sq)
    # pawn: forward steps onto empty squares, two from its start rank (or behind it)
    fwd1 = pawn_forward(color)[p]
    fwd2 = _gather(pawn_forward(color), fwd1)
    row = p // 8
    double_ok = jnp.where(color == 0, row <= 1, row >= 6)
    e1 = _gather(empty, fwd1)
    e2 = _gather(empty, fwd2) & e1 & double_ok
    dg = pawn_diagonals(color)[p]
    strike = (_gather(theirs > 0, dg) | ((dg == ep) & (ep >= 0))) & ~pair
    pawn = scatter(jnp.stack([e1, e2, strike[0], strike[1]]),
                   jnp.stack([fwd1, fwd2, dg[0], dg[1]]))
    # king: empty neighbours, plus castling places
    ng = jnp.asarray(NEIGH)[p]
    king = scatter(_gather(empty, ng), ng)
    opts = jnp.asarray([0, 1]) + 2 * color
    room = jnp.all(~jnp.asarray(C_EMPTY)[opts] | empty[None, :], axis=1)
    avail = castling[opts] & room
    need = jnp.any(avail) & (hand_piece == KING)
    thr = castle_threats(need, board, 1 - color, ep)
    safe = ~jnp.any(jnp.asarray(C_SAFE)[opts] & thr[None, :], axis=1)
    castle_ok = avail & safe & need
    king = king | jnp.zeros(65, jnp.bool_).at[jnp.asarray(C_KING_TO)[opts]].max(castle_ok)[:64]
    table = jnp.stack([jnp.zeros(64, jnp.bool_), pawn, rook, kn, bishop, rook | bishop, king])
    return table[jnp.clip(hand_piece, 0, 6)] & (hand_piece > 0)


def legal_mask(board, color, required, hand_piece, hand_partner, hand_pos, ep, castling):
    """bool[132] legal actions in the mover's frame (squares mirrored for Black)."""
    lm = lift_mask(board, color, ep) & (required == LIFT)
    pm = place_mask(board, color, hand_piece, hand_partner, hand_pos, ep, castling)
    pm = pm & (required == PLACE)
    promote = (required == PROMOTE_THEN_LIFT) | (required == PROMOTE_THEN_PLACE) | (
        required == PROMOTE_THEN_FINISH)
    rel = flip(jnp.arange(64), color)  # relative index -> absolute square
    return jnp.concatenate([lm[rel], pm[rel], jnp.broadcast_to(promote, (4,))])


# --------------------------------------------------------------------------- hashing
def position_hash(board, color, ep, castling):
    """uint32[2]: the repetition key (board, side to move, en passant square, castling)."""
    sq = jnp.arange(64)
    zp = jnp.asarray(Z_PIECE)
    h = (zp[:, 0, sq, board[0].astype(jnp.int32)].sum(axis=1, dtype=jnp.uint32)
         + zp[:, 1, sq, board[1].astype(jnp.int32)].sum(axis=1, dtype=jnp.uint32))
    h = h + jnp.asarray(Z_SIDE)[:, color] + jnp.asarray(Z_EP)[:, jnp.where(ep >= 0, ep, 64)]
    h = h + jnp.sum(jnp.where(castling[None, :], jnp.asarray(Z_CASTLE), 0), axis=1,
                    dtype=jnp.uint32)
    return h.astype(jnp.uint32)


# --------------------------------------------------------------------------- transitions
def _swap(board, a, b):
    """Exchange the contents (both colours) of squares a and b."""
    ca, cb = board[:, a], board[:, b]
    return board.at[:, a].set(cb).at[:, b].set(ca)


def record_position(p, repetitions=DRAW_AFTER_REPETITIONS):
    """The engine's `record_position`: after a finished move, check both draw rules.

    `p` is a dict of position fields; returns it updated (termination, history). A position
    seen `repetitions` times since the last progress draws (0 switches the rule off).
    """
    running = p["termination"] == RUNNING
    limit = p["no_progress"] >= NO_PROGRESS_LIMIT
    h = position_hash(p["board"], p["color"], p["ep"], p["castling"])
    idx = jnp.arange(REP_CAP)
    seen = jnp.sum((idx < p["rep_len"]) & jnp.all(p["rep_hist"] == h[None, :], axis=1))
    repeated = (seen + 1 >= repetitions) & (repetitions > 0)
    write = running & ~limit
    hist = jnp.where(write & (idx == jnp.minimum(p["rep_len"], REP_CAP - 1))[:, None],
                     h[None, :], p["rep_hist"])
    term = jnp.where(running & limit, NO_PROGRESS_DRAW,
                     jnp.where(write & repeated, REPETITION_DRAW, p["termination"]))
    return dict(p, rep_hist=hist, rep_len=jnp.where(write, jnp.minimum(p["rep_len"] + 1, REP_CAP),
                                                    p["rep_len"]),
                termination=term)


def _progress(p):
    return dict(p, no_progress=jnp.zeros_like(p["no_progress"]),
                rep_len=jnp.zeros_like(p["rep_len"]))


def _select(flag, a, b):
    return jax.tree_util.tree_map(lambda x, y: jnp.where(flag, x, y), a, b)


def _finish_turn(p, rep, record=True):
    """Hand the turn to the opponent (required action Lift) and record the position."""
    p = dict(p, color=1 - p["color"], required=jnp.int32(LIFT))
    return record_position(p, rep) if record else p


def _lift(p, sq):
    board, c = p["board"], p["color"]
    piece, partner = board[c, sq], board[1 - c, sq]
    rook = (piece == ROOK) | (partner == ROOK)
    castling = p["castling"] & ~(rook & (jnp.asarray(C_ROOK_FROM) == sq))
    board = board.at[:, sq].set(0)
    return dict(p, board=board, castling=castling, hand_piece=piece.astype(jnp.int32),
                hand_partner=partner.astype(jnp.int32), hand_pos=sq, required=jnp.int32(PLACE),
                no_progress=p["no_progress"] + 1)


def _place_king(p, t, rep):
    board, c = p["board"], p["color"]
    opts = jnp.asarray([0, 1]) + 2 * c
    hit = p["castling"][opts] & (jnp.asarray(C_KING_TO)[opts] == t)
    rf = jnp.asarray(C_ROOK_FROM)[opts]
    rt = jnp.asarray(C_ROOK_TO)[opts]
    board = _select(hit[0], _swap(board, rf[0], rt[0]), board)
    board = _select(hit[1], _swap(board, rf[1], rt[1]), board)
    board = board.at[c, t].set(KING)
    castling = p["castling"] & ~((jnp.arange(4) // 2) == c)
    p = dict(p, board=board, castling=castling, ep=jnp.int32(-1), hand_piece=jnp.int32(0),
             hand_partner=jnp.int32(0), hand_pos=jnp.int32(-1))
    return _finish_turn(p, rep)


def _place_single(p, t, rep):
    board, c = p["board"], p["color"]
    piece, src = p["hand_piece"], p["hand_pos"]
    fwd = 8 * forward(c)
    en_passant = (piece == PAWN) & (p["ep"] == t) & (src + fwd != t)
    board = _select(en_passant, _swap(board, t, jnp.clip(t - fwd, 0, 63)), board)
    ep = jnp.where(en_passant, -1, p["ep"])
    promo_row = jnp.where(c == 0, 7, 0)
    promotion = jnp.where((piece == PAWN) & (t // 8 == promo_row), t, p["promotion"])
    below = board[c, t].astype(jnp.int32)
    board = board.at[c, t].set(piece.astype(board.dtype))
    # a chain: our piece from the union at t is now in hand
    chain = dict(p, board=board, ep=ep, promotion=promotion, hand_piece=below,
                 hand_partner=jnp.int32(0), hand_pos=t,
                 required=jnp.where(promotion >= 0, PROMOTE_THEN_PLACE, PLACE).astype(jnp.int32))
    # not a chain: the move ends (perhaps with a new union, perhaps with the king's)
    partner = board[1 - c, t]
    start_row = jnp.where(c == 0, 1, 6)
    double = (piece == PAWN) & (src // 8 == start_row) & (jnp.abs(t // 8 - src // 8) == 2)
    end = dict(p, board=board, promotion=promotion, ep=jnp.where(double, src + fwd, -1),
               hand_piece=jnp.int32(0), hand_partner=jnp.int32(0), hand_pos=jnp.int32(-1))
    end = _select(partner > 0, _progress(end), end)
    end = dict(end, termination=jnp.where(partner == KING, PACO, end["termination"]),
               winner=jnp.where(partner == KING, c, end["winner"]))
    finish = _finish_turn(end, rep)
    wait = dict(end, required=jnp.int32(PROMOTE_THEN_FINISH))
    end = _select(promotion >= 0, wait, finish)
    return _select(below > 0, chain, end)


def _place_pair(p, t, rep):
    board, c = p["board"], p["color"]
    piece, partner, src = p["hand_piece"], p["hand_partner"], p["hand_pos"]
    fwd = 8 * forward(c)
    start_row = jnp.where(c == 0, 1, 6)
    double = (piece == PAWN) & (src // 8 == start_row) & (jnp.abs(t // 8 - src // 8) == 2)
    board = board.at[c, t].set(piece.astype(board.dtype)).at[1 - c, t].set(
        partner.astype(board.dtype))
    q = dict(p, board=board, ep=jnp.where(double, src + fwd, -1), hand_piece=jnp.int32(0),
             hand_partner=jnp.int32(0), hand_pos=jnp.int32(-1))
    own = (piece == PAWN) & (t // 8 == jnp.where(c == 0, 7, 0))
    theirs = (partner == PAWN) & (t // 8 == jnp.where(c == 0, 0, 7))
    own_s = dict(q, promotion=t, required=jnp.int32(PROMOTE_THEN_FINISH))
    # the opponent's pawn reached its last row: they promote at the start of their turn
    theirs_s = dict(_finish_turn(q, rep, record=False), promotion=t,
                    required=jnp.int32(PROMOTE_THEN_LIFT))
    return _select(own, own_s, _select(theirs, theirs_s, _finish_turn(q, rep)))


def _place(p, t, rep):
    single = _place_single(p, t, rep)
    king = _place_king(p, t, rep)
    pair = _place_pair(p, t, rep)
    return _select(p["hand_partner"] > 0, pair, _select(p["hand_piece"] == KING, king, single))


def _promote(p, k, rep):
    c, sq = p["color"], jnp.clip(p["promotion"], 0, 63)
    board = p["board"].at[c, sq].set(jnp.asarray(PROMOTE_TYPES)[k].astype(p["board"].dtype))
    q = _progress(dict(p, board=board, promotion=jnp.int32(-1)))
    then_lift = record_position(dict(q, required=jnp.int32(LIFT)), rep)
    then_place = dict(q, required=jnp.int32(PLACE))
    finish = _finish_turn(dict(q, ep=jnp.int32(-1)), rep)
    r = p["required"]
    return _select(r == PROMOTE_THEN_LIFT, then_lift,
                   _select(r == PROMOTE_THEN_PLACE, then_place, finish))


def apply_action(p, action, repetitions=DRAW_AFTER_REPETITIONS):
    """Apply a legal action (mover's frame) to the position dict `p`."""
    c = p["color"]
    sq = flip(action % 64, c).astype(jnp.int32)
    lifted = _lift(p, sq)
    placed = _place(p, sq, repetitions)
    promoted = _promote(p, jnp.clip(action - 128, 0, 3), repetitions)
    return _select(action < 64, lifted, _select(action < 128, placed, promoted))
