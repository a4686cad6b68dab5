"""MCGS on PyRat: what transpositions save, and kernel speed against the plain-Python reference.

    python benchmarks/throughput/mcgs.py [--quick]

1. Transpositions: the same number of playouts from the same roots, once as a graph (MCGS) and
   once as a plain tree (`transpositions=False`). Reported: the share of MCGS playouts that reach
   a transposition (link an edge to an existing node), and for the tree the share of its
   evaluations spent on a state it had already evaluated (what a transposition table saves).
2. Speed: playouts/s of the jitted kernel at batch 1 and 64 and of the plain-Python reference
   transcription of the spec (tests/search/test_mcgs_reference.py), same maze size and evaluator.
3. Cost (`--part cost`, issue 34 item 7): what transpositions cost in time, graph against tree
   side by side in one process, on the suite's mcgs section setting (benchmarks/throughput/suite.py: PyRat
   21x15, its tiny two-player network, 64 playouts), at `--batches` (default 64 and 1024),
   timed with benchmarks/tools/timing.py's `time_compiled` (only compiled calls, interleaved; the
   whole search output is waited for), with the process CPU time of each call beside the wall
   time (steadier when other jobs share the machine).
   `--ref REV` also times turbozero/search/mcgs.py as it was at git revision REV, on the same
   roots in the same process, after checking that both give the same policies and graphs.

    python benchmarks/throughput/mcgs.py --part cost [--batches 64 1024] [--sims 64] [--ref REV]

Feeds docs/benchmarks.md, "PyRat and MCGS" and "What transpositions cost".
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time

import jax
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from envs.pyrat import PyRat  # noqa: E402
from mcgs_reference import (ReferenceMCGS, det_eval_jax,  # noqa: E402
                                 game_from_maze)
from turbozero.search import mcgs as mcgs_module  # noqa: E402
from turbozero.search.mcgs import MCGSConfig, make_mcgs_fn, uniform_eval_fn  # noqa: E402

from benchmarks.tools.revisions import module_at_revision  # noqa: E402
from benchmarks.tools.timing import time_compiled, with_cpu_time  # noqa: E402


def distinct_share(result, graph) -> tuple[np.ndarray, np.ndarray]:
    """(nodes, distinct states among them) per game."""
    keys, n = np.asarray(graph.key), np.asarray(result.stats["nodes_used"])
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
        res[mode] = out  # (SearchResult, Graph)
    (g, _), (t, t_graph) = res["graph"], res["tree"]
    playouts = g.stats["root_visits"] + 1  # + the playout that evaluated the root
    hit_share = g.stats["playouts_with_hit"].sum() / playouts.sum()
    tn, td = distinct_share(t, t_graph)
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
        t = time_compiled({"kernel": fn}, args=lambda r: (None, roots, jax.random.PRNGKey(r)),
                          repeats=3)["kernel"]
        rows.append((f"kernel, batch {batch}", batch * sims / t.median))
    # plain-Python reference on the same kind of mazes
    games = 2 if quick else 6
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(2), games))
    pyg = [game_from_maze(env.to_maze(jax.tree_util.tree_map(lambda x: x[b], states)),
                          env.max_episode_steps) for b in range(games)]
    t0 = time.perf_counter()
    for game in pyg:
        ReferenceMCGS(env.width, cfg.c_puct, cfg.fpu_offset).search(game, sims)
    rows.append(("plain-Python reference", games * sims / (time.perf_counter() - t0)))
    base = rows[-1][1]
    print("\n| search (7x7, 10 cheese, %d playouts per search) | playouts/s | vs Python |" % sims)
    print("|---|---|---|")
    for name, rate in rows:
        print(f"| {name} | {rate:,.0f} | {rate / base:.1f}x |")


def load_reference(rev: str):
    """turbozero/search/mcgs.py at git revision `rev`, loaded as a separate module. (Its import
    registers its own "graph" family; the current module's is registered again afterwards.)"""
    module = module_at_revision(rev, "turbozero/search/mcgs.py", "mcgs_at_revision")
    from turbozero.search.api import register_family
    register_family("graph", mcgs_module.MCGSConfig, mcgs_module._run)
    return module


def cost(batches, sims, repeats, ref):
    """Graph (transpositions on) against tree (off), the suite's mcgs setting; `ref` a module
    of an older mcgs.py timed beside the current one."""
    from benchmarks.throughput.suite import TINY_NETWORKS  # the suite's tiny network, one definition
    from envs import make
    from turbozero.games import build_network, game_spec

    env = make("pyrat")
    spec = game_spec("pyrat")
    net = build_network(spec, env, dict(TINY_NETWORKS[spec.trunk]))
    impls = {"": mcgs_module} if ref is None else {"": mcgs_module, "ref ": ref}
    key = jax.random.PRNGKey(2)
    print(f"\n| PyRat {env.width}x{env.height}, {sims} playouts | batch | graph playouts/s | "
          "tree playouts/s | graph cost (graph / tree time) | graph / tree CPU time | "
          "tt hits per playout |")
    print("|---|---|---|---|---|---|---|")
    for batch in batches:
        roots = jax.jit(lambda k, b=batch: jax.vmap(env.init)(jax.random.split(k, b)))(key)
        variables = jax.jit(net.init)(jax.random.PRNGKey(1), roots.observation[:1])
        fns, outs, cpu = {}, {}, {}
        for tag, mod in impls.items():
            eval_fn = mod.network_eval_fn(net.apply)
            for name, tt in (("graph", True), ("tree", False)):
                cfg = mod.MCGSConfig(num_simulations=sims, transpositions=tt)
                f = jax.jit(lambda v, r, k, c=cfg, m=mod, e=eval_fn:
                            m.mcgs_search(e, v, env, r, k, c))
                out = jax.block_until_ready(f(variables, roots, key))  # compile, and check
                # (SearchResult, Graph) since issue 44; a tree before it: one output with .graph
                out, graph = out if isinstance(out, tuple) else (out, out.graph)
                fields = {fl.name: np.asarray(getattr(graph, fl.name))
                          for fl in dataclasses.fields(graph) if fl.name != "emb"}
                fields.update({"emb." + k: np.asarray(v) for k, v in graph.emb.items()})
                outs[tag + name] = dict(fields, policy=np.asarray(out.policy),
                                        action=np.asarray(out.action))
                fns[tag + name] = with_cpu_time(f, cpu.setdefault(tag + name, []))
        if ref is not None:
            for name in ("graph", "tree"):
                a, b = outs[name], outs["ref " + name]
                differ = [k for k in sorted(set(a) & set(b)) if not np.array_equal(a[k], b[k])]
                if differ:
                    raise SystemExit(f"batch {batch}, {name}: the reference's result differs "
                                     f"in {differ}")
            print(f"batch {batch}: policies, actions and every graph array both versions have "
                  "are identical to the reference's")
        t = time_compiled(fns, args=(variables, roots, key), repeats=repeats)
        hits = outs["graph"]["tt_hits"].sum() / (batch * sims)
        for tag in impls:
            rg, rt = batch * sims / t[tag + "graph"].median, batch * sims / t[tag + "tree"].median
            cg, ct = (statistics.median(cpu[tag + n][-repeats:]) for n in ("graph", "tree"))
            print(f"| {tag or 'current '}mcgs.py | {batch} | {rg:,.0f} | {rt:,.0f} | "
                  f"{rt / rg:.2f}x | {cg / ct:.2f}x | {hits:.2f} |", flush=True)
        if ref is not None:
            print(f"| current / ref time, graph {t['graph'].median / t['ref graph'].median:.2f}x, "
                  f"tree {t['tree'].median / t['ref tree'].median:.2f}x | {batch} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small settings (smoke test)")
    ap.add_argument("--part", choices=("all", "transpositions", "speed", "cost"), default="all")
    ap.add_argument("--batches", type=int, nargs="+", default=[64, 1024], help="cost: batches")
    ap.add_argument("--sims", type=int, default=64, help="cost: playouts per search")
    ap.add_argument("--repeats", type=int, default=5, help="cost: timed calls per function")
    ap.add_argument("--ref", default=None, help="cost: also time mcgs.py at this git revision")
    args = ap.parse_args()
    print(f"jax {jax.__version__}, devices {jax.devices()}")
    if args.part == "cost":
        print(f"load: {os.getloadavg()[0]:.2f}")
        cost(args.batches, args.sims, args.repeats,
             None if args.ref is None else load_reference(args.ref))
        print(f"load: {os.getloadavg()[0]:.2f}")
        return
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
