"""The C++ CPU search path (docs/cpu_search.md) measured.

    python benchmarks/bench_cpu_search.py alloc
    python benchmarks/bench_cpu_search.py queue [--workers 1 2 8]
    python benchmarks/bench_cpu_search.py selfplay [--game chess --games 16 --sims 64 --moves 6]
    python benchmarks/bench_cpu_search.py evaluator [--game chess --tiers 16 64]

alloc: ns per node of NodePool.allocate + init for child runs of 1, 30 and 218 nodes.
queue: the evaluation queue's round trip (submit, collect, submit_results, get_results) with a
    trivial C++ evaluator: requests/s and microseconds per request.
evaluator: ms per call of the jitted pool evaluator per batch size (the floor of a round).
selfplay: positions/s and simulations/s of self-play at equal simulations and network (the
    tiny network of benchmarks/bench_search_kernel.py): the CPU path with 1 and 2 worker threads
    against the all-JAX tree kernel (`search_env`, TreeSearchConfig) stepping every game once
    per move. Compiles are excluded (a warm-up run first).
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import envs
from turbozero.games import build_network, game_spec
from turbozero.search import NetworkEvaluator, PUCTRoot
from turbozero.search.cpu import CPUSearchConfig, require_extension
from turbozero.search.cpu import NEW_GAME
from turbozero.search.cpu.selfplay import (
    CPUSelfPlayConfig, cpu_self_play, make_pool_evaluator, make_state_pool)

TINY = {"num_filters": 8, "num_blocks": 1}


def alloc():
    ext = require_extension()
    print("| run of nodes | ns per node |")
    print("| --- | --- |")
    for run in (1, 30, 218):
        ns = min(ext.time_node_allocation(run, 20_000_000) for _ in range(3))
        print(f"| {run} | {ns:.2f} |")


def queue(workers_list):
    ext = require_extension()
    print("| workers | requests | requests/s | us per request | batches |")
    print("| --- | --- | --- | --- | --- |")
    for w in workers_list:
        r = ext.stress_queue(workers=w, requests_per_worker=20000 // w, max_submit=8,
                             capacity=256, max_batch=64, seed=1)
        assert r["mismatches"] == 0
        rate = r["delivered"] / r["seconds"]
        print(f"| {w} | {r['delivered']} | {rate:.0f} | {1e6 / rate:.1f} | {r['batches']} |")


def _network(game):
    env = envs.make(game)
    spec = game_spec(game)
    net = build_network(spec, env, dict(TINY))
    obs = env.init(jax.random.PRNGKey(0)).observation[None]
    variables = net.init(jax.random.PRNGKey(1), obs)
    return env, NetworkEvaluator(net.apply, spec.value_format), variables


def _jax_selfplay(env, evaluator, variables, games, sims, moves, leaves):
    from turbozero.search.kernel import TreeSearchConfig, search_env

    # the same leaves per step as the CPU path: both batch L leaves per tree per network call
    cfg = TreeSearchConfig(num_simulations=sims, root=PUCTRoot(), temperature=1.0,
                           leaves_per_step=leaves)

    @jax.jit
    def move(states, key):
        res = search_env(env, evaluator, variables, states, key, cfg)
        return jax.vmap(env.step)(states, res.action)

    def play():
        states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), games))
        for i in range(moves):
            states = move(states, jax.random.PRNGKey(i))
        return jax.block_until_ready(states)

    play()  # compile
    t0 = time.perf_counter()
    play()
    return time.perf_counter() - t0


def evaluator_cost(game, tiers):
    """Seconds per call of the jitted pool evaluator (step + observe + network) per batch size:
    the floor under the CPU path's time per batch."""
    from _timing import median_time

    env, evaluator, variables = _network(game)
    key = jax.random.PRNGKey(3)
    evaluate = make_pool_evaluator(env, evaluator, key)
    pool = make_state_pool(env, 2 * max(tiers) + 1)
    print("| batch | ms per call | us per state |")
    print("| --- | --- | --- |")
    for t in tiers:
        idx = np.arange(t, dtype=np.int32)
        pool, _ = evaluate(pool, variables, np.full(t, NEW_GAME, np.int32), idx, idx)
        box = [pool]

        def call():
            box[0], out = evaluate(box[0], variables, idx, np.full(t, 12, np.int32), idx + t)
            return out
        sec = median_time(call, 5)
        pool = box[0]
        print(f"| {t} | {sec * 1e3:.1f} | {sec / t * 1e6:.0f} |")


def selfplay(game, games, sims, moves, workers_list, leaves, tiers):
    env, evaluator, variables = _network(game)
    key = jax.random.PRNGKey(3)
    print(f"| path | workers | games | sims | positions | seconds | positions/s | sims/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    t = _jax_selfplay(env, evaluator, variables, games, sims, moves, leaves)
    n = games * moves
    print(f"| all-JAX kernel (L={leaves}) | - | {games} | {sims} | {n} | {t:.2f} | {n / t:.1f} | "
          f"{n * sims / t:.0f} |")
    pool_eval = make_pool_evaluator(env, evaluator, key)
    for w in workers_list:
        cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=w, num_games=games,
                                num_simulations=sims, leaves_per_step=leaves, max_moves=moves,
                                batch_tiers=tuple(tiers), seed=w)
        cpu_self_play(env, evaluator, variables, cfg, key, pool_evaluator=pool_eval)  # compile
        out = cpu_self_play(env, evaluator, variables, cfg, key, pool_evaluator=pool_eval)
        s = out.stats
        print(f"| CPU path (L={leaves}) | {w} | {games} | {sims} | {s['moves']} | "
              f"{s['seconds']:.2f} | {s['moves'] / s['seconds']:.1f} | "
              f"{s['simulations'] / s['seconds']:.0f} |")


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("alloc")
    q = sub.add_parser("queue")
    q.add_argument("--workers", type=int, nargs="+", default=[1, 2, 8])
    s = sub.add_parser("selfplay")
    s.add_argument("--game", default="chess")
    s.add_argument("--games", type=int, default=16)
    s.add_argument("--sims", type=int, default=64)
    s.add_argument("--moves", type=int, default=6)
    s.add_argument("--leaves", type=int, default=4)
    s.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    s.add_argument("--tiers", type=int, nargs="+", default=[32, 64])
    e = sub.add_parser("evaluator")
    e.add_argument("--game", default="chess")
    e.add_argument("--tiers", type=int, nargs="+", default=[16, 64])
    a = p.parse_args()
    if a.cmd == "alloc":
        alloc()
    elif a.cmd == "queue":
        queue(a.workers)
    elif a.cmd == "evaluator":
        evaluator_cost(a.game, a.tiers)
    else:
        selfplay(a.game, a.games, a.sims, a.moves, a.workers, a.leaves, a.tiers)


if __name__ == "__main__":
    main()
