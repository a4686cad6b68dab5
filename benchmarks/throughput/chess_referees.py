"""Chess referees and records: the material-greedy player, encode_batch, Stockfish per move.

    python benchmarks/throughput/chess_referees.py [--batch 64] [--fens 1024] [--repeats 5]

- material-greedy: one batched decision (every legal move made, scored) over `--batch` random
  middlegame positions, and the part of it spent listing the legal moves (`jnp.nonzero` of
  the 4672-long mask), median of `--repeats` after compiling.
- encode_batch: `--fens` FENs to observations in one call (host parse + one jitted batch),
  against `envs.chess.from_fen(fen).observation` one FEN at a time.
- Stockfish at skill level 0, depth 1: the engine's time per move through python-chess
  (skipped without a binary).

The JAX calls (material-greedy, listing, encode_batch, from_fen) are timed through
benchmarks/tools/timing.py (`time_compiled`: warm-up, then it refuses a timed call that compiles or
runs JAX eagerly); Stockfish runs in another process behind python-chess, no JAX, so it is
timed with a plain clock (`host_seconds_per_call`). Figures: docs/benchmarks.md, "Chess
referees and records".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import chess  # noqa: E402
import chess.engine  # noqa: E402
import jax  # noqa: E402

import envs  # noqa: E402
from envs import chess as ec  # noqa: E402
from envs.chess import material as mat  # noqa: E402
from envs.chess.encode import encode_batch, states_from_fens  # noqa: E402
from envs.chess.pychess import random_fens as _random_fens  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def random_fens(n: int, seed: int = 0) -> list[str]:
    return _random_fens(n, seed, plies=(10, 60))


def host_seconds_per_call(fn, items) -> float:
    """Mean wall seconds of `fn(item)` over `items`, plain clock: for Stockfish through
    python-chess (a subprocess and its pipe), which runs no JAX, so there is nothing for
    `time_compiled` to check."""
    t0 = time.perf_counter()
    for item in items:
        fn(item)
    return (time.perf_counter() - t0) / len(items)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--fens", type=int, default=1024)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    env = envs.make("chess")
    print(f"device: {jax.devices()[0].device_kind}")

    states = states_from_fens(random_fens(args.batch))
    key = jax.random.PRNGKey(0)
    greedy = jax.jit(lambda s, k: mat.material_greedy_actions(env, s, k))
    listing = jax.jit(jax.vmap(
        lambda m: mat.legal_candidates(m, env.max_legal_actions).actions))
    t0 = time.perf_counter()
    jax.block_until_ready(greedy(states, key))
    compile_s = time.perf_counter() - t0
    mask = states.legal_action_mask
    times = time_compiled({"greedy": lambda: greedy(states, key), "listing": lambda: listing(mask)},
                          repeats=args.repeats)
    t, t_list = times["greedy"].median, times["listing"].median
    print(f"material-greedy, batch {args.batch}: {t * 1e3:.1f} ms per decision batch "
          f"({args.batch / t:.0f} decisions/s, {args.batch * env.max_legal_actions / t:.0f} "
          f"candidate moves/s); listing legal moves {t_list * 1e3:.2f} ms; first call "
          f"(compile) {compile_s:.1f} s")

    fens = random_fens(args.fens, seed=1)
    few = fens[:64]

    def one_at_a_time():
        return [ec.from_fen(fen).observation for fen in few]

    # encode_batch pads to a bucket size and slices the padding off outside jit (library code,
    # part of what a caller pays): let that eager slice through and say how many ops it was
    times = time_compiled({"encode_batch": lambda: encode_batch(fens),
                           "from_fen": one_at_a_time}, repeats=args.repeats,
                          allow_eager_in={"encode_batch": ["envs/chess/encode.py:_first"]})
    t, t_one = times["encode_batch"].median, times["from_fen"].median / len(few)
    eager = times["encode_batch"].allowed_eager_per_call
    print(f"encode_batch, {args.fens} FENs: {t * 1e3:.0f} ms ({args.fens / t:.0f} FENs/s"
          + (f"; {eager:.0f} eager op(s) slicing off the padding" if eager else "") + "); "
          f"from_fen one at a time: {t_one * 1e3:.2f} ms per FEN ({1 / t_one:.0f} FENs/s)")

    from turbozero.games.chess.referees import find_stockfish, open_stockfish
    try:
        find_stockfish()
    except ValueError as err:
        print(f"stockfish: skipped ({err})")
        return
    engine = open_stockfish()
    try:
        limit = chess.engine.Limit(depth=1)
        boards = [chess.Board(f) for f in fens[:200]]
        engine.play(boards[0], limit)
        per = host_seconds_per_call(lambda b: engine.play(b, limit), boards)
    finally:
        engine.quit()
    print(f"stockfish skill 0 depth 1: {per * 1e3:.2f} ms per move ({1 / per:.0f} moves/s)")


if __name__ == "__main__":
    main()
