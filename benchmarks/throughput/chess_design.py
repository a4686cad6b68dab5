"""Chess self-play at the design's shape: the 15 x 192 network, 800 simulations a move.

    python benchmarks/throughput/chess_design.py --out FILE.json [--batches 256 1024]

Feeds docs/benchmarks.md, "Chess at the design's shape" (issue 46, item 4). One self-play step
is the `large` preset's search (the tree kernel, 800 simulations, the spec's PUCT and root
noise) on a batch of games, then `env.step` with the chosen moves: one new position per game.
Per batch size it prints and writes positions/s (games x steps / seconds), nodes/s (positions/s
x 800: the figure engines such as lc0 report), the seconds of one step, the compile seconds and
the device's peak memory in use (`Device.memory_stats()`, where the backend reports it).
Randomly initialised network: the speed does not depend on the weights. Meant for a GPU (on 2
CPU cores one step at batch 8 takes minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import envs  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="JSON file for the results")
    p.add_argument("--batches", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--simulations", type=int, default=800)
    args = p.parse_args(argv)
    if min(args.batches) < 1 or args.repeats < 1 or args.simulations < 1:
        p.error("--batches, --repeats and --simulations must be >= 1")

    import dataclasses

    from turbozero.games import build_network, game_spec
    from turbozero.presets import get_preset
    from turbozero.search import NetworkEvaluator, search

    preset = get_preset("chess", "large")
    config = dataclasses.replace(preset.algorithm.search, num_simulations=args.simulations)
    env = envs.make("chess")
    spec = game_spec("chess")
    net = build_network(spec, env, dict(preset.network))
    evaluator = NetworkEvaluator(net.apply, spec.value_format)
    device = jax.devices()[0]
    result = {"device": f"{device.platform}: {getattr(device, 'device_kind', '')}",
              "jax": jax.__version__, "network": dict(preset.network),
              "simulations": args.simulations, "xla_flags": os.environ.get("XLA_FLAGS", ""),
              "rows": []}

    def self_play_step(variables, states, key):
        k1, k2 = jax.random.split(key)
        out = search(env, evaluator, variables, states, k1, config)
        keys = jax.random.split(k2, states.step_count.shape[0])
        return jax.vmap(env.step)(states, out.action, keys)

    for batch in args.batches:
        states = jax.jit(lambda k, b=batch: jax.vmap(env.init)(jax.random.split(k, b)))(
            jax.random.PRNGKey(0))
        variables = jax.jit(net.init)(jax.random.PRNGKey(1), states.observation[:1])
        key = jax.random.PRNGKey(2)
        t0 = time.perf_counter()
        step = jax.jit(self_play_step).lower(variables, states, key).compile()
        compile_s = time.perf_counter() - t0
        t = time_compiled({"step": step}, args=(variables, states, key), repeats=args.repeats)
        seconds = t["step"].median
        stats = device.memory_stats() or {}
        row = {"batch": batch, "seconds_per_step": seconds, "positions_per_s": batch / seconds,
               "nodes_per_s": batch * args.simulations / seconds, "compile_s": compile_s,
               "peak_bytes_in_use": stats.get("peak_bytes_in_use"),
               "bytes_limit": stats.get("bytes_limit")}
        result["rows"].append(row)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        peak = row["peak_bytes_in_use"]
        print(f"batch {batch}: {seconds:.2f} s a step, {row['positions_per_s']:,.0f} positions/s, "
              f"{row['nodes_per_s']:,.0f} nodes/s, compile {compile_s:.1f} s, peak memory "
              f"{'n/a' if peak is None else f'{peak / 2**30:.1f} GiB'}", flush=True)
        del step, states, variables
    return result


if __name__ == "__main__":
    main()
