"""Backgammon complete moves (`env.afterstates`, jitted and vmapped) against gnubg-nn's `moves`
(C, one position at a time from a Python loop), on the same positions; and how many complete
moves positions of real play have (what `max_afterstates` must hold).

    python benchmarks/throughput/backgammon_afterstates.py [--batch 64 1024] [--m 256] [--repeats 3]
        [--before 0cd2858 ...]
    python benchmarks/throughput/backgammon_afterstates.py --count [--games 60]

Positions: the decision states met by gnubg-nn's 0-ply player in self-play (`--games` games,
10% random moves for variety), every roll. The JAX side is timed on compiled calls only
(median of `--repeats` after a warm-up, all JAX calls interleaved); gnubg-nn's loop is timed on
the same positions and rolls. Each batch size is a separate pick of pairs (the same seed) and
prints the load average. Timed side by side: `env.afterstates` (the env states of every
result, no observations since issue 43), the same with every slot observed (what the call
returned before; a consumer that values every slot pays this), the move list alone, and
`env.afterstates` of the backgammon package at each `--before` git revision (loaded beside
the current one, `benchmarks/tools/revisions.py`; 0cd2858 is the last one before issue 43),
whose result sets are checked equal to the current ones. Figures: docs/benchmarks.md,
"Backgammon complete moves"; docs/backgammon.md.

The JAX side is timed through benchmarks/tools/timing.py (`time_compiled`: refuses a timed call that
compiles or runs JAX eagerly); gnubg-nn's loop is host-side C called from Python, no JAX, so it
is timed with a plain clock (`host_loop_seconds`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.tools.timing import time_compiled  # noqa: E402


def played_positions(games: int, seed: int = 0):
    """gnubg board pairs (opponent, on roll) met in gnubg-nn 0-ply self-play."""
    import gnubg_nn

    rng = np.random.default_rng(seed)
    start = gnubg_nn.board_from_position_id("4HPwATDgc/ABMA")
    out = []
    for _ in range(games):
        b = tuple(tuple(x) for x in start)
        for _ in range(400):
            out.append(b)
            d1, d2 = (int(x) for x in rng.integers(1, 7, 2))
            keys = gnubg_nn.moves(b, d1, d2)
            if not keys:
                b = (b[1], b[0])
                continue
            boards = [gnubg_nn.board_from_position_key(k) for k in keys]
            if rng.random() < 0.1:
                nb = boards[rng.integers(len(boards))]
            else:
                def equity(res):
                    if sum(res[1]) == 0:
                        return 9.0
                    p = gnubg_nn.probabilities((res[1], res[0]), 0)  # the opponent on roll
                    return -((2 * p[0] - 1) + p[1] - p[3] + p[2] - p[4])
                nb = max(boards, key=equity)
            if sum(nb[1]) == 0:
                break
            b = (tuple(nb[1]), tuple(nb[0]))
    return out


def count(args) -> None:
    import gnubg_nn

    positions = played_positions(args.games)
    sizes = {True: [], False: []}
    for b in positions:
        for d1 in range(1, 7):
            for d2 in range(d1, 7):
                sizes[d1 == d2].append(len(gnubg_nn.moves(b, d1, d2)))
    for doubles in (False, True):
        v = np.asarray(sizes[doubles])
        over = {m: float(np.mean(v > m)) for m in (64, 128, 256, 512)}
        print(f"{'doubles' if doubles else 'non-doubles'}: {len(v)} position-rolls, max {v.max()}, "
              f"median {np.median(v):.0f}, 99th pct {np.percentile(v, 99):.0f}, "
              f"99.9th pct {np.percentile(v, 99.9):.0f}; share above M: {over}")


def host_loop_seconds(loop, repeats: int) -> float:
    """Median wall seconds of `loop()`, plain clock: for gnubg-nn's C `moves` called from a
    Python loop, which runs no JAX, so there is nothing for `time_compiled` to check."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        loop()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def result_sets(out) -> list:
    """Per state: the set of result boards (bytes) of its valid slots, their count and the
    overflow flag (an overflowed state keeps M of its moves, which M is not specified: its
    set is left out)."""
    valid = np.asarray(out.valid)
    boards = np.asarray(out.states.board)
    over = np.asarray(out.overflow)
    return [(set() if over[i] else {boards[i, j].tobytes() for j in np.flatnonzero(valid[i])},
             int(valid[i].sum()), bool(over[i])) for i in range(valid.shape[0])]


def speed(args) -> None:
    import gnubg_nn

    import envs
    from benchmarks.tools.revisions import game_at_revision
    from envs.backgammon import afterstates as afterstates_lib
    from envs.backgammon import notation, rules

    env = envs.make("backgammon")
    positions = played_positions(args.games)

    def afterstates_of(env):
        @jax.jit
        def run(boards, outcomes):
            states = jax.vmap(env._decision_state)(boards, outcomes, jnp.zeros_like(outcomes))
            states = states.replace(observation=jax.vmap(env.observe)(states))
            return jax.vmap(lambda s: env.afterstates(s, args.m))(states)
        return run

    run = afterstates_of(env)

    @jax.jit
    def observed(boards, outcomes):
        """`env.afterstates` with every slot's observation (the contract before issue 43)."""
        out = run(boards, outcomes)
        return out._replace(states=out.states.replace(
            observation=jax.vmap(jax.vmap(env.observe))(out.states)))

    @jax.jit
    def listing(boards, outcomes):
        """The move list alone (result boards, micro-actions, valid; what gnubg-nn's `moves`
        returns as position keys), without building each result's env state."""
        states = jax.vmap(env._decision_state)(boards, outcomes, jnp.zeros_like(outcomes))
        return jax.vmap(lambda b, r: afterstates_lib.complete_moves(
            b, r, jnp.asarray(True), args.m))(states.board, states.remaining)

    fns = {"env.afterstates": run, "observed": observed, "list": listing}
    for rev in args.before:
        fns[f"@{rev}"] = afterstates_of(game_at_revision(rev, "backgammon").Backgammon())

    for batch in args.batch:
        rng = np.random.default_rng(1)
        pick = rng.choice(len(positions), batch, replace=len(positions) < batch)
        rolls = rng.integers(0, rules.NUM_ROLLS, batch)
        gboards = [positions[i] for i in pick]
        boards = jnp.asarray(np.stack([notation.gnubg_to_board(g) for g in gboards]))
        outcomes = jnp.asarray(rolls, jnp.int32)
        t0 = time.perf_counter()
        jax.block_until_ready(run(boards, outcomes))
        compile_s = time.perf_counter() - t0
        out = run(boards, outcomes)
        mine = result_sets(out)
        for rev in args.before:  # the same moves (slot order may differ) and overflow flags
            if result_sets(fns[f"@{rev}"](boards, outcomes)) != mine:
                raise SystemExit(f"the result sets differ from those at {rev}")
        t = time_compiled(fns, args=(boards, outcomes), repeats=args.repeats)
        sec = {k: v.median for k, v in t.items()}
        overflow = int(np.asarray(out.overflow).sum())
        dice = [tuple(int(x) for x in rules.ROLLS[r]) for r in rolls]
        gnubg_s = host_loop_seconds(lambda: [gnubg_nn.moves(g, d1, d2)
                                             for g, (d1, d2) in zip(gboards, dice)], args.repeats)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")

        def rate(k):
            return f"{batch / sec[k]:,.0f} sets/s ({sec[k] * 1e3:.1f} ms)"

        before = "".join(f"; at {rev} {rate(f'@{rev}')}, now {sec[f'@{rev}'] / sec['env.afterstates']:.1f}x"
                         for rev in args.before)
        print(f"batch {batch}, M {args.m}, backend {jax.default_backend()}, load {load:.1f}: "
              f"env.afterstates {rate('env.afterstates')}, compile {compile_s:.1f} s, "
              f"{overflow} overflowed; with every slot observed {rate('observed')}; the list "
              f"alone {rate('list')}{before}; gnubg-nn moves loop {batch / gnubg_s:,.0f} sets/s; "
              f"ratio to gnubg-nn {gnubg_s / sec['env.afterstates']:.4f}x", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, nargs="+", default=[64, 1024])
    p.add_argument("--m", type=int, default=256, help="max_afterstates")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--games", type=int, default=30)
    p.add_argument("--before", nargs="*", default=["0cd2858"],
                   help="git revisions whose env.afterstates is timed beside (none: skip)")
    p.add_argument("--count", action="store_true", help="only the sizes of real move lists")
    args = p.parse_args()
    count(args) if args.count else speed(args)


if __name__ == "__main__":
    main()
