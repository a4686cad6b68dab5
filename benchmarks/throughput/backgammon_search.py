"""Backgammon search: the tree kernel (chance nodes) against mctx's `stochastic_muzero_policy`.

    python benchmarks/throughput/backgammon_search.py                      # speed, batch 64, 64 sims
    python benchmarks/throughput/backgammon_search.py --selection mctx     # kernel with MctxPUCT
    python benchmarks/throughput/backgammon_search.py --leaves 4           # 4 leaves per step
    python benchmarks/throughput/backgammon_search.py --parts              # where the kernel's time goes
    python benchmarks/throughput/backgammon_search.py --match 200 --sims 32   # kernel vs mctx games
    python benchmarks/throughput/backgammon_search.py --match 200 --sims 32 --opponent 0-ply --run DIR

Both sides search the same env with the same network (the backgammon preset's MLP and 4-way
value head, untrained unless `--run DIR` names a run directory whose newest checkpoint is used)
and the same number of simulations; the kernel has a PUCT root (Dirichlet 0.3 / 0.25 over the
legal moves, as mctx's family here) and SpecPUCT(c 1.25, fpu 0) or MctxPUCT selection; mctx runs
with its family's defaults (`DynamicFPU(0)`, PUCT c 1.25). Only compiled calls are timed: each
function is jitted and run once, then the two sides are timed alternately, every call waiting
for its results; the median of the repetitions is printed.

`--match N`: N games, the kernel player against the mctx player at equal simulations, seats
alternated game by game, both acting on the most visited move (temperature 0, no root noise);
all games are played side by side (one batched search per side and move). Prints the kernel's
mean points per game (backgammon's 1 / 2 / 3 point results) with its standard error.
`--opponent 0-ply` plays the kernel against the complete-move player at 0 plies with the same
network instead (does a search on top of a TD-trained network help? docs/learning.md).

Feeds docs/benchmarks.md, "Backgammon search: kernel vs mctx".
"""

from __future__ import annotations

import os
import argparse
import functools
import math
import shlex
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import envs
from turbozero.games import build_network, game_spec
from turbozero.presets import get_preset
from turbozero.search import (
    AfterstatePlayerConfig, MctxConfig, MctxPUCT, NetworkEvaluator, PUCTRoot, SpecPUCT, TreeSearchConfig,
    random_actions, search)
# the repository root, for benchmarks.tools.timing
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.tools.timing import time_compiled  # noqa: E402


def _network(env, preset: str, run_dir: str | None, example_obs):
    """(evaluator, variables): the preset's network (untrained, seed 1) or a run's newest
    checkpoint."""
    if run_dir is not None:
        from turbozero.training import Trainer
        from turbozero.training.checkpoints import load_checkpoint, restore_network
        from turbozero.runs import load_run_config

        trainer = Trainer(load_run_config(run_dir))
        trainer.state, step = load_checkpoint(run_dir, trainer.state, restore_network)
        print(f"network: {run_dir}, checkpoint {step}")
        return trainer.algorithm.evaluator, trainer.variables(trainer.state.train_state)
    spec = game_spec("backgammon")
    net = build_network(spec, env, dict(get_preset("backgammon", preset).network))
    print(f"network: preset {preset!r} {dict(get_preset('backgammon', preset).network)}, "
          "untrained (seed 1)")
    return NetworkEvaluator(net.apply, spec.value_format), net.init(jax.random.PRNGKey(1),
                                                                    example_obs)


def _positions(env, batch: int, plies: int = 20, seed: int = 0):
    """Decision states of `batch` random games after `plies` random checker moves."""
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(seed), batch))
    step = jax.jit(jax.vmap(env.step))
    for i in range(plies):
        k1, k2 = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), i))
        states = step(states, random_actions(states, k1), jax.random.split(k2, batch))
    return states


def kernel_config(args, evaluation: bool = False) -> TreeSearchConfig:
    selection = MctxPUCT() if args.selection == "mctx" else SpecPUCT(c_puct=1.25, fpu_base=0.0)
    root = PUCTRoot(dirichlet_fraction=0.0) if evaluation else PUCTRoot(0.3, 0.25)
    return TreeSearchConfig(num_simulations=args.sims, leaves_per_step=args.leaves,
                            selection=selection, root=root)


def mctx_config(args, evaluation: bool = False):
    if evaluation:
        return MctxConfig(num_simulations=args.sims, dirichlet_fraction=0.0)
    return MctxConfig(num_simulations=args.sims)


def _time_alternately(fns: dict, args_of, repeats: int) -> dict:
    """Median seconds per call of each compiled fn, the fns called in turn each repetition
    (`timing.time_compiled`: two warm-up calls, the args built before each clock starts, and a
    timed call that compiles or runs JAX ops un-jitted refused)."""
    t = time_compiled(fns, args=args_of, repeats=repeats, warmup=2)
    return {name: timing.median for name, timing in t.items()}


def speed(args, env, evaluator, variables, states) -> None:
    kcfg, mcfg = kernel_config(args), mctx_config(args)
    fns = {
        "kernel": jax.jit(lambda v, s, k: search(env, evaluator, v, s, k, kcfg).action),
        "mctx": jax.jit(lambda v, s, k: search(env, evaluator, v, s, k, mcfg).action),
    }
    t = _time_alternately(
        fns, lambda r: (variables, states, jax.random.fold_in(jax.random.PRNGKey(3), r + 2)),
        args.repeats)
    print(f"kernel: {kcfg}")
    print(f"{args.opponent}:   {mcfg}")
    print(f"backgammon search, batch {args.batch}, {args.sims} simulations, "
          f"{jax.devices()[0].platform}, median of {args.repeats} alternating calls")
    print(f"kernel: {t['kernel']:.4f} s per search")
    print(f"mctx:   {t['mctx']:.4f} s per search")
    print(f"kernel speed / mctx speed: {t['mctx'] / t['kernel']:.2f}x")


def _total(tree) -> jax.Array:
    """float32[]: the sum of every array of `tree` (so that no part of a result is dropped)."""
    return sum(jnp.sum(x.astype(jnp.float32)) for x in jax.tree_util.tree_leaves(tree))


def parts(args, env, evaluator, variables, states) -> None:
    """Seconds per search of the kernel's pieces: `num_simulations` calls of each on the
    batch (B * L rows), against the whole search."""
    from turbozero.search.model import EnvModel

    model = EnvModel(env, evaluator)
    n, rows = args.sims, args.batch
    acts = random_actions(states, jax.random.PRNGKey(2))
    emb = states.replace(observation=None)
    after = jax.vmap(env.step_deterministic)(states, acts).replace(observation=None)
    is_after = after.is_chance
    half = jax.tree_util.tree_map(  # half the rows at a chance state, as in a search
        lambda a, s: jnp.where((jnp.arange(rows) % 2 == 0).reshape((-1,) + (1,) * (a.ndim - 1)),
                               a, s), after, emb)

    def repeat(fn):
        # inputs depend on the loop index, so that XLA cannot hoist the work out of the loop
        def body(i, acc):
            return acc + fn(i)
        return jax.jit(lambda: jax.lax.fori_loop(0, n, body, jnp.zeros(())))

    def chance_ids(i):
        return jnp.full((rows,), i % env.num_chance_outcomes, jnp.int32)

    obs = jax.vmap(env.observe)(states)
    fns = {
        "whole kernel search": functools.partial(jax.jit(
            lambda v, s: search(env, evaluator, v, s, jax.random.PRNGKey(3),
                                kernel_config(args)).action), variables, states),
        "EnvModel.step x sims": repeat(lambda i: _total(model.step(
            variables, jax.random.PRNGKey(0), half, (acts + i) % env.num_actions))),
        "network x sims": repeat(lambda i: _total(evaluator(variables, obs + i * 1e-6))),
        "observe x sims": repeat(lambda i: _total(jax.vmap(env.observe)(
            half.replace(remaining=half.remaining + i % 2)))),
        "step_deterministic x sims": repeat(lambda i: _total(jax.vmap(env.step_deterministic)(
            emb, (acts + i) % env.num_actions))),
        "step_chance x sims": repeat(lambda i: _total(jax.vmap(env.step_chance)(
            after, chance_ids(i)))),
        "chance_outcome_probs x sims": repeat(lambda i: _total(jax.vmap(
            env.chance_outcome_probs)(half.replace(is_chance=is_after ^ (i % 2 == 1))))),
    }
    t = _time_alternately({k: (lambda f=f: f()) for k, f in fns.items()}, lambda r: (),
                          args.repeats)
    whole = t["whole kernel search"]
    print(f"kernel pieces, batch {rows}, {n} simulations, {jax.devices()[0].platform}")
    print("| piece | ms per search | share of the kernel search |")
    print("| --- | --- | --- |")
    for name, s in t.items():
        print(f"| {name} | {s * 1e3:.1f} | {s / whole:.0%} |")


def match(args, env, evaluator, variables) -> None:
    """args.match games, kernel vs mctx (or the 0-ply complete-move player), seats alternated;
    the kernel's mean points per game."""
    kcfg = kernel_config(args, evaluation=True)
    mcfg = (AfterstatePlayerConfig(plies=0) if args.opponent == "0-ply"
            else mctx_config(args, evaluation=True))
    g = args.match
    kernel_seat = jnp.arange(g) % 2  # game i: the kernel plays seat i % 2

    @jax.jit
    def ply(states, returns, key):
        k_k, k_m, k_env = jax.random.split(key, 3)
        a_k = search(env, evaluator, variables, states, k_k, kcfg).action
        a_m = search(env, evaluator, variables, states, k_m, mcfg).action
        done = states.terminated | states.truncated
        action = jnp.where(states.current_player == kernel_seat, a_k, a_m)
        nxt = jax.vmap(env.step)(states, action, jax.random.split(k_env, g))
        returns = returns + jnp.where(done[:, None], 0.0, nxt.rewards)
        return nxt, returns

    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(args.seed), g))
    returns = jnp.zeros((g, env.num_players), jnp.float32)
    t0, moves = time.perf_counter(), 0
    while moves < args.max_moves and not bool(jnp.all(states.terminated | states.truncated)):
        states, returns = ply(states, returns, jax.random.fold_in(jax.random.PRNGKey(args.seed),
                                                                  moves))
        moves += 1
        if moves % 100 == 0:
            print(f"  {moves} checker moves, {int(jnp.sum(states.terminated))} games over, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    finished = np.asarray(states.terminated)
    points = np.asarray(returns)[np.arange(g), np.asarray(kernel_seat)][finished]
    mean = points.mean() if len(points) else float("nan")
    se = points.std(ddof=1) / math.sqrt(len(points)) if len(points) > 1 else float("nan")
    wins = int((points > 0).sum())
    print(f"kernel: {kcfg}")
    print(f"{args.opponent}:   {mcfg}")
    print(f"match: {g} games ({int(finished.sum())} finished within {moves} checker moves, "
          f"{time.perf_counter() - t0:.0f} s), {args.sims} simulations each side, seats "
          "alternated")
    print(f"kernel won {wins} of {len(points)}; kernel mean points per game "
          f"{mean:+.3f} +- {se:.3f} (standard error)")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--sims", type=int, default=64)
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--selection", choices=("spec", "mctx"), default="spec")
    p.add_argument("--leaves", type=int, default=1, help="kernel leaves_per_step")
    p.add_argument("--preset", default="medium", help="backgammon preset whose network is used")
    p.add_argument("--run", default=None, help="run directory: its newest checkpoint's network")
    p.add_argument("--parts", action="store_true", help="time the kernel's pieces")
    p.add_argument("--match", type=int, default=0, help="play N games kernel vs mctx")
    p.add_argument("--opponent", choices=("mctx", "0-ply"), default="mctx",
                   help="match: the kernel's opponent (0-ply: the complete-move player)")
    p.add_argument("--max-moves", type=int, default=2000, help="match: checker-move cap")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print("command: python " + " ".join(shlex.quote(a) for a in sys.argv))
    env = envs.make("backgammon")
    states = _positions(env, args.batch)
    evaluator, variables = _network(env, args.preset, args.run, states.observation)
    if args.match:
        match(args, env, evaluator, variables)
    elif args.parts:
        parts(args, env, evaluator, variables, states)
    else:
        speed(args, env, evaluator, variables, states)


if __name__ == "__main__":
    main()
