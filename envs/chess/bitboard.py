"""64-bit bitboards as pairs of uint32 words, for JAX without `jax_enable_x64`.

Square index = rank * 8 + file (a1 = 0, h8 = 63). `lo` holds squares 0..31 (ranks 1-4), `hi`
squares 32..63. Every operation is elementwise on same-shaped `lo`/`hi` arrays, so XLA fuses long
chains of them into one loop; shift amounts are static Python ints.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

U32 = jnp.uint32
_M32 = 0xFFFFFFFF


class BB(NamedTuple):
    """A bitboard (or an array of bitboards): two uint32 arrays of the same shape."""

    lo: jnp.ndarray
    hi: jnp.ndarray

    def __and__(self, o: "BB") -> "BB":
        return BB(self.lo & o.lo, self.hi & o.hi)

    def __or__(self, o: "BB") -> "BB":
        return BB(self.lo | o.lo, self.hi | o.hi)

    def __xor__(self, o: "BB") -> "BB":
        return BB(self.lo ^ o.lo, self.hi ^ o.hi)

    def __invert__(self) -> "BB":
        return BB(~self.lo, ~self.hi)

    def __getitem__(self, idx) -> "BB":  # type: ignore[override]
        return BB(self.lo[idx], self.hi[idx])


def const(x: int) -> BB:
    """A constant bitboard from a Python int."""
    return BB(jnp.uint32(x & _M32), jnp.uint32((x >> 32) & _M32))


def from_array(a: jnp.ndarray) -> BB:
    """uint32[..., 2] -> BB."""
    return BB(a[..., 0], a[..., 1])


def to_array(b: BB) -> jnp.ndarray:
    """BB -> uint32[..., 2]."""
    return jnp.stack([b.lo, b.hi], axis=-1)


def stack(bbs) -> BB:
    return BB(jnp.stack([b.lo for b in bbs]), jnp.stack([b.hi for b in bbs]))


def zeros_like(b: BB) -> BB:
    z = jnp.zeros_like(b.lo)
    return BB(z, z)


def nz(b: BB) -> jnp.ndarray:
    """bool: the bitboard is not empty."""
    return (b.lo | b.hi) != 0


def select(cond, a: BB, b: BB) -> BB:
    return BB(jnp.where(cond, a.lo, b.lo), jnp.where(cond, a.hi, b.hi))


def mask_if(cond, a: BB) -> BB:
    """`a` where `cond`, else empty (cond broadcasts)."""
    m = jnp.where(cond, jnp.uint32(_M32), jnp.uint32(0))
    return BB(a.lo & m, a.hi & m)


def popcount(b: BB) -> jnp.ndarray:
    return (jax.lax.population_count(b.lo) + jax.lax.population_count(b.hi)).astype(jnp.int32)


def square_bb(sq) -> BB:
    """The single-bit bitboard of square `sq` (traced int; out-of-range -> empty)."""
    sq = jnp.asarray(sq, jnp.int32)
    one = jnp.uint32(1)
    lo = jnp.where((sq >= 0) & (sq < 32), one << jnp.clip(sq, 0, 31).astype(U32), 0)
    hi = jnp.where((sq >= 32) & (sq < 64), one << jnp.clip(sq - 32, 0, 31).astype(U32), 0)
    return BB(lo.astype(U32), hi.astype(U32))


def shl(b: BB, n: int) -> BB:
    """Logical shift towards higher squares by n bits (n may be negative)."""
    if n == 0:
        return b
    if n < 0:
        return shr(b, -n)
    if n >= 64:
        return zeros_like(b)
    if n >= 32:
        return BB(jnp.zeros_like(b.lo), b.lo << U32(n - 32))
    return BB(b.lo << U32(n), (b.hi << U32(n)) | (b.lo >> U32(32 - n)))


def shr(b: BB, n: int) -> BB:
    """Logical shift towards lower squares by n bits (n may be negative)."""
    if n == 0:
        return b
    if n < 0:
        return shl(b, -n)
    if n >= 64:
        return zeros_like(b)
    if n >= 32:
        return BB(b.hi >> U32(n - 32), jnp.zeros_like(b.hi))
    return BB((b.lo >> U32(n)) | (b.hi << U32(32 - n)), b.hi >> U32(n))


def _bswap32(x):
    return (
        (x >> U32(24))
        | ((x >> U32(8)) & U32(0xFF00))
        | ((x << U32(8)) & U32(0xFF0000))
        | (x << U32(24))
    )


def mirror(b: BB) -> BB:
    """Rank mirror (rank r -> 7 - r, files kept): a byte swap of the 64-bit word."""
    return BB(_bswap32(b.hi), _bswap32(b.lo))


# ------------------------------------------------------------------------ directions
# N, NE, E, SE, S, SW, W, NW (docs/chess.md's order) as square deltas.
DIRS = (8, 9, 1, -7, -8, -9, -1, 7)
FILE_A = 0x0101010101010101
FILE_H = 0x8080808080808080
NOT_A = ~FILE_A & 0xFFFFFFFFFFFFFFFF
NOT_H = ~FILE_H & 0xFFFFFFFFFFFFFFFF


def _wrap_mask(delta: int) -> int:
    # a step that moves one file east must not land on file A (it wrapped), and vice versa
    if delta in (9, 1, -7):
        return NOT_A
    if delta in (-9, -1, 7):
        return NOT_H
    return 0xFFFFFFFFFFFFFFFF


def step(b: BB, delta: int) -> BB:
    """Move every bit one step in direction `delta` (bits leaving the board vanish)."""
    m = _wrap_mask(delta)
    s = shl(b, delta)
    if m == 0xFFFFFFFFFFFFFFFF:
        return s
    return s & const(m)


def fill(gen: BB, empty: BB, delta: int) -> BB:
    """Kogge-Stone occluded fill: `gen` extended through `empty` squares along `delta`."""
    m = _wrap_mask(delta)
    pro = empty if m == 0xFFFFFFFFFFFFFFFF else empty & const(m)
    gen = gen | (pro & shl(gen, delta))
    pro = pro & shl(pro, delta)
    gen = gen | (pro & shl(gen, 2 * delta))
    pro = pro & shl(pro, 2 * delta)
    gen = gen | (pro & shl(gen, 4 * delta))
    return gen


KNIGHT_DELTAS = (  # docs/chess.md's order: (rank_diff, file_diff)
    (2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1),
)


def knight_step(b: BB, k: int) -> BB:
    """Move every bit by knight offset k (docs/chess.md's order), dropping bits that leave."""
    dr, df = KNIGHT_DELTAS[k]
    fmask = 0
    for f in range(8):
        if 0 <= f + df < 8:
            fmask |= FILE_A << (f + df)
    return shl(b, dr * 8 + df) & const(fmask)


def knight_attacks(b: BB) -> BB:
    out = knight_step(b, 0)
    for k in range(1, 8):
        out = out | knight_step(b, k)
    return out


def king_attacks(b: BB) -> BB:
    out = step(b, DIRS[0])
    for d in DIRS[1:]:
        out = out | step(b, d)
    return out


def int_to_words(x: int) -> np.ndarray:
    return np.array([x & _M32, (x >> 32) & _M32], dtype=np.uint32)


# ------------------------------------------------------------- per-lane shifts
# Shifting a vector of bitboards by a different static amount per lane keeps the HLO small
# (one op per lane group instead of one unrolled chain per direction), which is what keeps the
# compile time of `step` low. Shifts by >= 32 give 0 in XLA, which switches terms off.
def _lane_shift_consts(n):
    n = np.asarray(n, np.int64)
    off = np.full(n.shape, 32, np.int64)
    A, B, C, D, E, F, G, H = (off.copy() for _ in range(8))
    a = np.abs(n)
    small_l = (n >= 0) & (n < 32)
    big_l = n >= 32
    small_r = (n < 0) & (n > -32)
    big_r = n <= -32
    A[small_l] = a[small_l]
    E[small_l] = a[small_l]
    H[small_l & (a > 0)] = 32 - a[small_l & (a > 0)]
    G[big_l] = a[big_l] - 32
    B[small_r] = a[small_r]
    C[small_r] = 32 - a[small_r]
    F[small_r] = a[small_r]
    D[big_r] = a[big_r] - 32
    return [x.astype(np.uint32) for x in (A, B, C, D, E, F, G, H)]


def _terms(pairs):
    out = None
    for x, op, s in pairs:
        if np.all(s >= 32):
            continue  # switched off in every lane
        t = (x << jnp.asarray(s)) if op == "<<" else (x >> jnp.asarray(s))
        out = t if out is None else out | t
    return out


def vshl(b: BB, n) -> BB:
    """Shift each lane (trailing axes of `b` broadcast against `n`) by its own static amount
    `n` (positive: towards higher squares)."""
    A, B_, C, D, E, F, G, H = _lane_shift_consts(n)
    lo = _terms([(b.lo, "<<", A), (b.lo, ">>", B_), (b.hi, "<<", C), (b.hi, ">>", D)])
    hi = _terms([(b.hi, "<<", E), (b.hi, ">>", F), (b.lo, "<<", G), (b.lo, ">>", H)])
    zero = jnp.zeros(jnp.broadcast_shapes(b.lo.shape, np.shape(n)), U32)
    return BB(zero if lo is None else lo + zero, zero if hi is None else hi + zero)


def _lane_wrap(deltas) -> BB:
    ms = [_wrap_mask(int(d)) for d in np.ravel(deltas)]
    lo = np.array([m & _M32 for m in ms], np.uint32).reshape(np.shape(deltas))
    hi = np.array([(m >> 32) & _M32 for m in ms], np.uint32).reshape(np.shape(deltas))
    return BB(jnp.asarray(lo), jnp.asarray(hi))


DIRS_NP = np.array(DIRS)


def vstep(b: BB) -> BB:
    """One step along each of the 8 directions: lane i of `b` (last axis 8) moves by DIRS[i]."""
    return vshl(b, DIRS_NP) & _lane_wrap(DIRS_NP)


def vfill(gen: BB, empty: BB) -> BB:
    """Kogge-Stone occluded fill along the 8 directions (last axis of gen = direction)."""
    pro = empty & _lane_wrap(DIRS_NP)
    gen = gen | (pro & vshl(gen, DIRS_NP))
    pro = pro & vshl(pro, DIRS_NP)
    gen = gen | (pro & vshl(gen, 2 * DIRS_NP))
    pro = pro & vshl(pro, 2 * DIRS_NP)
    gen = gen | (pro & vshl(gen, 4 * DIRS_NP))
    return gen


def vray(gen: BB, empty: BB) -> BB:
    """Slider attacks along the 8 directions, up to and including the first blocker."""
    return vstep(vfill(gen, empty))


KNIGHT_NP = np.array([dr * 8 + df for dr, df in KNIGHT_DELTAS])


def _knight_masks() -> BB:
    lo, hi = [], []
    for dr, df in KNIGHT_DELTAS:
        fmask = 0
        for f in range(8):
            if 0 <= f + df < 8:
                fmask |= FILE_A << (f + df)
        lo.append(fmask & _M32)
        hi.append((fmask >> 32) & _M32)
    return BB(jnp.asarray(np.array(lo, np.uint32)), jnp.asarray(np.array(hi, np.uint32)))


def vknight(b: BB) -> BB:
    """Lane k of the result: `b` moved by knight offset k (b broadcast over the last axis 8)."""
    return vshl(b, KNIGHT_NP) & _knight_masks()


def reduce_or(b: BB, axis: int = -1) -> BB:
    return BB(jnp.bitwise_or.reduce(b.lo, axis=axis), jnp.bitwise_or.reduce(b.hi, axis=axis))


def expand(b: BB, n: int = 8) -> BB:
    """Broadcast a bitboard (array) along a new trailing axis of size n."""
    return BB(jnp.broadcast_to(b.lo[..., None], b.lo.shape + (n,)),
              jnp.broadcast_to(b.hi[..., None], b.hi.shape + (n,)))


def to_bits_sq_major(b: BB) -> jnp.ndarray:
    """uint32[64, *b.shape] of 0/1: square-major bits (no transpose needed for from-major
    layouts such as the action mask and the channels-last observation)."""
    sh = jnp.arange(32, dtype=U32).reshape((32,) + (1,) * b.lo.ndim)
    lo = (b.lo[None] >> sh) & U32(1)
    hi = (b.hi[None] >> sh) & U32(1)
    return jnp.concatenate([lo, hi], axis=0)
