"""Gumbel MuZero search on the learned model (issue 20): simulations/s, and memory per position.

    python benchmarks/throughput/muzero_search.py [--size 100] [--win-length 8] [--view 21]
                                      [--batches 16 64] [--simulations 32] [--preset tiny]

* search: `tree_search` on `LearnedModel` (turbozero/search/learned.py) from random 3-player
  positions of a `size` board seen through a `view` x `view` window, with the network of the
  gomoku `--preset` (its channels and blocks) initialised at random; simulations/s = batch x
  simulations / median wall time of one jitted search (after a compiling call).
* memory: XLA's `memory_analysis()` of the compiled search (temporaries: the tree, including
  one hidden state per node), and the replay bytes per stored position (observation, policy,
  mask, action, values and bookkeeping of `turbozero.training.replay`).

Timed through benchmarks/tools/timing.py (`time_compiled`: a warm-up call, then it refuses a timed
call that compiles or runs JAX eagerly). Figures: docs/benchmarks.md, "Gumbel MuZero search on
the learned model".
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import envs  # noqa: E402
from envs.sampling import uniform_legal_action  # noqa: E402
from turbozero.networks.muzero import MuZeroNet  # noqa: E402
from turbozero.networks.value_formats import MoverRelativeValues  # noqa: E402
from turbozero.presets import get_preset  # noqa: E402
from turbozero.search.kernel import tree_search  # noqa: E402
from turbozero.search.learned import LearnedModel  # noqa: E402
from turbozero.training import replay  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def random_positions(env, batch: int, moves: int, key):
    """`batch` positions after `moves` random legal moves each (observations included)."""

    def play(k):
        k0, k1 = jax.random.split(k)
        state = env.init(k0)

        def body(s, kk):
            return env.step(s, uniform_legal_action(kk, s.legal_action_mask)), None

        state, _ = jax.lax.scan(body, state, jax.random.split(k1, moves))
        return state

    return jax.jit(jax.vmap(play))(jax.random.split(key, batch))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--win-length", type=int, default=8)
    ap.add_argument("--view", type=int, default=21)
    ap.add_argument("--batches", type=int, nargs="+", default=[16, 64])
    ap.add_argument("--simulations", type=int, default=32)
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    env = envs.make("gomoku", size=args.size, win_length=args.win_length, num_players=3,
                    view=args.view)
    preset = get_preset("gomoku", args.preset)
    search = dataclasses.replace(preset.algorithm.search.search, num_simulations=args.simulations)
    obs_shape = env.init(jax.random.PRNGKey(0)).observation.shape
    net = MuZeroNet(num_actions=env.num_actions, num_players=3, hidden_shape=obs_shape[:2],
                    **dict(preset.network))
    fmt = MoverRelativeValues(3)
    print(f"gomoku {args.size}x{args.size}, {args.win_length} in a row, view {args.view}; "
          f"network of preset {args.preset!r} {dict(preset.network)}; {args.simulations} "
          f"simulations, Gumbel m={search.root.max_considered}; devices {jax.devices()}")
    for batch in args.batches:
        states = random_positions(env, batch, 30, jax.random.PRNGKey(batch))
        variables = net.init(jax.random.PRNGKey(1), states.observation[:1])
        model = LearnedModel(net.apply, env.num_actions, fmt)

        def run(v, s, k):
            return tree_search(model, v, s, k, search)[0].policy

        fn = jax.jit(run)
        key = jax.random.PRNGKey(2)
        compiled = fn.lower(variables, states, key).compile()
        mem = compiled.memory_analysis()
        temp = getattr(mem, "temp_size_in_bytes", 0) if mem is not None else 0
        seconds = time_compiled({"search": fn}, args=(variables, states, key),
                                repeats=args.repeats)["search"].median
        print(f"batch {batch:5d}: {batch * args.simulations / seconds:10.0f} simulations/s "
              f"({seconds * 1e3:.0f} ms per search), search temporaries "
              f"{temp / 2**20:.1f} MiB ({temp / batch / 2**10:.0f} KiB per game)")
    buf = replay.init_buffer(1, 1, states.observation[0], (env.num_actions,), 3,
                             replay.trajectory_fields(3))
    per_position = sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(buf)
                       if np.ndim(x) >= 2)
    obs = np.asarray(buf.observation).nbytes
    print(f"replay: {per_position} bytes per position ({obs} of them the float32 observation "
          f"{tuple(obs_shape)})")


if __name__ == "__main__":
    main()
