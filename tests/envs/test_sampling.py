"""envs.sampling.uniform_legal_action against a plain-numpy reference and for uniformity."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.sampling import uniform_legal_action

N_KEYS = 4000


@pytest.fixture(scope="module")
def draw():
    return jax.jit(jax.vmap(uniform_legal_action, in_axes=(0, None)))


def _reference(keys, mask):
    """The r-th legal index, r = floor(u * count) with the function's own uniform draw."""
    legal = np.flatnonzero(mask)
    u = np.asarray(jax.vmap(lambda k: jax.random.uniform(k, ()))(keys))
    r = np.minimum((u.astype(np.float32) * np.float32(len(legal))).astype(np.int64),
                   len(legal) - 1)
    return legal[r]


# masks of chess's length (73 blocks of 64) and of a length that is no multiple of 64
@pytest.mark.parametrize("n,legal", [
    (4672, [0, 63, 64, 65, 127, 128, 1000, 4095, 4096, 4671]),
    (4672, list(range(4672))),
    (200, [5, 70, 199]),
    (9, [8]),
])
def test_equals_reference_and_is_uniform(draw, n, legal):
    mask = np.zeros(n, bool)
    mask[legal] = True
    keys = jax.random.split(jax.random.PRNGKey(3), N_KEYS)
    got = np.asarray(draw(keys, jnp.asarray(mask)))
    assert mask[got].all()
    np.testing.assert_array_equal(got, _reference(keys, mask))
    if len(legal) <= 20:
        counts = np.array([(got == a).sum() for a in legal])
        expected = N_KEYS / len(legal)
        # every action drawn, and no count more than 5 standard deviations off
        assert (np.abs(counts - expected) < 5 * np.sqrt(expected)).all(), counts


def test_random_masks_match_reference(draw):
    rng = np.random.default_rng(0)
    keys = jax.random.split(jax.random.PRNGKey(5), 64)
    for density in (0.001, 0.01, 0.5):
        mask = rng.random(4672) < density
        mask[rng.integers(4672)] = True
        got = np.asarray(draw(keys, jnp.asarray(mask)))
        np.testing.assert_array_equal(got, _reference(keys, mask))


def test_no_legal_action_gives_index_zero(draw):
    got = draw(jax.random.split(jax.random.PRNGKey(0), 4), jnp.zeros(4672, bool))
    np.testing.assert_array_equal(np.asarray(got), 0)


def test_batched_mask_is_refused():
    with pytest.raises(ValueError, match="vmap"):
        uniform_legal_action(jax.random.PRNGKey(0), jnp.ones((2, 10), bool))
