"""Chess random-play throughput: envs.chess vs pgx chess vs python-chess, in one run. Feeds
docs/benchmarks.md, "Chess" (the random-play tables) and docs/chess.md.

    python benchmarks/throughput/chess_env.py [--batches 1 64 1024] [--repeats 5] [--seconds 3]

Every engine plays uniformly random legal moves and restarts a game when it ends. JAX engines
run `steps` plies inside one jitted lax.scan (no Python per ply); the action is drawn the same
way for both (`envs.sampling.uniform_legal_action`: the r-th legal action of the mask, r
uniform), and a finished game is replaced by a fresh one. envs.chess plays through
`init_state` / `transition` (random play reads no observation, docs/chess.md "Observations on
demand"); at the largest batch it is also timed through `init` / `step`, which build the
8x8x122 observation every ply. pgx's step always builds its observation (pgx has no other
path). python-chess runs on one core: `list(board.legal_moves)` + `random.choice` +
`board.push`, restarting at mate/stalemate, the 50-move rule, insufficient material or 512
plies. Also printed: the compile time of `jit(env.step)` (unbatched) and the share of a batched
ply spent choosing the action.

Timing: the JAX engines go through `benchmarks/tools/timing.py` (`time_compiled`): per batch size,
envs.chess and pgx (and, at the largest batch, envs.chess through `init` / `step`) are called
alternately `--repeats` times after a warm-up call each, keys built before each clock starts,
each engine's games carried on from its previous call; rates are from the median call. On plain
clocks, named as such: python-chess (host-only, `--seconds` of play on one core) and the
compile figures (the first call of each scan, `jit(env.step).lower().compile()`), which time
compiles on purpose.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from envs.sampling import uniform_legal_action  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def make_runner(init, step, batch: int, steps: int):
    """A jitted function playing `steps` random plies on `batch` games with restarts."""

    def body(carry, key):
        state, fresh = carry
        k1, k2 = jax.random.split(key)
        a = jax.vmap(uniform_legal_action)(jax.random.split(k1, batch), state.legal_action_mask)
        state = jax.vmap(step)(state, a)
        done = state.terminated | state.truncated
        state = jax.tree.map(
            lambda f, s: jnp.where(done.reshape((-1,) + (1,) * (s.ndim - 1)), f, s), fresh, state
        )
        return (state, fresh), None

    @jax.jit
    def run(state, fresh, key):
        (state, _), _ = jax.lax.scan(body, (state, fresh), jax.random.split(key, steps))
        return state

    def go(key):
        fresh = jax.vmap(init)(jax.random.split(key, batch))
        return run, fresh

    return go


def steps_for(batch: int) -> int:
    return max(10, min(2000, int(20000 / batch)))


def bench_jax(engines: dict, batch: int, repeats: int) -> tuple[dict, dict]:
    """({name: plies/s}, {name: compile + first call seconds}) of each engine {name: (init,
    step)} at `batch`, the engines timed alternately through `time_compiled`."""
    steps = steps_for(batch)
    carry, fresh_of, runs, compile_s = {}, {}, {}, {}
    for name, (init, step) in engines.items():
        run, fresh = make_runner(init, step, batch, steps)(jax.random.PRNGKey(0))
        jax.block_until_ready(fresh)
        # plain clock on purpose: the first call compiles the scan ("scan compile" column)
        t0 = time.perf_counter()
        carry[name] = jax.block_until_ready(run(fresh, fresh, jax.random.PRNGKey(1)))
        compile_s[name] = time.perf_counter() - t0
        runs[name], fresh_of[name] = run, fresh

    def player(name):
        def call(key):  # host-side: each engine's games go on from its previous call
            carry[name] = runs[name](carry[name], fresh_of[name], key)
            return carry[name]
        return call

    t = time_compiled({name: player(name) for name in engines},
                      args=lambda r: (jax.random.PRNGKey(r + 2),), repeats=repeats)
    return {name: steps * batch / t[name].median for name in engines}, compile_s


def bench_python_chess(seconds):
    """Plies/s of python-chess random play: host-only code on one core, on a plain clock."""
    import chess

    rnd = random.Random(0)
    board, plies, n = chess.Board(), 0, 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(200):
            legal = list(board.legal_moves)
            over = (not legal or plies >= 512 or board.halfmove_clock >= 100
                    or board.is_insufficient_material())
            if over:
                board, plies = chess.Board(), 0
                legal = list(board.legal_moves)
            board.push(rnd.choice(legal))
            plies += 1
            n += 1
    return n / (time.perf_counter() - t0)


def select_share(env, batch):
    """Fraction of one batched random ply spent in the action choice alone."""
    fresh = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(0), batch))
    mask = fresh.legal_action_mask
    keys = jax.random.split(jax.random.PRNGKey(0), batch)
    sel = jax.jit(jax.vmap(uniform_legal_action))
    stp = jax.jit(jax.vmap(env.transition))
    a = jax.block_until_ready(sel(keys, mask))
    t = time_compiled({"choice": lambda: sel(keys, mask), "transition": lambda: stp(fresh, a)},
                      repeats=20)
    t_sel, t_step = t["choice"].median, t["transition"].median
    return t_sel, t_step


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024])
    ap.add_argument("--seconds", type=float, default=3.0,
                    help="python-chess play time (plain clock, host only)")
    ap.add_argument("--repeats", type=int, default=5,
                    help="timed calls per JAX engine and batch (median reported)")
    args = ap.parse_args()

    import pgx

    from envs import chess as ec

    env = ec.Chess()
    penv = pgx.make("chess")

    # plain clocks on purpose: these two time the compile of jit(env.step), no run
    t0 = time.perf_counter()
    jax.jit(env.step).lower(env.init(jax.random.PRNGKey(0)), jnp.int32(0)).compile()
    ours_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.jit(penv.step).lower(penv.init(jax.random.PRNGKey(0)), jnp.int32(0)).compile()
    pgx_compile = time.perf_counter() - t0

    pc = bench_python_chess(args.seconds)
    print(f"jax {jax.__version__}, devices {jax.devices()}, cpus {os.cpu_count()}, "
          f"load avg {os.getloadavg()[0]:.2f}")
    print(f"compile jit(step), unbatched: envs.chess {ours_compile:.1f} s, pgx {pgx_compile:.1f} s")
    print(f"python-chess (1 core): {pc:,.0f} plies/s")
    print()
    print("| batch | envs.chess transitions/s | pgx chess steps/s | python-chess plies/s "
          "| ours / python-chess | ours / pgx | scan compile ours / pgx (s) |")
    print("|---|---|---|---|---|---|---|")
    big = max(args.batches)
    with_obs = None
    for b in args.batches:
        engines = {"ours": (env.init_state, env.transition),
                   "pgx": (penv.init, lambda s, a: penv.step(s, a))}
        if b == big and with_obs is None:  # envs.chess with its observation, same calls
            engines["ours+obs"] = (env.init, env.step)
        rates, comp = bench_jax(engines, b, args.repeats)
        ours, theirs = rates["ours"], rates["pgx"]
        with_obs = rates.get("ours+obs", with_obs)
        print(f"| {b} | {ours:,.0f} | {theirs:,.0f} | {pc:,.0f} | {ours / pc:.2f}x | "
              f"{ours / theirs:.2f}x | {comp['ours']:.1f} / {comp['pgx']:.1f} |", flush=True)
    b = big
    print()
    print(f"batch {b}, envs.chess through init/step (observation every ply): {with_obs:,.0f} "
          f"steps/s = {with_obs / pc:.2f}x python-chess")
    t_sel, t_step = select_share(env, b)
    print()
    print(f"batch {b}: action choice {t_sel * 1e3:.2f} ms, envs.chess transition {t_step * 1e3:.2f} ms "
          f"per batched ply (separate calls)")
    print(f"load avg at end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
