"""Gomoku random-play throughput, bytes per state, and what line detection costs.

    python benchmarks/bench_gomoku.py [--size 100] [--win-length 8] [--players 3] [--view 21]
                                      [--batches 64 1024] [--steps 32] [--repeats 3]

* env steps/s: each batch runs `steps` random legal moves per game (`envs.sampling`'s
  uniform_legal_action) inside one jitted lax.scan (games that end restart), with `transition` (no observation: random play, search
  expansion) and with `step` (the observation of every state). Best of `repeats` calls, after a
  call that compiles.
* bytes per state: the state pytree without its observation, and the observation alone.
* line detection: the per-move check the env runs (`lines.arms`, the 4 lines through the new
  stone) against recounting the whole board (`lines.chain_counts`), on a batch of random boards.
* `--fallback none`: the view centre is always the last stone (skips the search for an empty
  cell when the view is full; not a valid rule); `--fallback chebyshev`: that search over the
  whole board (the nearest empty cell by Chebyshev distance), the rule the env had before its
  O(S) row search. Both for measuring only.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import envs  # noqa: E402
from envs._src.gomoku import lines  # noqa: E402
from envs._src.gomoku import view as vw  # noqa: E402
from envs.sampling import uniform_legal_action  # noqa: E402


def chebyshev_centre(board, row_empties, last, view: int):
    """The centre rule with a whole-board search: the empty cell nearest to the last stone by
    Chebyshev distance (first in row-major order on a tie). O(S^2) per move."""
    del row_empties
    has_empty = jnp.any(vw.window(board, last, view) == lines.EMPTY)
    size = board.shape[0]
    idx = jnp.arange(size, dtype=jnp.int32)
    dist = jnp.maximum(jnp.abs(idx - last[0])[:, None], jnp.abs(idx - last[1])[None, :])
    nearest = jnp.argmin(jnp.where(board == lines.EMPTY, dist, 2 * size).reshape(-1))
    fallback = jnp.stack([nearest // size, nearest % size]).astype(jnp.int32)
    return jnp.where(has_empty, last, fallback).astype(jnp.int32)


def make_runner(env, batch: int, steps: int, with_observation: bool):
    init = jax.vmap(env.init if with_observation else env.init_state)
    step = jax.vmap(env.step if with_observation else env.transition)

    def run(key):
        k0, k1 = jax.random.split(key)
        state = init(jax.random.split(k0, batch))

        def body(state, k):
            ka, kr = jax.random.split(k)
            a = jax.vmap(uniform_legal_action)(jax.random.split(ka, batch),
                                               state.legal_action_mask)
            state = step(state, a)
            fresh = init(jax.random.split(kr, batch))
            done = state.terminated | state.truncated
            state = jax.tree_util.tree_map(
                lambda f, s: jnp.where(done.reshape(done.shape + (1,) * (s.ndim - 1)), f, s),
                fresh, state)
            # consume the observation: XLA drops loop values nothing reads, and would
            # otherwise skip computing it (measured: "with" ran as fast as "without")
            seen = jnp.sum(state.observation) if with_observation else jnp.float32(0)
            return state, (done.sum(), seen)

        state, (ends, seen) = jax.lax.scan(body, state, jax.random.split(k1, steps))
        return state.step_count.sum(), ends.sum(), seen.sum()

    return jax.jit(run)


def best_time(fn, repeats: int) -> tuple[float, float, float]:
    """(compile seconds, best wall seconds, best CPU seconds of this process) over `repeats`
    timed calls. On a shared machine the wall time swings with the load; the CPU time (all
    threads of this process) much less, so both are printed."""
    t0 = time.perf_counter()
    jax.block_until_ready(fn(jax.random.PRNGKey(0)))
    compile_s = time.perf_counter() - t0
    wall, cpu = float("inf"), float("inf")
    for r in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(fn(jax.random.PRNGKey(r + 1)))
        wall = min(wall, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    return compile_s, wall, cpu


def state_bytes(env) -> tuple[int, int]:
    """(bytes of one state without its observation, bytes of its observation)."""
    bare = jax.eval_shape(env.init_state, jax.random.PRNGKey(0))
    obs = jax.eval_shape(env.init, jax.random.PRNGKey(0)).observation
    leaves = jax.tree_util.tree_leaves(bare)
    return (sum(int(np.prod(x.shape)) * x.dtype.itemsize for x in leaves),
            int(np.prod(obs.shape)) * obs.dtype.itemsize)


def line_check_costs(env, batch: int, repeats: int) -> tuple[float, float]:
    """Seconds per batch: the per-move check through one stone vs a whole-board recount."""
    rng = np.random.default_rng(0)
    size, w, p = env.size, env.win_length, env.num_players
    boards = jnp.asarray(np.where(rng.random((batch, size, size)) < 0.3,
                                  rng.integers(1, p + 1, (batch, size, size)), 0), jnp.int8)
    cells = jnp.asarray(rng.integers(0, size, (batch, 2)), jnp.int32)

    def through(board, cell):
        return lines.longest_through(lines.arms(board, cell[0], cell[1], board[cell[0], cell[1]], w))

    per_move = jax.jit(jax.vmap(through))
    recount = jax.jit(jax.vmap(lambda b: lines.chain_counts(b, p, w)))
    _, t_move, _ = best_time(lambda k: per_move(boards, cells), repeats)
    _, t_full, _ = best_time(lambda k: recount(boards), repeats)
    return t_move, t_full


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--win-length", type=int, default=8)
    ap.add_argument("--players", type=int, default=3)
    ap.add_argument("--view", type=int, default=21)
    ap.add_argument("--batches", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--steps", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fallback", choices=("rows", "none", "chebyshev"), default="rows",
                    help="measure only: how the view centre moves off a full view "
                         "(rows: the env's rule)")
    args = ap.parse_args()
    if args.fallback == "none":  # not a valid rule: the centre may sit on a full view
        vw.next_centre = lambda board, row_empties, last, view: last.astype(jnp.int32)
    elif args.fallback == "chebyshev":
        vw.next_centre = chebyshev_centre
    env = envs.make("gomoku", size=args.size, win_length=args.win_length,
                    num_players=args.players, view=args.view)
    print(f"device: {jax.devices()[0].device_kind}, jax {jax.__version__}; {env}"
          + f"; view-centre fallback: {args.fallback}")
    bare, obs = state_bytes(env)
    print(f"bytes per state: {bare} without observation, observation {obs}")
    print(f"{'batch':>6} {'observation':>12} {'compile s':>10} {'steps/s':>12} "
          f"{'steps/CPU s':>12}")
    for batch in args.batches:
        for with_obs in (False, True):
            run = make_runner(env, batch, args.steps, with_obs)
            compile_s, wall, cpu = best_time(run, args.repeats)
            print(f"{batch:>6} {'yes' if with_obs else 'no':>12} {compile_s:>10.1f} "
                  f"{batch * args.steps / wall:>12,.0f} {batch * args.steps / cpu:>12,.0f}")
    t_move, t_full = line_check_costs(env, 64, args.repeats)
    print(f"line check, batch 64: through the new stone {t_move * 1e6:,.0f} us, "
          f"whole-board recount {t_full * 1e6:,.0f} us ({t_full / t_move:,.0f}x)")


if __name__ == "__main__":
    main()
