"""Speed of the gomoku line-extender baseline (envs/gomoku/extender.py).

    python benchmarks/throughput/gomoku_extender.py [--configs 9,4,9 15,5,15] [--players 2 3]
                                               [--batch 64] [--steps 32] [--repeats 5]

Each config is size,win_length,view. Two figures per config and number of players:

* policy: one call of the jitted policy on a batch of `batch` mid-game positions (each after
  `steps` uniformly random moves; games that ended are still in the batch, the policy runs on
  them all the same): moves chosen per second;
* self-play: `steps` moves of extender-against-extender games (policy + env.step) in one jitted
  `lax.scan`: moves per second, the rate an evaluation match runs at.

Wall time is the median of `repeats` calls of compiled code (benchmarks/tools/timing.py's
`time_compiled`: warm-up first, the two calls interleaved, a timed call that compiles or runs a
JAX op eagerly refused); the mean CPU time (the process, all threads) of the same calls is
printed too, since the machine is shared.

Feeds docs/benchmarks.md, "Gomoku line-extender baseline".
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402

import envs  # noqa: E402
from envs.gomoku.extender import line_extender  # noqa: E402
from envs.sampling import uniform_legal_action  # noqa: E402
from benchmarks.tools.timing import time_compiled, with_cpu_time  # noqa: E402


def bench(size: int, win_length: int, view: int, players: int, batch: int, steps: int,
          repeats: int) -> None:
    env = envs.make("gomoku", size=size, win_length=win_length, num_players=players, view=view)
    policy = line_extender(env)
    step = jax.vmap(env.step)

    @jax.jit
    def positions(key):
        k0, k1 = jax.random.split(key)
        state = jax.vmap(env.init)(jax.random.split(k0, batch))

        def body(s, k):
            ka, ks = jax.random.split(k)
            a = jax.vmap(uniform_legal_action)(jax.random.split(ka, batch), s.legal_action_mask)
            return step(s, a, jax.random.split(ks, batch)), None

        return jax.lax.scan(body, state, jax.random.split(k1, steps))[0]

    @jax.jit
    def self_play(key):
        k0, k1 = jax.random.split(key)
        state = jax.vmap(env.init)(jax.random.split(k0, batch))

        def body(s, k):
            ka, ks = jax.random.split(k)
            return step(s, policy(None, s, ka), jax.random.split(ks, batch)), None

        return jax.lax.scan(body, state, jax.random.split(k1, steps))[0].board

    states = positions(jax.random.PRNGKey(0))
    choose = jax.jit(policy)
    key = jax.random.PRNGKey(1)
    cpu = {"policy": [], "self-play": []}
    fns = {"policy": with_cpu_time(lambda k: choose(None, states, k), cpu["policy"]),
           "self-play": with_cpu_time(self_play, cpu["self-play"])}
    t = time_compiled(fns, args=(key,), repeats=repeats)
    wall, sp_wall = t["policy"].median, t["self-play"].median
    # CPU seconds of the timed calls only (the warm-up call comes first in each list)
    cpu_s, sp_cpu = (sum(cpu[k][-repeats:]) / repeats for k in ("policy", "self-play"))
    moves = batch * steps
    print(f"{size}x{size}/{win_length} view {view}, {players} players, batch {batch}: "
          f"policy {batch / wall:,.0f} moves/s wall ({batch / cpu_s:,.0f} per CPU s), "
          f"self-play {moves / sp_wall:,.0f} moves/s wall ({moves / sp_cpu:,.0f} per CPU s)",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", nargs="+", default=["9,4,9", "15,5,15"])
    parser.add_argument("--players", nargs="+", type=int, default=[2, 3])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, load {os.getloadavg()[0]:.1f}")
    for text in args.configs:
        size, win_length, view = (int(v) for v in text.split(","))
        for players in args.players:
            bench(size, win_length, view, players, args.batch, args.steps, args.repeats)


if __name__ == "__main__":
    main()
