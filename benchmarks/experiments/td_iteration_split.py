"""Where a backgammon TD iteration's time goes: complete-move listing, network, update.

    python benchmarks/experiments/td_iteration_split.py [--preset tiny] [--iterations 6]

Builds the preset's Trainer (afterstate TD, `turbozero.training.td`; no run directory, no
evaluation) and runs `--iterations` iterations after one warm-up, timing each iteration's two
phases as the loop does (`Trainer.step`: self-play collection, then the updates). Self-play is
then split with the same games' states: one turn's complete-move listing alone
(`env.afterstates`, jitted and vmapped over the preset's games) and the whole 0-ply choice
(`choose_afterstates`: listing + network values of every afterstate + argmax), each timed on
compiled calls (benchmarks/tools/timing.py) and scaled by the turns an iteration plays
(`collect_steps`). The rest of collection (the chosen afterstate's value, replay writes,
rolls, restarts) is what is left. Figures: docs/benchmarks.md, "Backgammon complete moves".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.tools.timing import time_compiled  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--preset", default="tiny")
    p.add_argument("--iterations", type=int, default=6)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()

    from turbozero.presets import get_preset
    from turbozero.search.afterstate import choose_afterstates
    from turbozero.training.loop import Trainer

    cfg = get_preset("backgammon", args.preset)
    trainer = Trainer(cfg)
    trainer.step()  # compiles collection and updates
    collect, update = [], []
    for _ in range(args.iterations):
        rec = trainer.step()
        collect.append(rec["positions"] / rec["selfplay_positions_per_s"])
        if rec.get("train_samples_per_s"):
            update.append(cfg.batch_size * cfg.train_steps / rec["train_samples_per_s"])
    algo, env = trainer.algorithm, trainer.env
    player = algo.search_config.player
    states = trainer.state.collector.env_state  # the games' current decision states
    m = player.max_afterstates or env.max_afterstates

    listing = jax.jit(jax.vmap(lambda s: env.afterstates(s, m)))
    choose = jax.jit(lambda v, s: choose_afterstates(env, algo.evaluator, v, s, player)[1:])
    variables = Trainer.variables(trainer.state.train_state)
    jax.block_until_ready(listing(states))
    jax.block_until_ready(choose(variables, states))
    t_list = time_compiled({"listing": listing}, args=(states,), repeats=args.repeats)
    t_choose = time_compiled({"choose": lambda s: choose(variables, s)}, args=(states,),
                             repeats=args.repeats)
    turns = cfg.collect_steps
    c, u = float(np.median(collect)), float(np.median(update)) if update else 0.0
    lst = t_list["listing"].median * turns
    net = max(t_choose["choose"].median * turns - lst, 0.0)
    total = c + u
    print(f"preset {args.preset}: {cfg.num_envs} games x {turns} turns, {cfg.train_steps} "
          f"updates of {cfg.batch_size}, M {m}; median of {args.iterations} iterations, "
          f"backend {jax.default_backend()}")
    print(f"iteration {total:.3f} s = collection {c:.3f} s + updates {u:.3f} s")
    print(f"  move listing {lst:.3f} s ({100 * lst / total:.0f}%), network over the "
          f"afterstates {net:.3f} s ({100 * net / total:.0f}%), rest of collection "
          f"{max(c - lst - net, 0.0):.3f} s ({100 * max(c - lst - net, 0.0) / total:.0f}%), "
          f"updates {u:.3f} s ({100 * u / total:.0f}%)")


if __name__ == "__main__":
    main()
