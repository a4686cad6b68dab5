"""Search simulations/s, self-play positions/s and training samples/s for one game.

    python benchmarks/throughput/training.py --game backgammon --preset az-tiny
    python benchmarks/throughput/training.py --game chess --preset large --memory

Each figure is the median of `--repeats` timed calls after a compile call, on the preset's
shapes (override with --num-envs / --simulations / --collect-steps / --train-steps /
--batch-size), timed through benchmarks/tools/timing.py (`time_compiled`, which refuses a timed call
that compiles or runs JAX eagerly; the search key is built before timing). `--memory` runs
nothing: it builds the loop state abstractly (`jax.eval_shape`, no allocation), compiles one
self-play iteration and one training step at the preset's full shapes and prints XLA's
`memory_analysis()` of each and the replay's size. Training is timed as the Trainer runs it
(`trainer._train`: per-step calls on CPU, one scan on GPU/TPU) and as one `lax.scan`
(`trainer.train`), alternately in one timing call.

Quick run: --game backgammon --preset tiny --num-envs 4 --simulations 4 --collect-steps 16
--train-steps 2 --batch-size 16 --repeats 2. Figures: docs/benchmarks.md, "Search and
training", "Chess training rates and the `large` memory" and "Training steps outside a
`lax.scan`".
"""

from __future__ import annotations

import os
import sys
import argparse
import dataclasses

import jax

from turbozero.presets import get_preset
from turbozero.training import Trainer
from turbozero.training import updates as updates_lib
from turbozero.training.algorithms import tree_config

# the repository root, for benchmarks.tools.timing
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.tools.timing import time_compiled  # noqa: E402


def with_simulations(search_config, n: int):
    """`search_config` with `n` simulations, also where it nests its tree search (MuZero)."""
    tree = dataclasses.replace(tree_config(search_config), num_simulations=n)
    return tree if tree_config(search_config) is search_config else dataclasses.replace(search_config, search=tree)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--game", default="chess")
    p.add_argument("--preset", default="tiny")
    p.add_argument("--num-envs", type=int, default=None)
    p.add_argument("--simulations", type=int, default=None)
    p.add_argument("--collect-steps", type=int, default=None)
    p.add_argument("--train-steps", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--memory", action="store_true")
    args = p.parse_args()
    overrides = {"eval_every": 0, "eval_opponents": (), "checkpoint_every": 0}
    for name in ("num_envs", "collect_steps", "train_steps", "batch_size"):
        if getattr(args, name):
            overrides[name] = getattr(args, name)
    cfg = get_preset(args.game, args.preset, **overrides)
    try:
        tree_config(cfg.algorithm.search)
    except ValueError:
        p.error(f"{args.game} {args.preset} has no tree search ({type(cfg.algorithm.search).__name__}); "
                "this script times one (backgammon: --preset az-tiny)")
    if args.simulations:
        cfg = dataclasses.replace(cfg, algorithm=dataclasses.replace(
            cfg.algorithm, search=with_simulations(cfg.algorithm.search, args.simulations)))
    if args.memory:
        return memory(cfg, args)
    trainer = Trainer(cfg)
    variables = trainer.variables(trainer.state.train_state)
    states = trainer.state.collector.env_state
    # the algorithm's own self-play search (mctx, the kernel, MCGS for simultaneous games,
    # MuZero on its learned model): its targets, as the collector asks for them
    search_jit = jax.jit(trainer.algorithm.self_play)
    key = jax.random.PRNGKey(0)  # built before timing: eager work otherwise
    t_search = time_compiled({"search": search_jit}, args=(variables, states, key),
                             repeats=args.repeats)["search"].median

    def collect():
        trainer.state, stats = trainer._collect(trainer.state)
        return stats.positions

    t_collect = time_compiled({"collect": collect}, repeats=args.repeats)["collect"].median
    # fill enough replay for training to sample finished games
    while int(trainer.state.buffer.has_target.sum()) == 0:
        collect()

    def train():
        trainer.state, metrics = trainer._train(trainer.state)
        return metrics["loss"]

    # the same updates in one lax.scan (trainer.train), which the Trainer does not use on CPU:
    # on XLA:CPU convolution gradients inside a loop body run far slower (trainer.train's
    # docstring); timed alternately with the Trainer's own updates, on the state of the moment
    scan = jax.jit(lambda ts, buf, key: updates_lib.train(
        ts, buf, key, loss_fn=trainer.algorithm.loss_fn, batch_size=cfg.batch_size,
        num_steps=cfg.train_steps, sample_fn=trainer.algorithm.sample)[1]["loss"])
    # nothing let through: the Trainer's train_fn unpacked its key split eagerly (one unstack
    # per iteration) until 2026-11-27
    t = time_compiled({"train": train,
                       "scan": lambda: scan(trainer.state.train_state, trainer.state.buffer,
                                            trainer.state.key)}, repeats=args.repeats)
    t_train, t_scan = t["train"].median, t["scan"].median
    n, sims = cfg.num_envs, tree_config(cfg.algorithm.search).num_simulations
    rows = [
        ("search simulations/s", n * sims / t_search, f"batch {n} x {sims} sims, {t_search*1e3:.1f} ms/call"),
        ("self-play positions/s", n * cfg.collect_steps / t_collect, f"{n} games x {cfg.collect_steps} moves"),
        ("training samples/s", cfg.batch_size * cfg.train_steps / t_train, f"{cfg.train_steps} steps x batch {cfg.batch_size}"),
        ("  the same in a lax.scan", cfg.batch_size * cfg.train_steps / t_scan,
         f"trainer.train; the Trainer's steps are {t_scan / t_train:.1f}x as fast"),
    ]
    print(f"game={args.game} preset={args.preset} devices={jax.device_count()} ({jax.devices()[0].platform})")
    print(f"| {'measure':<24} | {'value':>12} | shapes |")
    print(f"| {'-'*24} | {'-'*12} | --- |")
    for name, value, note in rows:
        print(f"| {name:<24} | {value:>12,.{0 if value >= 100 else 2}f} | {note} |")


class _AbstractTrainer(Trainer):
    """A Trainer whose loop state is shapes only (nothing allocated)."""

    def init_state(self):
        return jax.eval_shape(super().init_state)


def _gb(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def memory(cfg, args) -> None:
    trainer = _AbstractTrainer(cfg)
    state = trainer.state

    def nbytes(tree):
        return sum(x.size * x.dtype.itemsize for x in jax.tree_util.tree_leaves(tree))

    replay = nbytes(state.buffer)
    positions = cfg.num_envs * cfg.replay_capacity
    print(f"game={args.game} preset={args.preset} ({jax.devices()[0].platform}, compiled only)")
    print(f"loop state {_gb(nbytes(state))}; replay {_gb(replay)} = {positions:,} positions x "
          f"{replay / positions:,.0f} bytes")
    print("| step | temporaries | arguments | outputs | aliased (donated) |")
    print("| --- | --- | --- | --- | --- |")
    # training runs one jitted update per step (loop.py, StepRunner): its memory is one step's
    for name, lowered, what in (
            ("self-play iteration", trainer._collect.lower(state),
             f"{cfg.num_envs} games x {cfg.collect_steps} moves"),
            ("training step", trainer._train_steps.step.lower(state.train_state, state.buffer,
                                                              state.key),
             f"batch {cfg.batch_size}, one of {cfg.train_steps} per iteration")):
        m = lowered.compile().memory_analysis()
        print(f"| {name} ({what}) | {_gb(m.temp_size_in_bytes)} | "
              f"{_gb(m.argument_size_in_bytes)} | {_gb(m.output_size_in_bytes)} | "
              f"{_gb(m.alias_size_in_bytes)} |")


if __name__ == "__main__":
    main()
