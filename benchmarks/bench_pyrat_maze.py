"""PyRat maze generation time by board size (compile, then one generated maze).

    python benchmarks/bench_pyrat_maze.py [--sizes 21 51 101 201] [--repeats 3]

Each size is a square board with the default densities and cheese count; the figure is the
median wall time of `jax.jit(env.init)` on fresh keys after one call that compiles.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import envs  # noqa: E402


def time_size(size: int, repeats: int) -> tuple[float, float, float]:
    """(compile + first call, median of later calls, wall share) in seconds for a size x size board."""
    env = envs.make("pyrat", width=size, height=size)
    init = jax.jit(env.init)
    t0 = time.perf_counter()
    state = jax.block_until_ready(init(jax.random.PRNGKey(0)))
    first = time.perf_counter() - t0
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        state = jax.block_until_ready(init(jax.random.PRNGKey(i + 1)))
        times.append(time.perf_counter() - t0)
    walls = float((state.maze == 0).sum() - 4 * size)  # edges of the board are not walls
    passages = 2 * size * (size - 1)
    return first, sorted(times)[len(times) // 2], walls / 2 / passages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[21, 51, 101, 201])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}")
    for size in args.sizes:
        first, median, share = time_size(size, args.repeats)
        print(f"{size}x{size}: first call (compile + run) {first:.2f} s, "
              f"later calls {median * 1e3:.1f} ms, wall share {share:.2f}", flush=True)


if __name__ == "__main__":
    main()
