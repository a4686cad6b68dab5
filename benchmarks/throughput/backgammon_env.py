"""Random-play env steps per second: envs.backgammon against pgx's backgammon, side by side.
Feeds docs/benchmarks.md, "Backgammon" (and the before/after table of "Env protocol, second
version").

    python benchmarks/throughput/backgammon_env.py [--batches 0 1 64 1024] [--steps 200] [--repeats 3]

Both envs run the same loop, jitted once per batch size: `lax.scan` over `--steps` steps of
`vmap(step)` on a batch of games, a uniformly random legal action each step, and games that end
are re-initialised in place (so every step is a live step). One "step" is one micro-action
(one checker, or a pass) in both envs; pgx rolls its dice inside `step` too. Timing goes through
`benchmarks/tools/timing.py` (`time_compiled`): one warm-up call each, then ours and pgx's called
alternately `--repeats` times, the PRNG keys built before each clock starts. Reported: steps/s
(batch x steps / median seconds per call) and the ratio ours / pgx.
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import envs  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def make_runner(init, step, batch: int, steps: int):
    """A jitted function key -> (final states, number of finished games); batch 0 = one game
    without vmap (how a single game is stepped)."""

    def one(state, key):
        k1, k2, k3 = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
        action = jax.random.categorical(k1, logits)
        nxt = step(state, action, k2)
        fresh = init(k3)
        done = nxt.terminated | nxt.truncated
        nxt = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, nxt)
        return nxt, done

    if batch == 0:

        @jax.jit
        def run_single(key):
            k0, k1 = jax.random.split(key)
            state, dones = jax.lax.scan(one, init(k0), jax.random.split(k1, steps))
            return state.current_player, dones.sum()

        return run_single

    @jax.jit
    def run(key):
        k0, k1 = jax.random.split(key)
        states = jax.vmap(init)(jax.random.split(k0, batch))

        def body(carry, k):
            states = carry
            states, done = jax.vmap(one)(states, jax.random.split(k, batch))
            return states, done.sum()

        states, dones = jax.lax.scan(body, states, jax.random.split(k1, steps))
        return states.current_player.sum() + 0 * dones.sum(), dones.sum()

    return run


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batches", type=int, nargs="+", default=[0, 1, 64, 1024],
                   help="0 = a single game stepped without vmap")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()

    import pgx

    ours = envs.make("backgammon")
    theirs = pgx.make("backgammon")
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} cpus")
    print(f"median of {args.repeats} alternating calls (benchmarks/tools/timing.py)")
    print(f"{'batch':>11} {'ours steps/s':>14} {'pgx steps/s':>14} {'ours/pgx':>9}")
    for b in args.batches:
        steps = args.steps if b > 1 else args.steps * 10
        t = time_compiled({"ours": make_runner(ours.init, ours.step, b, steps),
                           "pgx": make_runner(theirs.init, theirs.step, b, steps)},
                          args=lambda r: (jax.random.PRNGKey(r + 1),), repeats=args.repeats)
        t_ours, t_pgx = t["ours"].median, t["pgx"].median
        n = max(b, 1) * steps
        s_ours, s_pgx = n / t_ours, n / t_pgx
        label = "1 (no vmap)" if b == 0 else str(b)
        print(f"{label:>11s} {s_ours:>14,.0f} {s_pgx:>14,.0f} {s_ours / s_pgx:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
