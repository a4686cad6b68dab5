"""One ply (`turbozero.search.one_ply`, the 1-ply greedy player and `OnePlyConfig`) on chess:
its legal moves only, padded to `env.max_legal_actions` (218), against every action id (4672),
which is what the greedy baseline made before 2026-11-25. Same states, same network.

    python benchmarks/throughput/one_ply.py [--batch 4] [--repeats 3]

Random middlegame positions, the `small` preset's untrained network; median of `--repeats`
calls after a warm-up call, through benchmarks/tools/timing.py (`time_compiled`, which refuses a
timed call that compiles or runs JAX eagerly). Both give the same moves (checked here).
Figures: docs/benchmarks.md, "One ply: legal moves only".
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from envs.chess.encode import states_from_fens  # noqa: E402
from envs.chess.pychess import random_fens  # noqa: E402
from turbozero.presets import get_preset  # noqa: E402
from turbozero.search.one_ply import one_ply_search  # noqa: E402
from turbozero.training import Trainer  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    trainer = Trainer(get_preset("chess", "small"))
    env, evaluator = trainer.env, trainer.algorithm.evaluator
    variables = trainer.variables(trainer.state.train_state)
    states = states_from_fens(random_fens(args.batch, 0, plies=(10, 60)))
    print(f"device: {jax.devices()[0].device_kind}; batch {args.batch}")
    widths = {"legal moves": env.max_legal_actions, "every action id": env.num_actions}
    fns = {name: jax.jit(lambda v, s, w=width: one_ply_search(env, evaluator, v, s, w).action)
           for name, width in widths.items()}
    # the two forms timed alternately in one call, so load from other jobs falls on both alike
    times = time_compiled(fns, args=(variables, states), repeats=args.repeats)
    moves = {}
    for name, width in widths.items():
        t = times[name].median
        moves[name] = np.asarray(fns[name](variables, states))
        print(f"{name:16s} ({width:4d} results a state): {t * 1e3:8.1f} ms a batch, "
              f"{args.batch / t:7.1f} decisions/s", flush=True)
    assert (moves["legal moves"] == moves["every action id"]).all(), moves


if __name__ == "__main__":
    main()
