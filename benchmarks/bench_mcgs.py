"""MCGS on PyRat: what transpositions save, and kernel speed against the plain-Python reference.

    python benchmarks/bench_mcgs.py [--quick]

1. Transpositions: the same number of playouts from the same roots, once as a graph (MCGS) and
   once as a plain tree (`transpositions=False`). Reported: the share of MCGS playouts that reach
   a transposition (link an edge to an existing node), and for the tree the share of its
   evaluations spent on a state it had already evaluated (what a transposition table saves).
2. Speed: playouts/s of the jitted kernel at batch 1 and 64 and of the plain-Python reference
   transcription of the spec (tests/test_mcgs_reference.py), same maze size and evaluator.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from envs.pyrat import PyRat  # noqa: E402
from test_mcgs_reference import (ReferenceMCGS, det_eval_jax,  # noqa: E402
                                 game_from_maze)
from turbozero.search.mcgs import MCGSConfig, make_mcgs_fn, uniform_eval_fn  # noqa: E402


def distinct_share(out) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, distinct states among them) per game."""
    keys, n = np.asarray(out.graph.key), np.asarray(out.stats["nodes_used"])
    return n, np.array([len({tuple(k) for k in keys[b, : n[b]]}) for b in range(len(n))])


def transpositions(width, height, cheese, sims, batch, evaluator, name):
    env = PyRat(width=width, height=height, cheese_count=cheese)
    roots = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), batch))
    ev = uniform_eval_fn if evaluator == "uniform" else det_eval_jax
    inp = "observation" if evaluator == "uniform" else "state"
    res = {}
    for mode, tt in (("graph", True), ("tree", False)):
        fn = make_mcgs_fn(ev, env, MCGSConfig(num_simulations=sims, transpositions=tt,
                                              evaluator_input=inp))
        out = jax.tree_util.tree_map(np.asarray, fn(None, roots, jax.random.PRNGKey(1)))
        res[mode] = out
    g, t = res["graph"], res["tree"]
    playouts = g.stats["root_visits"] + 1  # + the playout that evaluated the root
    hit_share = g.stats["playouts_with_hit"].sum() / playouts.sum()
    tn, td = distinct_share(t)
    t_evals = t.stats["evaluations"].sum()
    dup = (tn - td).sum()  # tree nodes whose state another tree node already holds
    g_evals = g.stats["evaluations"].sum()
    print(f"| {name} | {evaluator} | {sims} x {batch} | {hit_share:.1%} | {g_evals} | "
          f"{g.stats['nodes_used'].sum()} | {t_evals} | {td.sum()} | {dup / tn.sum():.1%} |")


def speed(sims, quick):
    env = PyRat(width=7, height=7, cheese_count=10)
    cfg = MCGSConfig(num_simulations=sims, evaluator_input="state")
    fn = make_mcgs_fn(det_eval_jax, env, cfg)
    rows = []
    for batch in (1, 64):
        roots = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(2), batch))
        jax.block_until_ready(fn(None, roots, jax.random.PRNGKey(0)).policy)  # compile
        reps = 3
        t0 = time.perf_counter()
        for r in range(reps):
            jax.block_until_ready(fn(None, roots, jax.random.PRNGKey(r)).policy)
        dt = (time.perf_counter() - t0) / reps
        rows.append((f"kernel, batch {batch}", batch * sims / dt))
    # plain-Python reference on the same kind of mazes
    games = 2 if quick else 6
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(2), games))
    pyg = [game_from_maze(env.to_maze(jax.tree_util.tree_map(lambda x: x[b], states)),
                          env.max_turns) for b in range(games)]
    t0 = time.perf_counter()
    for game in pyg:
        ReferenceMCGS(env.width, cfg.c_puct, cfg.fpu_offset).search(game, sims)
    rows.append(("plain-Python reference", games * sims / (time.perf_counter() - t0)))
    base = rows[-1][1]
    print("\n| search (7x7, 10 cheese, %d playouts per search) | playouts/s | vs Python |" % sims)
    print("|---|---|---|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} | {rate / base:.1f}x |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small settings (smoke test)")
    ap.add_argument("--part", choices=("all", "transpositions", "speed"), default="all")
    args = ap.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    sims = 50 if args.quick else 200
    if args.part == "speed":
        speed(50 if args.quick else 100, args.quick)
        return
    print("\n| maze | evaluator | playouts x games | MCGS playouts reaching a transposition | "
          "MCGS evaluations | MCGS nodes | tree evaluations | distinct states in tree | "
          "tree evaluations a TT saves |")
    print("|---|---|---|---|---|---|---|---|---|")
    for ev in ("uniform", "hash"):
        transpositions(7, 7, 10, sims, 2 if args.quick else 16, ev, "7x7, 10 cheese")
        transpositions(21, 15, 41, sims, 2 if args.quick else 8, ev, "21x15, 41 cheese")
    if args.part == "all":
        speed(50 if args.quick else 100, args.quick)


if __name__ == "__main__":
    main()
