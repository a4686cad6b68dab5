"""PyRat maze generation time by board size (compile, then one generated maze). Feeds
docs/pyrat.md (the generation-time table; docs/benchmarks.md has no PyRat maze section).

    python benchmarks/throughput/pyrat_maze.py [--sizes 21 51 101 201] [--repeats 3]

Each size is a square board with the default densities and cheese count. The first call of
`jax.jit(env.init)` (compile + one maze) is timed on a plain clock on purpose: it is a compile
figure. The per-maze figure goes through `benchmarks/tools/timing.py` (`time_compiled`): the median of
`--repeats` calls on fresh keys, built before each clock starts.

Feeds docs/pyrat.md, "Maze generation".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import envs  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def time_size(size: int, repeats: int) -> tuple[float, float, float]:
    """(compile + first call, median of later calls, wall share) in seconds for a size x size board."""
    env = envs.make("pyrat", width=size, height=size)
    init = jax.jit(env.init)
    key0 = jax.random.PRNGKey(0)
    # plain clock on purpose: this times the compile (and one maze), not compiled code
    t0 = time.perf_counter()
    jax.block_until_ready(init(key0))
    first = time.perf_counter() - t0
    t = time_compiled({"init": init}, args=lambda r: (jax.random.PRNGKey(r + 1),),
                      repeats=repeats)
    state = init(jax.random.PRNGKey(repeats))  # the last timed call's maze (cached, untimed)
    walls = float((state.maze == 0).sum() - 4 * size)  # edges of the board are not walls
    passages = 2 * size * (size - 1)
    return first, t["init"].median, walls / 2 / passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[21, 51, 101, 201])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, "
          f"load avg {os.getloadavg()[0]:.1f}")
    for size in args.sizes:
        first, median, share = time_size(size, args.repeats)
        print(f"{size}x{size}: first call (compile + run) {first:.2f} s, "
              f"later calls {median * 1e3:.1f} ms, wall share {share:.2f}", flush=True)


if __name__ == "__main__":
    main()
