"""Does a chess run's value head know material? For each run directory, 512 positions from
uniform random play (10-60 plies), the network's scalar value for the side to move against that
side's material lead in pawns (pawn 1, knight and bishop 3, rook 5, queen 9), for the untrained
network of the run's config and for its last checkpoint.

    python benchmarks/experiments/chess_value_probe.py runs/chess-small-seed0 [more run directories]

Used in docs/learning.md ("Chess: does the value head learn material?").
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np

from envs.chess.material import material
from turbozero.cli import enable_compilation_cache
from turbozero.training import Trainer
from turbozero.training.checkpoints import load_checkpoint, restore_network
from turbozero.runs import load_run_config

NUM_POSITIONS = 512
LEAD_BINS = ((-99, -3), (-2, -1), (0, 0), (1, 2), (3, 99))  # pawns, the mover's lead


def random_positions(env, n: int = NUM_POSITIONS, seed: int = 0):
    """[n] states after 10-60 uniform random plies each (a game that ends stays at its last
    live position)."""
    key = jax.random.PRNGKey(seed)
    states = jax.vmap(env.init)(jax.random.split(key, n))
    stop = jax.random.randint(jax.random.fold_in(key, 7), (n,), 10, 61)

    def ply(i, carry):
        s, k = carry
        k, k_act, k_step = jax.random.split(k, 3)
        action = jax.random.categorical(k_act, jnp.where(s.legal_action_mask, 0.0, -jnp.inf))
        nxt = jax.vmap(env.step)(s, action, jax.random.split(k_step, n))
        live = ~(nxt.terminated | nxt.truncated) & (i < stop)
        keep = lambda a, b: jnp.where(live.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)  # noqa: E731
        return jax.tree_util.tree_map(keep, nxt, s), k

    return jax.lax.fori_loop(0, 60, ply, (states, jax.random.fold_in(key, 1)))[0]


def probe(run_dir: str) -> None:
    trainer = Trainer(load_run_config(run_dir))
    untrained = trainer.variables(trainer.state.train_state)
    trainer.state, _ = load_checkpoint(run_dir, trainer.state, restore_network)
    trained = trainer.variables(trainer.state.train_state)
    states = jax.jit(lambda: random_positions(trainer.env))()
    balance = np.asarray(jax.vmap(material)(states.board))  # [n, 2] White, Black
    white = np.asarray(states.current_player) == 0
    lead = np.where(white, balance[:, 0] - balance[:, 1], balance[:, 1] - balance[:, 0])
    for name, variables, iteration in (("untrained", untrained, 0),
                                       ("trained", trained, int(trainer.state.iteration))):
        _, value_out = trainer.network.apply(variables, states.observation, train=False)
        value = np.asarray(trainer.spec.value_format.to_scalar(value_out))
        bins = " ".join(
            f"[{lo},{hi}]: {value[(lead >= lo) & (lead <= hi)].mean():+.2f} "
            f"(n={int(((lead >= lo) & (lead <= hi)).sum())})" for lo, hi in LEAD_BINS)
        print(f"{run_dir} {name} (iteration {iteration}): corr(value, lead) "
              f"{np.corrcoef(lead, value)[0, 1]:+.2f}; mean value by lead {bins}")


if __name__ == "__main__":
    enable_compilation_cache()
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for run in sys.argv[1:]:
        probe(run)
