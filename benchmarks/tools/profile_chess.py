"""Where a batched chess ply spends its time: CPU time per call of each piece.

    XLA_FLAGS="--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1" \\
        python benchmarks/tools/profile_chess.py [--batch 1024]

CPU time (`time.process_time`) with one XLA thread is what the numbers in docs/chess.md use: on
this shared 2-core machine wall times of the same call varied 3x between runs, CPU time by
about 10%. Positions are those after 30 random plies from the start.

Feeds docs/chess.md, "Random play: where the time goes".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from envs import chess as ec  # noqa: E402
from envs.chess import core  # noqa: E402
from envs.sampling import uniform_legal_action  # noqa: E402


def cpu_ms(fn, *args, reps: int = 20) -> float:
    """Mean CPU milliseconds of `fn(*args)` after one warm-up call."""
    jax.block_until_ready(fn(*args))
    t0 = time.process_time()
    for _ in range(reps):
        jax.block_until_ready(fn(*args))
    return (time.process_time() - t0) * 1e3 / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--plies", type=int, default=20, help="plies per scan in the loop timing")
    args = ap.parse_args()
    b = args.batch
    env = ec.Chess()
    choose = jax.jit(lambda k, m: jax.vmap(uniform_legal_action)(jax.random.split(k, b), m))
    transition = jax.jit(jax.vmap(env.transition))
    states = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(0), b))
    for i in range(30):
        states = transition(states, choose(jax.random.PRNGKey(i), states.legal_action_mask))
    action = choose(jax.random.PRNGKey(99), states.legal_action_mask)

    def moves(s):
        us, them, castle, ep = core.to_mover(s.board, s.current_player, s.castling, s.ep_square)
        return core.legal_moves(us, them, castle[:2], ep)

    fresh = jax.vmap(env.init_state)(jax.random.split(jax.random.PRNGKey(0), b))

    def play(state, key, restart: bool):
        def body(s, k):
            k1, k2 = jax.random.split(k)
            s = transition(s, choose(k1, s.legal_action_mask))
            if restart:
                done = s.terminated | s.truncated
                s = jax.tree.map(
                    lambda f, x: jnp.where(done.reshape((-1,) + (1,) * (x.ndim - 1)), f, x),
                    fresh, s)
            return s, None
        return jax.lax.scan(body, state, jax.random.split(key, args.plies))[0]

    rows = [
        ("action choice (uniform_legal_action)", cpu_ms(choose, jax.random.PRNGKey(1),
                                                        states.legal_action_mask)),
        ("transition", cpu_ms(transition, states, action)),
        ("  legal_moves alone", cpu_ms(jax.jit(jax.vmap(moves)), states)),
        ("observe", cpu_ms(jax.jit(jax.vmap(env.observe)), states)),
        ("step (transition + observe)", cpu_ms(jax.jit(jax.vmap(env.step)), states, action)),
        ("ply in a scan: choice + transition", cpu_ms(
            jax.jit(lambda s, k: play(s, k, False)), states, jax.random.PRNGKey(2),
            reps=5) / args.plies),
        ("ply in a scan: choice + transition + restart", cpu_ms(
            jax.jit(lambda s, k: play(s, k, True)), states, jax.random.PRNGKey(2),
            reps=5) / args.plies),
    ]
    print(f"batch {b}, jax {jax.__version__}, XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}, "
          f"load avg {os.getloadavg()[0]:.1f}")
    print("| piece | CPU ms per batched call |")
    print("|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} |")


if __name__ == "__main__":
    main()
