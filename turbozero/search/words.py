"""A node's embedding as one row during a tree search: 32-bit words on accelerators, bytes on
CPU (docs/search.md, "The tree kernel"; docs/benchmarks.md, "Fewer kernels in the loop body").

Inside the search loop the kernel holds the nodes' embeddings as one array, `uint32[B, N, W]`
or `uint8[B, N, S]`: the leaves of a state side by side, bit for bit, so that a step gathers
its parents and scatters its children with one gather and one scatter instead of one per leaf
(a state may have 20 leaves; on CPU each gather or scatter on a large array is split over
threads, and the handoffs cost more than the copies: docs/benchmarks.md, "The tree kernel
against its model floor"). `row_form` picks the form at trace time.

Words: a leaf of 4-byte numbers is its words as they are (a bit cast of the same width, which
XLA fuses into the consumer or producer: no kernel of its own), where a byte row made every
multi-byte leaf a kernel of its own to pack and another to unpack (11 and 6 of a measured loop
body's kernels: docs/benchmarks.md, "Fewer kernels in the loop body"). Leaves of 1- or 2-byte numbers and bools are packed 4 or 2 to a word by
shifts (elementwise, fused the same way); 8-byte numbers take two words. A leaf ends on a word
boundary (a few bytes of padding per leaf). On CPU the byte row measured faster all the same
(see `row_form`'s note below).
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


# The byte row: the same packing in bytes (uint8[..., S], no padding), the kernel's form on CPU,
# where words measured a little slower in the same process though they launch fewer kernels
# (16 games x 32 simulations, words against bytes, median / best of the interleaved searches:
# 0.88x-0.98x / 0.48x-0.98x over the games and loads of docs/benchmarks.md, "Fewer kernels in
# the loop body"). Why was not looked into.

def bytes_layout(embedding: Any, lead: int) -> Optional[Words]:
    """`words_layout` for the byte row (`to_bytes`)."""
    return words_layout(embedding, lead)


def to_bytes(embedding: Any, lead: int) -> jax.Array:
    """uint8[..., S]: the leaves of one node side by side, bit for bit (bools as 0/1)."""
    parts = []
    for x in jax.tree_util.tree_leaves(embedding):
        if x.dtype == jnp.bool_:
            x = x.astype(jnp.uint8)
        elif x.dtype.itemsize > 1 or x.dtype != jnp.uint8:
            x = jax.lax.bitcast_convert_type(x, jnp.uint8)
        parts.append(x.reshape(x.shape[:lead] + (-1,)))
    return jnp.concatenate(parts, axis=-1)


def from_bytes(packed: jax.Array, layout: Words) -> Any:
    """The embedding `to_bytes` packed (leading axes: those of `packed` but the last)."""
    head, leaves, start = packed.shape[:-1], [], 0
    for shape, dtype, n in zip(layout.shapes, layout.dtypes, layout.counts):
        size = n * dtype.itemsize
        x = packed[..., start:start + size]
        start += size
        if dtype == jnp.bool_:
            x = (x != 0).reshape(head + shape)
        elif dtype.itemsize > 1:
            x = jax.lax.bitcast_convert_type(x.reshape(head + shape + (dtype.itemsize,)), dtype)
        else:
            x = jax.lax.bitcast_convert_type(x.reshape(head + shape), dtype)
        leaves.append(x)
    return jax.tree_util.tree_unflatten(layout.treedef, leaves)


def row_form(on_cpu: Optional[bool] = None):
    """(layout, pack, unpack) of the kernel's embedding rows: the byte row on CPU, words
    elsewhere (`on_cpu`: None reads the backend, at trace time)."""
    if on_cpu is None:
        on_cpu = jax.default_backend() == "cpu"
    return (bytes_layout, to_bytes, from_bytes) if on_cpu else (words_layout, to_words,
                                                                from_words)
