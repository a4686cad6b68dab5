"""The C++ CPU search path (docs/cpu_search.md) measured.

    python benchmarks/throughput/cpu_search.py alloc
    python benchmarks/throughput/cpu_search.py queue [--workers 1 2 8]
    python benchmarks/throughput/cpu_search.py selfplay [--game chess --games 16 --sims 64 --moves 6]
    python benchmarks/throughput/cpu_search.py evaluator [--game chess --tiers 16 64]

alloc: ns per node of NodePool.allocate + init for child runs of 1, 30 and 218 nodes.
queue: the evaluation queue's round trip (submit, collect, submit_results, get_results) with a
    trivial C++ evaluator: requests/s and microseconds per request.
evaluator: ms per call of the jitted pool evaluator per batch size (the floor of a round).
selfplay: positions/s and simulations/s of self-play at equal simulations and network (the
    tiny network of benchmarks/throughput/search_kernel.py): the CPU path with 1 and 2 worker threads
    against the all-JAX tree kernel (`search_env`, TreeSearchConfig) stepping every game once
    per move. Whole calls of both sides, alternately, by `timing.time_compiled` (warm-up
    first; a timed call that compiles or runs JAX ops un-jitted raises): an un-jitted
    `jax.vmap(env.init)` inside the JAX side's timed call once made the C++ path look 2.7-3.6x
    faster than it is (docs/benchmarks.md, "Fair timing"). Timed with them: the evaluator floor
    (the first CPU configuration's evaluator calls replayed without the tree), and with
    --overlap the overlapped configuration (CPUSelfPlayConfig.overlap) of each worker count >= 2.
"""

from __future__ import annotations

import os
import sys
import argparse

import jax
import numpy as np

import envs
from turbozero.games import build_network, game_spec
from turbozero.search import NetworkEvaluator, PUCTRoot
from turbozero.search.cpu import CPUSearchConfig, require_extension
from turbozero.search.cpu import NEW_GAME
from turbozero.search.cpu.selfplay import (
    CPUSelfPlayConfig, cpu_self_play, make_pool_evaluator, make_state_pool)
# the repository root, for benchmarks.tools.timing
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.tools.timing import time_compiled, with_cpu_time  # noqa: E402

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
    """The all-JAX side as one host-side call of compiled functions: a jitted init of the
    games, then one jitted search-and-step per move. The keys are made here, before timing:
    the timed call may only run compiled code (benchmarks/tools/timing.py)."""
    from turbozero.search.acting import TemperatureSchedule
    from turbozero.search.kernel import TreeSearchConfig, search_env

    # the same leaves per step as the CPU path: both batch L leaves per tree per network call
    cfg = TreeSearchConfig(num_simulations=sims, root=PUCTRoot(), leaves_per_step=leaves)
    # acting at tau 1 on the visits, as the CPU path's games (the search only recommends)
    acting = TemperatureSchedule(temperature=1.0, moves=None)
    init = jax.jit(jax.vmap(env.init))

    @jax.jit
    def move(states, key):
        k_search, k_act = jax.random.split(key)
        res = search_env(env, evaluator, variables, states, k_search, cfg)
        return jax.vmap(env.step)(states, acting.act(k_act, res.policy, states.step_count))

    init_keys = jax.random.split(jax.random.PRNGKey(0), games)
    move_keys = [jax.random.PRNGKey(i) for i in range(moves)]

    def play():
        states = init(init_keys)
        for k in move_keys:
            states = move(states, k)
        return states

    return play




def evaluator_cost(game, tiers, repeats):
    """Seconds per call of the jitted pool evaluator (step + observe + network) per batch size:
    the floor under the CPU path's time per batch."""
    env, evaluator, variables = _network(game)
    key = jax.random.PRNGKey(3)
    evaluate = make_pool_evaluator(env, evaluator, key)
    pool = make_state_pool(env, 2 * max(tiers) + 1)
    print("| batch | ms per call (median) | us per state |")
    print("| --- | --- | --- |")
    for t in tiers:
        idx = np.arange(t, dtype=np.int32)
        pool, _ = evaluate(pool, variables, np.full(t, NEW_GAME, np.int32), idx, idx)
        box = [pool]
        parent, action, dest = idx, np.full(t, 12, np.int32), idx + t

        def call():
            box[0], out = evaluate(box[0], variables, parent, action, dest)
            return out
        sec = time_compiled({"evaluate": call}, repeats=repeats)["evaluate"].median
        pool = box[0]
        print(f"| {t} | {sec * 1e3:.1f} | {sec / t * 1e6:.0f} |")


def selfplay(game, games, sims, moves, workers_list, leaves, tiers, repeats, overlap=False):
    """Whole self-play calls of both paths timed alternately (benchmarks/tools/timing.py: warm-up
    first, then only compiled code in the timed calls), median seconds per call. The CPU path's
    call also replays its games for training samples (`cpu_self_play`'s last step); its
    "search loop" column is the coordinator's own clock around the search alone. `overlap`:
    each worker count >= 2 also with `CPUSelfPlayConfig.overlap`. The evaluator floor is the
    pool evaluator alone on the batches one call of the first CPU configuration made, replayed
    in order (each with its results fetched), timed alternately with the rest: the CPU path's
    time without the tree, the queue and the Python loop (docs/cpu_search.md, "When to use
    it"). CPU seconds: the process's CPU time per call (median), steadier than the wall time
    under other jobs' load."""
    env, evaluator, variables = _network(game)
    key = jax.random.PRNGKey(3)
    fns = {f"all-JAX kernel (L={leaves})": _jax_selfplay(env, evaluator, variables, games,
                                                          sims, moves, leaves)}
    pool_eval = make_pool_evaluator(env, evaluator, key)
    loop_seconds = {}
    configs = []
    for w in workers_list:
        for ov in ((False, True) if overlap and w >= 2 else (False,)):
            cfg = CPUSelfPlayConfig(search=CPUSearchConfig(), num_workers=w, num_games=games,
                                    num_simulations=sims, leaves_per_step=leaves,
                                    max_steps=moves, batch_tiers=tuple(tiers), seed=w,
                                    overlap=ov)
            name = (f"CPU path (L={leaves}), {w} worker{'s' if w > 1 else ''}"
                    f"{', overlapped' if ov else ''}")
            configs.append((name, cfg))
    for name, cfg in configs:
        loop_seconds[name] = []

        def run(cfg=cfg, name=name):
            out = cpu_self_play(env, evaluator, variables, cfg, key, pool_evaluator=pool_eval)
            loop_seconds[name].append(out.stats["seconds"])
            assert out.stats["moves"] == games * moves, out.stats  # every game played out
            return out.policy
        fns[name] = run
    # the floor: the evaluator calls of one call of the first configuration, replayed
    batches = []

    def recording(pool, params, parent, action, dest):
        batches.append((parent.copy(), action.copy(), dest.copy()))
        return pool_eval(pool, params, parent, action, dest)
    first = configs[0][1]
    cpu_self_play(env, evaluator, variables, first, key, pool_evaluator=recording)
    num_slots = first.num_games * first.state_slots_per_game + 1

    def floor():
        pool = make_state_pool(env, num_slots)
        out = None
        for parent, action, dest in batches:
            pool, out = pool_eval(pool, variables, parent, action, dest)
            out = jax.device_get(out)
        return out
    fns[f"evaluator floor ({len(batches)} batches of {configs[0][0]} replayed)"] = floor
    cpu = {name: [] for name in fns}
    fns = {name: with_cpu_time(fn, cpu[name]) for name, fn in fns.items()}
    # two warm-up rounds: with 2 workers the batch sizes vary between calls, and every tier
    # must be compiled before the clock runs
    # whole calls, nothing let through: the CPU path's state pool is jitted since 2026-11-27
    # (it was 36 eager ops per call, allowed by name before)
    load = os.getloadavg()[0]
    t = time_compiled(fns, repeats=repeats, warmup=2)
    n = games * moves
    base = t[next(iter(fns))].median
    floor_s = t[next(reversed(t))].median
    print(f"{game}, {games} games x {moves} moves, {sims} simulations per move, median of "
          f"{repeats} alternating whole calls ({jax.devices()[0].platform}; load "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after)")
    print("| path | seconds per call | CPU seconds | positions/s | sims/s | speed vs kernel | "
          "search loop s | floor / this |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, timing in t.items():
        sec = timing.median
        loop = (f"{np.median(loop_seconds[name][-repeats:]):.2f}" if name in loop_seconds
                else "-")
        share = f"{floor_s / sec:.2f}" if name in loop_seconds else "-"
        print(f"| {name} | {sec:.2f} | {np.median(cpu[name][-repeats:]):.2f} | "
              f"{n / sec:.1f} | {n * sims / sec:.0f} | {base / sec:.2f}x | {loop} | {share} |")


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
    s.add_argument("--repeats", type=int, default=3)
    s.add_argument("--overlap", action="store_true",
                   help="each worker count >= 2 also with CPUSelfPlayConfig.overlap")
    e = sub.add_parser("evaluator")
    e.add_argument("--game", default="chess")
    e.add_argument("--tiers", type=int, nargs="+", default=[16, 64])
    e.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    if a.cmd == "alloc":
        alloc()
    elif a.cmd == "queue":
        queue(a.workers)
    elif a.cmd == "evaluator":
        evaluator_cost(a.game, a.tiers, a.repeats)
    else:
        selfplay(a.game, a.games, a.sims, a.moves, a.workers, a.leaves, a.tiers, a.repeats,
                 a.overlap)


if __name__ == "__main__":
    main()
