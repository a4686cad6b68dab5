"""PyRat env step time per batched call on CPU (issue 34, item 6; docs/benchmarks.md).

    python benchmarks/throughput/pyrat_env.py [--batches 64 1024] [--repeats 15] [--ref REV]

Times only compiled calls of the default game (21x15, 41 cheese): `jit(vmap(env.transition))`
("step", the rules alone), `jit(vmap(env.observe))` ("observe") and `jit(vmap(env.step))`
("step + observe", the protocol's step, which computes the observation). The states are
mid-game: `--warm-steps` random joint actions played from fresh mazes, so the cheese is partly
eaten and the rats spread out, as in training and search.

`--ref REV` also loads the `envs/pyrat` package as it was at git revision REV (the
implementation before issue 34 item 6 by default) and times it on the same states in the same process, interleaved
with the current one: each repeat runs every (implementation, function) once in turn, so load
from other jobs on the machine falls on both alike. The script checks that both give identical
states (the fields both have) and observations before it times anything. Each call is warmed up (compiled) first and
waited for (`block_until_ready`); the figures are the min and median over the repeats of the
mean time per call of `--calls` back-to-back calls.

Feeds docs/benchmarks.md, "PyRat env step".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

import jax
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import envs  # noqa: E402
from benchmarks.tools.revisions import game_at_revision  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402

# the last commit whose PyRat env computes the nearness plane with the per-step
# Bellman-Ford loop (the implementation issue 34 item 6 measured at 0.77 ms per step)
BEFORE = "fe5f485"


def load_reference(rev: str):
    """The `PyRat` class of the envs/pyrat package at git revision `rev` (its maze module as
    of `rev` too), loaded as a separate package (it imports the current `envs.core`)."""
    return game_at_revision(rev, "pyrat").PyRat


def mid_game_states(env, batch: int, warm_steps: int, seed: int = 0):
    """`batch` states `warm_steps` random joint actions into fresh games (unfinished games
    keep playing; finished ones absorb)."""
    key = jax.random.PRNGKey(seed)
    states = jax.jit(jax.vmap(env.init_state))(jax.random.split(key, batch))
    transition = jax.jit(jax.vmap(env.transition))
    for i in range(warm_steps):
        actions = jax.random.randint(jax.random.fold_in(key, i + 1), (batch, 2), 0, 5)
        states = transition(states, actions)
    return states


def functions(env):
    """The three compiled batched calls timed for one implementation."""
    return {
        "step": jax.jit(jax.vmap(env.transition)),
        "observe": jax.jit(jax.vmap(lambda s: env.observe(s, s.current_player))),
        "step + observe": jax.jit(jax.vmap(env.step)),
    }


def state_fields(env) -> set:
    """The names of the fields of `env`'s state."""
    import dataclasses
    return {f.name for f in dataclasses.fields(jax.eval_shape(env.init_state, jax.random.PRNGKey(0)))}


def same(a, b, skip=frozenset()) -> bool:
    """Equal leaves, leaving out the state fields in `skip` (the ones one implementation added:
    the current state keeps a distance field that fe5f485's did not have)."""
    import dataclasses
    if dataclasses.is_dataclass(a):
        a, b = ({f.name: getattr(x, f.name) for f in dataclasses.fields(x) if f.name not in skip}
                for x in (a, b))
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y))
                                      for x, y in zip(la, lb))


def time_batch(impls: dict, batch: int, args) -> dict:
    # each implementation plays the same games from the same keys in its own state class (the
    # kept distance field's fields differ between revisions); the games must agree
    states = {name: mid_game_states(env, batch, args.warm_steps) for name, env in impls.items()}
    actions = jax.random.randint(jax.random.PRNGKey(99), (batch, 2), 0, 5)
    inputs = {name: {"step": (s, actions), "observe": (s,), "step + observe": (s, actions)}
              for name, s in states.items()}
    fns = {name: functions(env) for name, env in impls.items()}
    names = [state_fields(env) for env in impls.values()]
    skip = set.union(*names) - set.intersection(*names)
    first = list(states.values())
    if not all(same(first[0], s, skip) for s in first[1:]):
        raise SystemExit(f"batch {batch}: the implementations played different games")
    outputs = {}
    for name, fs in fns.items():  # warm-up: compile and run once
        for what, f in fs.items():
            outputs[(name, what)] = jax.block_until_ready(f(*inputs[name][what]))
    for what in ("step", "observe", "step + observe"):  # every implementation must agree
        # bit for bit before it is timed
        results = [outputs[(name, what)] for name in fns]
        if not all(same(results[0], r, skip) for r in results[1:]):
            raise SystemExit(f"batch {batch}: the implementations disagree on {what!r}")
    def back_to_back(f, args_):
        def run():
            out = None
            for _ in range(args.calls):
                out = f(*args_)
            return out
        return run

    # the shared helper (benchmarks/tools/timing.py): interleaved repeats, and a timed region that
    # compiles or runs JAX eagerly is refused
    timed = time_compiled({(name, what): back_to_back(f, inputs[name][what])
                           for name, fs in fns.items() for what, f in fs.items()},
                          repeats=args.repeats)
    return {key: [t / args.calls for t in timing.times] for key, timing in timed.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batches", type=int, nargs="+", default=[64, 1024])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10, help="back-to-back calls per timing")
    parser.add_argument("--warm-steps", type=int, default=40)
    parser.add_argument("--ref", default=BEFORE,
                        help=f"git revision of the PyRat env to compare with (default {BEFORE}); "
                             "'none' times the current implementation alone")
    args = parser.parse_args()
    impls = {"current": envs.make("pyrat")}
    if args.ref.lower() != "none":
        impls[f"ref {args.ref}"] = load_reference(args.ref)()
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for batch in args.batches:
        times = time_batch(impls, batch, args)
        print(f"\nbatch {batch} ({args.warm_steps} random steps into the game), ms per batched "
              f"call, min / median over {args.repeats} repeats of {args.calls} calls:")
        for (name, what), ts in times.items():
            print(f"  {name:>14} {what:>15}: {1e3 * min(ts):8.3f} / "
                  f"{1e3 * statistics.median(ts):8.3f}")
        if len(impls) > 1:
            cur, ref = list(impls)
            for what in ("step", "observe", "step + observe"):
                a, b = times[(cur, what)], times[(ref, what)]
                print(f"  speed-up {what:>15}: {min(b) / min(a):6.1f}x (min), "
                      f"{statistics.median(b) / statistics.median(a):6.1f}x (median)")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
