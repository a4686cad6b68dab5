"""Paco Ŝako random-play throughput: atomic actions (lift/place/promote) per second. Feeds
docs/benchmarks.md, "Paco Ŝako".

    python benchmarks/throughput/pacosako_env.py [--batches 1 64 1024] [--steps 64] [--no-threat-search]

Each batch size runs `steps` random legal actions per game inside one jitted lax.scan (games
that end are restarted). The first call (compile + one run) is timed on a plain clock on
purpose (the "compile s" column); the runs go through `benchmarks/tools/timing.py`
(`time_compiled`: a warm-up call, then `--repeats` timed calls with keys built before each
clock starts; the best and the median are printed). Prints a table.
--no-threat-search replaces the castling threat search by "nothing threatened" (an upper bound
on what skipping it would give; not a valid rule set).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import envs  # noqa: E402
from envs.pacosako import rules as R  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def make_runner(env, batch: int, steps: int):
    init = jax.vmap(env.init)
    step = jax.vmap(env.step)

    def run(key):
        k0, k1 = jax.random.split(key)
        state = init(jax.random.split(k0, batch))

        def body(state, k):
            ka, kr = jax.random.split(k)
            logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
            a = jax.random.categorical(ka, logits, axis=-1)
            state = step(state, a)
            fresh = init(jax.random.split(kr, batch))
            done = state.terminated | state.truncated
            state = jax.tree_util.tree_map(
                lambda f, s: jnp.where(done.reshape(done.shape + (1,) * (s.ndim - 1)), f, s),
                fresh, state)
            return state, done.sum()

        state, ends = jax.lax.scan(body, state, jax.random.split(k1, steps))
        return state.step_count.sum(), ends.sum()

    return jax.jit(run)


def measure(run, repeats: int) -> tuple[float, float, float, int]:
    """(compile seconds, best and median of `repeats` timed calls, games ended in them)."""
    # plain clock on purpose: the first call compiles, and this times that
    t0 = time.perf_counter()
    jax.block_until_ready(run(jax.random.PRNGKey(0)))
    compile_s = time.perf_counter() - t0
    outputs = []

    def call(key):  # host-side: keeps each call's (steps, ended) for the count below
        out = run(key)
        outputs.append(out)
        return out

    t = time_compiled({"run": call}, args=lambda r: (jax.random.PRNGKey(r + 1),),
                      repeats=repeats)  # warm-up call: r = -1, key 0, as the compile call
    ended = sum(int(e) for _, e in outputs[-repeats:])
    return compile_s, t["run"].min, t["run"].median, ended


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024])
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-threat-search", action="store_true",
                    help="upper bound only: castling threat search replaced by 'nothing threatened'")
    args = ap.parse_args()
    if args.no_threat_search:  # not a valid rule set: measures what the search costs
        # place_mask looks it up at trace time
        R.castle_threats = lambda need, board, color, ep: jnp.zeros(64, jnp.bool_)
    env = envs.make("pacosako")
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}")
    print(f"{'batch':>6} {'steps':>6} {'compile s':>10} {'best s':>8} {'actions/s':>12} "
          f"{'median s':>9} {'actions/s':>12} {'games ended':>12}")
    for b in args.batches:
        compile_s, best, median, ended = measure(make_runner(env, b, args.steps), args.repeats)
        print(f"{b:>6} {args.steps:>6} {compile_s:>10.1f} {best:>8.3f} "
              f"{b * args.steps / best:>12.0f} {median:>9.3f} {b * args.steps / median:>12.0f} "
              f"{ended:>12}", flush=True)

if __name__ == "__main__":
    main()
