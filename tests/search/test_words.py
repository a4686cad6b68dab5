"""turbozero/search/words.py: a node's embedding as one row of 32-bit words, bit for bit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.search.words import from_bytes, from_words, to_bytes, to_words, words_layout


def _leaves(rng, lead):
    def bits(dtype, shape):
        raw = rng.integers(0, 256, size=lead + shape + (np.dtype(dtype).itemsize,),
                           dtype=np.uint8)
        return jnp.asarray(raw.view(dtype).reshape(lead + shape))

    return {"bool1": jnp.asarray(rng.random(lead + (1,)) < 0.5),
            "bools": jnp.asarray(rng.random(lead + (3, 7)) < 0.5),
            "u8": bits(np.uint8, (5,)), "i8": bits(np.int8, (4,)),
            "i16": bits(np.int16, (3,)), "f16": bits(np.float16, (2, 3)),
            "i32": bits(np.int32, (2,)),
            "f32": bits(np.float32, (6,)),  # random bits: NaNs of every payload included
            "u32": bits(np.uint32, ()), "scalar_bool": jnp.asarray(rng.random(lead) < 0.5)}


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.view(np.uint8) if a.dtype != bool else a,
                          b.view(np.uint8) if b.dtype != bool else b)


def test_every_leaf_comes_back_bit_for_bit_with_one_or_two_leading_axes():
    rng = np.random.default_rng(0)
    for lead in ((5,), (2, 3)):
        emb = _leaves(rng, lead)
        layout = words_layout(emb, len(lead))
        words = jax.jit(lambda e, n=len(lead): to_words(e, n))(emb)
        assert words.dtype == jnp.uint32 and words.shape[:-1] == lead
        back = jax.jit(lambda w: from_words(w, layout))(words)
        jax.tree_util.tree_map(_same_bits, emb, back)
        row = jax.jit(lambda e, n=len(lead): to_bytes(e, n))(emb)  # the CPU's byte row
        assert row.dtype == jnp.uint8 and row.shape[:-1] == lead
        jax.tree_util.tree_map(_same_bits, emb, jax.jit(lambda r: from_bytes(r, layout))(row))


def test_sixty_four_bit_leaves_take_two_words():
    with jax.enable_x64(True):
        x = {"a": jnp.arange(6, dtype=jnp.int64).reshape(3, 2) * -(2 ** 40),
             "b": jnp.array([[1.5, -0.0], [np.nan, np.inf], [2.0, 3.0]], jnp.float64)}
        layout = words_layout(x, 1)
        w = to_words(x, 1)
        assert w.shape == (3, 8)
        jax.tree_util.tree_map(_same_bits, x, from_words(w, layout))


def test_one_leaf_or_a_leaf_that_is_not_a_number_is_not_packed():
    assert words_layout({"a": jnp.zeros((2, 3))}, 1) is None
    assert words_layout({"a": jnp.zeros((2, 3)), "k": jax.random.key(0)[None]}, 1) is None
