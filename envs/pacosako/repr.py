"""The ML representations of docs/pacosako.md: a dense 8x8xL tensor and the compact
index vector (uint32) that expands into it without branches.

Layer layout (flattened index = square + 64 * layer, square = 8 * rank + file as seen from the
viewpoint): 0-11 settled pieces (bottom player's pawn..king, then the top player's), 12-23 lifted
pieces, 24 en passant, 25-28 castling (bottom queen, bottom king, top queen, top king), then
[active player if not use_perspective], [must lift], [must promote], half-move clock / 100.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from envs.pacosako import rules as R

PIECE_SLOTS = 32
# the half-move clock layer value n / 100, divided once in numpy so that every path (eager,
# jit, expansion) gives bit-identical floats
CLOCK = np.arange(101, dtype=np.float32) / np.float32(100.0)


def num_layers(use_perspective: bool, with_must_lift: bool, with_must_promote: bool) -> int:
    return 24 + 1 + 4 + (0 if use_perspective else 1) + int(with_must_lift) + int(
        with_must_promote) + 1


def index_length(use_perspective: bool, with_must_lift: bool, with_must_promote: bool) -> int:
    return PIECE_SLOTS + 1 + 4 + (0 if use_perspective else 1) + int(with_must_lift) + int(
        with_must_promote) + 1


def _viewpoint(color, use_perspective):
    return color if use_perspective else jnp.zeros_like(color)


def _flags(required):
    must_lift = (required == R.PROMOTE_THEN_LIFT) | (required == R.LIFT)
    must_promote = (required == R.PROMOTE_THEN_LIFT) | (required == R.PROMOTE_THEN_PLACE) | (
        required == R.PROMOTE_THEN_FINISH)
    return must_lift, must_promote


def _castling_view(castling, view):
    return jnp.where(view == 0, castling, castling[jnp.array([2, 3, 0, 1])])


def index_one(p, use_perspective, with_must_lift, with_must_promote):
    """uint32[index_length] for one position dict `p` (fields of PacoSakoState)."""
    color = p["color"]
    view = _viewpoint(color, use_perspective)
    sq = jnp.arange(64)
    vsq = R.flip(sq, view)
    board = p["board"].astype(jnp.int32)
    # settled pieces, White's squares first then Black's, each in square order (the engine's)
    rel = (jnp.arange(2) != view)[:, None]  # colour index relative to the viewpoint
    settled = vsq[None, :] + 64 * (board - 1 + 6 * rel)
    present = (board > 0).reshape(-1)
    hp, hq, pos = p["hand_piece"], p["hand_partner"], jnp.clip(p["hand_pos"], 0, 63)
    vpos = R.flip(pos, view)
    own_rel = (color != view).astype(jnp.int32)
    lifted = jnp.stack([vpos + 64 * (hp - 1 + 6 * (own_rel + 2)),
                        vpos + 64 * (hq - 1 + 6 * ((1 - own_rel) + 2))])
    values = jnp.concatenate([settled.reshape(-1), lifted])
    present = jnp.concatenate([present, jnp.stack([hp > 0, hq > 0])])
    # stable compaction of the present entries, padded with the first one (a no-op in the scatter)
    order = jnp.argsort(~present, stable=True)
    pieces = values[order[:PIECE_SLOTS]]
    count = jnp.sum(present)
    pieces = jnp.where(jnp.arange(PIECE_SLOTS) < count, pieces, pieces[0])
    ep = p["ep"]
    ep_idx = jnp.where(ep >= 0, 64 * 24 + R.flip(jnp.clip(ep, 0, 63), view), pieces[0])
    parts = [pieces, ep_idx[None], _castling_view(p["castling"], view).astype(jnp.int32)]
    must_lift, must_promote = _flags(p["required"])
    if not use_perspective:
        parts.append(color[None].astype(jnp.int32))
    if with_must_lift:
        parts.append(must_lift[None].astype(jnp.int32))
    if with_must_promote:
        parts.append(must_promote[None].astype(jnp.int32))
    parts.append(jnp.clip(p["no_progress"], 0, 100)[None].astype(jnp.int32))
    return jnp.concatenate(parts).astype(jnp.uint32)


def tensor_one(p, use_perspective, with_must_lift, with_must_promote, viewer=None):
    """float32[8, 8, L] built directly from the position (not through the index vector).

    `viewer` (default: the player to act) is the bottom player when use_perspective is set.
    """
    color = p["color"]
    view = _viewpoint(color if viewer is None else viewer, use_perspective)
    sq = jnp.arange(64)
    src = R.flip(sq, view)  # the absolute square shown at each viewpoint square
    board = p["board"].astype(jnp.int32)[:, src]  # [2 abs colour, 64 view square]
    types = jnp.arange(1, 7)
    by_color = (board[:, None, :] == types[None, :, None]).astype(jnp.float32)  # [2, 6, 64]
    bottom = jnp.where(view == 0, by_color[0], by_color[1])
    top = jnp.where(view == 0, by_color[1], by_color[0])
    hp, hq, pos = p["hand_piece"], p["hand_partner"], p["hand_pos"]
    at = (src == pos) & (pos >= 0)
    own = (types[:, None] == hp) & at[None, :]
    partner = (types[:, None] == hq) & at[None, :]
    own_bottom = color == view
    lifted_bottom = jnp.where(own_bottom, own, partner).astype(jnp.float32)
    lifted_top = jnp.where(own_bottom, partner, own).astype(jnp.float32)
    ep = (src == p["ep"]) & (p["ep"] >= 0)
    layers = [bottom, top, lifted_bottom, lifted_top, ep[None].astype(jnp.float32)]
    full = lambda v: jnp.broadcast_to(jnp.asarray(v, jnp.float32), (1, 64))
    cast = _castling_view(p["castling"], view).astype(jnp.float32)
    layers.append(jnp.broadcast_to(cast[:, None], (4, 64)))
    must_lift, must_promote = _flags(p["required"])
    if not use_perspective:
        layers.append(full(color))
    if with_must_lift:
        layers.append(full(must_lift))
    if with_must_promote:
        layers.append(full(must_promote))
    layers.append(full(jnp.asarray(CLOCK)[jnp.clip(p["no_progress"], 0, 100)]))
    planes = jnp.concatenate(layers, axis=0)  # [L, 64]
    return planes.T.reshape(8, 8, -1)


def expand_one(indices, use_perspective, with_must_lift, with_must_promote):
    """float32[8, 8, L] from one index vector: one scatter, then constant layers (no branches)."""
    n_layers = num_layers(use_perspective, with_must_lift, with_must_promote)
    idx = indices.astype(jnp.int32)
    flat = jnp.zeros(25 * 64, jnp.float32).at[idx[:PIECE_SLOTS + 1]].set(1.0, mode="drop")
    consts = idx[PIECE_SLOTS + 1:-1].astype(jnp.float32)
    clock = jnp.asarray(CLOCK)[jnp.clip(idx[-1], 0, 100)]
    rest = jnp.concatenate([consts, clock[None]])
    planes = jnp.concatenate([flat.reshape(25, 64),
                              jnp.broadcast_to(rest[:, None], (n_layers - 25, 64))])
    return planes.T.reshape(8, 8, n_layers)


def batched(fn, x, ndim_one):
    """Apply a one-item function over any number of leading batch dimensions."""
    extra = x.ndim - ndim_one
    f = fn
    for _ in range(extra):
        f = jax.vmap(f)
    return f(x)
