"""benchmarks/tools/timing.py: timed calls of compiled code pass; a timed call that compiles, runs a
transformation un-jitted (the `jax.vmap(env.init)` that once made throughput/cpu_search.py's C++
path look 2.7-3.6x faster) or dispatches a JAX op eagerly raises `UnfairTiming`, on calls after
the warm-up too."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import core as jax_core

from benchmarks.tools.timing import UnfairTiming, forbid_compiles_and_eager_ops, time_compiled


def _f(x):
    return jnp.tanh(x * 2.0).sum() + 1.0


_batched = jax.jit(jax.vmap(_f))
_X = jnp.ones((4, 3))


def test_jitted_function_is_timed():
    t = time_compiled({"jit": _batched, "twice": lambda x: _batched(x) + _batched(x)},
                      args=(_X,), repeats=3)
    for timing in t.values():
        assert len(timing.times) == 3
        assert 0 < timing.min <= timing.median
        assert timing.allowed_eager_per_call == 0


def test_host_side_calls_of_jitted_functions_are_allowed():
    """The C++ path's shape: Python between compiled calls, NumPy in, floats out."""
    host = np.ones((4, 3), np.float32)

    def runner():
        total = 0.0
        for i in range(3):
            out = _batched(host + i)  # NumPy argument: transferred, no eager op
            total += float(np.asarray(jax.device_get(out)).sum())
        return total

    t = time_compiled({"runner": runner}, repeats=2)
    assert len(t["runner"].times) == 2


def test_unjitted_vmap_is_refused_after_warm_up():
    # three warm-up calls: the eager vmap's per-primitive executables are cached by then and no
    # compile event fires, so only the trace / eager-op checks can see it
    with pytest.raises(UnfairTiming, match="BatchTrace"):
        time_compiled({"eager vmap": lambda: jax.vmap(_f)(_X)}, repeats=2, warmup=3)


def test_unjitted_vmap_of_env_init_is_refused():
    """The case throughput/cpu_search.py once timed: a batch of games made with an eager vmap."""
    import envs

    env = envs.make("gomoku")
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    jax.vmap(env.init)(keys)  # compiled and warm: later calls compile nothing
    with pytest.raises(UnfairTiming, match="un-jitted vmap"):
        with forbid_compiles_and_eager_ops("second eager init"):
            jax.vmap(env.init)(keys)


def test_eager_op_is_refused():
    with pytest.raises(UnfairTiming, match="ran JAX ops eagerly"):
        time_compiled({"x + 1": lambda: _batched(_X) + jnp.ones(())}, repeats=1)
    with pytest.raises(UnfairTiming, match="random_seed"):
        time_compiled({"key in the call": lambda: jax.random.PRNGKey(1)}, repeats=1)


def test_compile_in_timed_region_is_refused():
    rows = iter(range(5, 100))
    with pytest.raises(UnfairTiming, match="compiled or traced"):
        # a new batch size every call: one compile each, warm-up or not
        time_compiled({"new shape": lambda: _batched(jnp.ones((next(rows), 3)))},
                      repeats=1)


def test_args_are_built_outside_the_watch():
    key = jax.random.PRNGKey(0)
    fn = jax.jit(lambda k: jax.random.uniform(k, (2,)))
    t = time_compiled({"fn": fn}, args=lambda r: (jax.random.fold_in(key, r + 10),),
                      repeats=2)
    assert len(t["fn"].times) == 2


def helper_with_eager_ops(x):
    return jnp.zeros((3,)) + x


def test_allowance_covers_only_the_named_function():
    here = "tests/test_timing.py:helper_with_eager_ops"
    t = time_compiled({"allowed": lambda: helper_with_eager_ops(1.0)}, repeats=2,
                      allow_eager_in={"allowed": [here]})
    assert t["allowed"].allowed_eager_per_call > 0
    with pytest.raises(UnfairTiming, match="eagerly"):  # the same op outside it is refused
        time_compiled({"outside": lambda: helper_with_eager_ops(1.0) + jnp.ones(())},
                      repeats=1, allow_eager_in={"outside": [here]})
    with pytest.raises(ValueError, match="names no timed function"):
        time_compiled({"a": _batched}, args=(_X,), allow_eager_in={"b": [here]})


def test_hooks_are_removed_after_the_region():
    before = (jax_core.Trace.__init__, jax_core.EvalTrace.process_primitive)
    with pytest.raises(ZeroDivisionError):  # the block's own error wins, hooks still removed
        with forbid_compiles_and_eager_ops():
            1 / 0
    assert (jax_core.Trace.__init__, jax_core.EvalTrace.process_primitive) == before
    jax.vmap(_f)(_X)  # outside a region nothing is refused
