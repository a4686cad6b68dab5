"""benchmarks/tools/hlo_loops.py: the kernels and loops of a compiled function, from its HLO
(issue 46, item 1: trips and kernels per simulation without a GPU)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from benchmarks.tools.hlo_loops import loop_profile


def _profile(f, *args):
    return loop_profile(jax.jit(f).lower(*args).compile().as_text())


def test_a_loop_whose_trips_the_data_decide_is_told_from_a_counted_one():
    def f(x):
        def body(i, x):
            y = jax.lax.while_loop(lambda c: c[0] < x.sum(), lambda c: (c[0] + 1, c[1] * 2),
                                   (0, x))[1]
            y = jax.lax.fori_loop(0, 3, lambda j, z: jnp.sort(z * 2.0), y)
            return jnp.sort(y) + 1

        return jax.lax.fori_loop(0, 5, body, x)

    p = _profile(f, jnp.ones(4))
    assert p["trip_count"] == 5  # the simulation-like outer loop, counted
    assert len(p["data_loops"]) == 1 and p["data_loops"][0] >= 2  # the while: body + condition
    # the inner fori runs its sort 3 times a trip, so the outer trip holds at least 3 + 1 sorts
    assert p["loop_kernels"] >= 4


def test_more_work_in_the_loop_shows_as_more_kernels():
    def one(x):
        return jax.lax.fori_loop(0, 4, lambda i, x: jnp.sort(x) * 2.0, x)

    def two(x):
        return jax.lax.fori_loop(0, 4, lambda i, x: jnp.sort(jnp.sort(x) * 2.0)[::-1], x)

    assert _profile(two, jnp.ones(8))["loop_kernels"] > _profile(one, jnp.ones(8))["loop_kernels"]


def test_text_without_an_entry_is_refused():
    with pytest.raises(ValueError, match="ENTRY"):
        loop_profile("HloModule nothing\n")


def test_the_loop_body_kernels_are_told_by_the_library_function_that_made_them():
    from benchmarks.tools.hlo_loops import kernels_by_source
    from turbozero.search.tree import pack_actions

    def f(keep):
        def body(i, acc):
            ids = pack_actions(keep ^ (acc[:, :1] > i), 3)  # depends on the carry: stays inside
            return acc + ids.sum(-1, keepdims=True)

        return jax.lax.fori_loop(0, 4, body, jnp.zeros((2, 1), jnp.int32))

    keep = jnp.array([[True, False, True, True, False], [False, True, False, True, True]])
    counts = kernels_by_source(jax.jit(f).lower(keep).compile().as_text())
    assert counts.get("turbozero/search/tree.py:pack_actions", 0) >= 1, counts
    assert sum(counts.values()) == _profile(f, keep)["loop_kernels"]
