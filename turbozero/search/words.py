"""A node's embedding as one row of 32-bit words during a tree search (docs/search.md, "The
tree kernel"; docs/benchmarks.md, "Fewer kernels in the loop body").

Inside the search loop the kernel holds the nodes' embeddings as one `uint32[B, N, W]` array:
the leaves of a state side by side, bit for bit, so that a step gathers its parents and
scatters its children with one gather and one scatter instead of one per leaf (a state may
have 20 leaves; on CPU each gather or scatter on a large array is split over threads, and the
handoffs cost more than the copies: docs/benchmarks.md, "The tree kernel against its model
floor").

Words, not bytes: a leaf of 4-byte numbers is its words as they are (a bit cast of the same
width, which XLA fuses into the consumer or producer: no kernel of its own), where a byte row
made every multi-byte leaf a kernel of its own to pack and another to unpack (on backgammon 11
and 6 of the loop body's kernels). Leaves of 1- or 2-byte numbers and bools are packed 4 or 2
to a word by shifts (elementwise, fused the same way); 8-byte numbers take two words. A leaf
ends on a word boundary (a few bytes of padding per leaf).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

U32 = jnp.uint32


class Words(NamedTuple):
    """Where each leaf of an embedding lies in its row of words (`to_words`)."""

    treedef: Any
    shapes: tuple  # per leaf, the shape after the leading axes
    dtypes: tuple
    counts: tuple  # elements per node


def words_layout(embedding: Any, lead: int) -> Optional[Words]:
    """The packing of an embedding whose leaves have `lead` leading axes, or None where packing
    does not pay (one leaf) or does not apply (a leaf that is not a number or a bool)."""
    leaves, treedef = jax.tree_util.tree_flatten(embedding)
    if len(leaves) < 2 or not all(
            (jnp.issubdtype(x.dtype, jnp.number) or x.dtype == jnp.bool_)
            and x.dtype.itemsize in (1, 2, 4, 8) for x in leaves):
        return None
    shapes = tuple(x.shape[lead:] for x in leaves)
    counts = tuple(int(np.prod(sh, dtype=np.int64)) for sh in shapes)
    return Words(treedef, shapes, tuple(x.dtype for x in leaves), counts)


def _unsigned(size: int):
    return {1: jnp.uint8, 2: jnp.uint16}[size]


def to_words(embedding: Any, lead: int) -> jax.Array:
    """uint32[..., W]: the leaves of one node side by side, bit for bit (bools as 0/1)."""
    parts = []
    for x in jax.tree_util.tree_leaves(embedding):
        head = x.shape[:lead]
        size = x.dtype.itemsize
        flat = x.reshape(head + (-1,))
        if size >= 4:  # 8 bytes: [..., n, 2] words
            parts.append(jax.lax.bitcast_convert_type(flat, U32).reshape(head + (-1,)))
            continue
        u = (flat if x.dtype == jnp.bool_ else
             jax.lax.bitcast_convert_type(flat, _unsigned(size))).astype(U32)
        per = 4 // size
        n = flat.shape[-1]
        width = -(-n // per)
        # word k holds elements per * k + j at bits 8 * size * j: strided slices, the short
        # ones padded (elementwise work that XLA fuses; a pad of the whole leaf then a reshape
        # was a kernel of its own for every leaf whose length is not a multiple of `per`)
        word = None
        for j in range(min(per, n)):
            part = u[..., j::per]
            if part.shape[-1] < width:
                part = jnp.pad(part, [(0, 0)] * lead + [(0, width - part.shape[-1])])
            part = part << U32(8 * size * j) if j else part
            word = part if word is None else word | part
        parts.append(word)
    # side by side as an OR of zero-padded parts, not a concatenate: XLA's CPU backend fuses
    # pads and ORs into one kernel with the parts' conversions, where it runs a concatenate on
    # its own after one kernel per part
    total = sum(p.shape[-1] for p in parts)
    out, start = None, 0
    for p in parts:
        width = p.shape[-1]
        p = jnp.pad(p, [(0, 0)] * lead + [(start, total - start - width)])
        out = p if out is None else out | p
        start += width
    return out


def from_words(packed: jax.Array, layout: Words) -> Any:
    """The embedding `to_words` packed (leading axes: those of `packed` but the last)."""
    head, leaves, start = packed.shape[:-1], [], 0
    for shape, dtype, n in zip(layout.shapes, layout.dtypes, layout.counts):
        size = dtype.itemsize
        if size >= 4:
            width = n * size // 4
            w = packed[..., start:start + width]
            if size == 8:
                w = w.reshape(head + (n, 2))
            x = jax.lax.bitcast_convert_type(w, dtype).reshape(head + shape)
        else:
            per = 4 // size
            width = -(-n // per)
            w = packed[..., start:start + width]
            mask = U32((1 << (8 * size)) - 1)
            # element i is bits 8 * size * (i % per) on of word i // per: a broadcast and
            # elementwise shifts (fused into the consumer), not a stack of the shifted words
            spread = jnp.broadcast_to(w[..., None], head + (width, per))
            spread = spread.reshape(head + (width * per,))[..., :n]
            shifts = np.tile(np.arange(per, dtype=np.uint32) * (8 * size), width)[:n]
            u = (spread >> jnp.asarray(shifts)) & mask
            if dtype == jnp.bool_:
                x = (u != 0).reshape(head + shape)
            else:
                x = jax.lax.bitcast_convert_type(u.astype(_unsigned(size)), dtype).reshape(
                    head + shape)
        start += width
        leaves.append(x)
    return jax.tree_util.tree_unflatten(layout.treedef, leaves)
