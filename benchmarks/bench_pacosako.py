"""Paco Ŝako random-play throughput: atomic actions (lift/place/promote) per second.

    python benchmarks/bench_pacosako.py [--batches 1 64 1024] [--steps 64] [--no-threat-search]

Each batch size runs `steps` random legal actions per game inside one jitted lax.scan (games
that end are restarted), after a warm-up call that compiles. Prints a table.
--no-threat-search replaces the castling threat search by "nothing threatened" (an upper bound
on what skipping it would give; not a valid rule set).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import envs  # noqa: E402
from envs._src.pacosako import rules as R  # noqa: E402


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


def measure(run, repeats: int) -> tuple[float, float, int]:
    """(compile seconds, best of `repeats` timed calls, games ended in them)."""
    t0 = time.perf_counter()
    jax.block_until_ready(run(jax.random.PRNGKey(0)))
    compile_s = time.perf_counter() - t0
    best = float("inf")
    ended = 0
    for r in range(repeats):
        t0 = time.perf_counter()
        _, e = jax.block_until_ready(run(jax.random.PRNGKey(r + 1)))
        best = min(best, time.perf_counter() - t0)
        ended += int(e)
    return compile_s, best, ended


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
          f"{'games ended':>12}")
    for b in args.batches:
        compile_s, best, ended = measure(make_runner(env, b, args.steps), args.repeats)
        rate = b * args.steps / best
        print(f"{b:>6} {args.steps:>6} {compile_s:>10.1f} {best:>8.3f} {rate:>12.0f} "
              f"{ended:>12}", flush=True)

if __name__ == "__main__":
    main()
