"""turbozero/search/loops.py: batch-wide while loops that take several steps per trip."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from turbozero.search.loops import batch_while, default_unroll


def _walk(limits):
    """Each lane counts up to its limit and then stays (the searches' walks: a finished lane
    changes nothing)."""
    limits = jnp.asarray(limits, jnp.int32)

    def cond(c):
        return jnp.any(c < limits)

    def body(c):
        return jnp.where(c < limits, c + 1, c)

    return cond, body, jnp.zeros_like(limits)


@pytest.mark.parametrize("unroll", [1, 2, 3, 7])
def test_steps_per_trip_change_the_trips_not_the_result(unroll):
    cond, body, init = _walk([0, 5, 2, 9])
    plain = jax.lax.while_loop(cond, body, init)
    out, trips = jax.jit(lambda x: batch_while(cond, body, x, unroll))(init)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(plain))
    assert int(trips) == -(-9 // unroll)  # the longest lane's steps, `unroll` a trip


def test_no_trip_when_nothing_is_left_and_bad_unroll():
    cond, body, init = _walk([0, 0])
    out, trips = batch_while(cond, body, init, 4)
    assert int(trips) == 0 and np.asarray(out).tolist() == [0, 0]
    with pytest.raises(ValueError, match="unroll"):
        batch_while(cond, body, init, 0)


def test_default_unroll_is_one_on_cpu_and_as_given_otherwise():
    assert default_unroll(5) == 5
    if jax.default_backend() == "cpu":
        assert default_unroll(None) == 1
