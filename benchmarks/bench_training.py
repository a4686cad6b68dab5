"""Search simulations/s, self-play positions/s and training samples/s for one game.

    python benchmarks/bench_training.py --game backgammon --preset tiny

Each figure is the median of `--repeats` timed calls after a compile call, on the preset's
shapes (override with --num-envs / --simulations).
"""

from __future__ import annotations

import argparse

import jax

from turbozero.presets import get_preset
from turbozero.search import search
from turbozero.training import Trainer

from _timing import median_time  # benchmarks/_timing.py (this script's folder)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--game", default="backgammon")
    p.add_argument("--preset", default="tiny")
    p.add_argument("--num-envs", type=int, default=None)
    p.add_argument("--simulations", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    overrides = {"eval_every": 0, "eval_opponents": (), "checkpoint_every": 0}
    if args.num_envs:
        overrides["num_envs"] = args.num_envs
    cfg = get_preset(args.game, args.preset, **overrides)
    if args.simulations:
        import dataclasses

        cfg = dataclasses.replace(cfg, search=dataclasses.replace(cfg.search, num_simulations=args.simulations))
    trainer = Trainer(cfg)
    variables = trainer.variables(trainer.state.train_state)
    states = trainer.state.collector.env_state
    search_jit = jax.jit(lambda v, s, k: search(trainer.env, trainer.evaluator, v, s, k, cfg.search))
    t_search = median_time(lambda: search_jit(variables, states, jax.random.PRNGKey(0)).action, args.repeats)

    def collect():
        trainer.state, stats = trainer._collect(trainer.state)
        return stats.positions

    t_collect = median_time(collect, args.repeats)
    # fill enough replay for training to sample finished games
    while int(trainer.state.buffer.has_target.sum()) == 0:
        collect()

    def train():
        trainer.state, metrics = trainer._train(trainer.state)
        return metrics["loss"]

    t_train = median_time(train, args.repeats)
    n, sims = cfg.num_envs, cfg.search.num_simulations
    rows = [
        ("search simulations/s", n * sims / t_search, f"batch {n} x {sims} sims, {t_search*1e3:.1f} ms/call"),
        ("self-play positions/s", n * cfg.collect_steps / t_collect, f"{n} games x {cfg.collect_steps} moves"),
        ("training samples/s", cfg.batch_size * cfg.train_steps / t_train, f"{cfg.train_steps} steps x batch {cfg.batch_size}"),
    ]
    print(f"game={args.game} preset={args.preset} devices={jax.device_count()} ({jax.devices()[0].platform})")
    print(f"| {'measure':<24} | {'value':>12} | shapes |")
    print(f"| {'-'*24} | {'-'*12} | --- |")
    for name, value, note in rows:
        print(f"| {name:<24} | {value:>12,.0f} | {note} |")


if __name__ == "__main__":
    main()
