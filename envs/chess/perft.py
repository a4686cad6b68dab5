"""Batched perft (move-path counting) over the raw move generator, for tests and benchmarks.

Perft counts legal move sequences and ignores draw rules, so it runs on the position core
(`legal_moves` + `apply_move`) rather than on `Chess.step`, which stops at draws.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from envs.chess import core


def _to_next(board, color, castling, ep, action):
    us, them, castle, ep_m = core.to_mover(board, color, castling, ep)
    us2, them2, castle2, ep2, _, _ = core.apply_move(us, them, castle, ep_m, jnp.int32(0), action)
    board2, castling2, ep_abs = core.to_absolute(us2, them2, color, castle2, ep2)
    return board2, 1 - color, castling2, ep_abs


def _mask(board, color, castling, ep):
    us, them, castle, ep_m = core.to_mover(board, color, castling, ep)
    return core.legal_moves(us, them, castle[:2], ep_m)[0]


@lru_cache(maxsize=None)
def _fns(chunk: int):
    mask_fn = jax.jit(jax.vmap(_mask))
    count_fn = jax.jit(lambda *a: jnp.sum(jax.vmap(_mask)(*a), axis=1))
    next_fn = jax.jit(jax.vmap(_to_next))
    return mask_fn, count_fn, next_fn


def _chunks(arrays, chunk):
    n = len(arrays[0])
    for s in range(0, n, chunk):
        part = [a[s : s + chunk] for a in arrays]
        m = len(part[0])
        if m < chunk:  # pad to the fixed chunk size so that nothing recompiles
            part = [np.concatenate([p, np.repeat(p[:1], chunk - m, axis=0)]) for p in part]
        yield m, part


def perft(board, color, castling, ep, depth: int, chunk: int = 2048) -> int:
    """Number of legal move paths of length `depth` from one position (numpy inputs)."""
    mask_fn, count_fn, next_fn = _fns(chunk)
    frontier = [np.asarray(board)[None], np.asarray(color)[None], np.asarray(castling)[None],
                np.asarray(ep)[None]]
    if depth == 0:
        return 1
    for _ in range(depth - 1):
        new = [[], [], [], []]
        for m, part in _chunks(frontier, chunk):
            mask = np.asarray(mask_fn(*part))[:m]
            parent, action = np.nonzero(mask)
            for s in range(0, len(parent), chunk):
                p, a = parent[s : s + chunk], action[s : s + chunk]
                k = len(p)
                pad = chunk - k
                args = [x[np.concatenate([p, np.zeros(pad, p.dtype)])] for x in part]
                act = np.concatenate([a, np.zeros(pad, a.dtype)]).astype(np.int32)
                out = next_fn(*args, act)
                for lst, x in zip(new, out):
                    lst.append(np.asarray(x)[:k])
        frontier = [np.concatenate(x) for x in new]
        if len(frontier[0]) == 0:
            return 0
    total = 0
    for m, part in _chunks(frontier, chunk):
        total += int(np.asarray(count_fn(*part))[:m].sum())
    return total
