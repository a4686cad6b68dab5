"""Every search family through the one contract, `turbozero.search.search`, timed side by side.

    python benchmarks/throughput/search_families.py [--batch 16] [--sims 32] [--repeats 5]

For each game the families that can search it run on the same env, network (the game's trunk
at a small width) and positions; a jittable family is jitted and only compiled calls are timed,
the host-side `cpu` family (the C++ tree) is timed as it is called. Figures are the fastest of
interleaved calls (`timing.time_compiled`, which refuses a timed call that compiles or runs JAX
ops un-jitted; on a shared machine the minimum is least changed by other processes) and
positions searched per second. docs/search.md
("The core: one contract, seven families") holds the table.
"""

from __future__ import annotations

import os
import sys
import argparse

import jax

import envs
from turbozero.games import build_network, game_spec
from turbozero.search import (
    AfterstatePlayerConfig, MCGSConfig, MctxConfig, NetworkEvaluator, OnePlyConfig, PUCTRoot,
    TreeSearchConfig, available_families, random_actions, search)
# the repository root, for benchmarks.tools.timing
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.tools.timing import time_compiled  # noqa: E402

# the `cpu` family is host-side library code timed as it is called, whole; since 2026-11-27 it
# runs no JAX op eagerly (its key split, seed, acting rule and state pool are jitted), so
# nothing is let through

SMALL = {"resnet": {"num_filters": 8, "num_blocks": 1}, "mlp": {"hidden_sizes": (64, 64)}}


def _positions(env, batch: int, plies: int):
    """`batch` decision states after a few random plies (chance events rolled)."""
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), batch))
    step = jax.jit(jax.vmap(env.step))
    for i in range(plies):  # chance events rolled with the keys (ignored by other games)
        keys = jax.random.split(jax.random.PRNGKey(100 + i), batch)
        states = step(states, random_actions(states, jax.random.PRNGKey(i)), keys)
    return states


def _setup(game: str, batch: int, plies: int = 6):
    env = envs.make(game)
    spec = game_spec(game)
    net = build_network(spec, env, dict(SMALL.get(spec.trunk, {})))
    states = _positions(env, batch, plies)
    variables = net.init(jax.random.PRNGKey(1), states.observation[:1])
    return env, NetworkEvaluator(net.apply, spec.value_format), variables, states


def _configs(game: str, sims: int) -> dict:
    quiet = PUCTRoot(dirichlet_fraction=0.0)
    if game == "pyrat":
        return {"graph": MCGSConfig(num_simulations=sims)}
    configs = {
        "tree": TreeSearchConfig(num_simulations=sims, root=quiet),
        "mctx": MctxConfig(num_simulations=sims, dirichlet_fraction=0.0),
        "one-ply": OnePlyConfig(),
    }
    if game == "backgammon":
        configs["afterstate"] = AfterstatePlayerConfig(plies=0)
    if "cpu" in available_families():
        from turbozero.search.cpu import CPUSearchConfig, cpu_search_available

        if cpu_search_available() and game != "backgammon":
            configs["cpu"] = CPUSearchConfig(num_simulations=sims, dirichlet_fraction=0.0)
    return configs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", nargs="+", default=["chess", "backgammon", "pyrat"])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--sims", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}; batch {args.batch}, "
          f"{args.sims} simulations; fastest of {args.repeats} interleaved calls")
    print(f"{'game':<12}{'family':<12}{'ms / search':>12}{'positions/s':>13}")
    for game in args.games:
        env, evaluator, variables, states = _setup(game, args.batch)
        fns = {}
        key = jax.random.PRNGKey(2)  # made before timing: the timed calls only run compiled code
        for name, config in _configs(game, args.sims).items():
            family_call = (lambda c: lambda v, s, k: search(env, evaluator, v, s, k, c))(config)
            run = jax.jit(family_call) if name != "cpu" else family_call
            fns[name] = (lambda r: lambda: r(variables, states, key).action)(run)
        timings = time_compiled(fns, repeats=args.repeats)
        for name, t in timings.items():
            seconds = t.min
            eager = (f"  ({t.allowed_eager_per_call:.0f} eager JAX ops per call, its own)"
                     if t.allowed_eager_per_call else "")
            print(f"{game:<12}{name:<12}{1e3 * seconds:>12.1f}{args.batch / seconds:>13.1f}{eager}")


if __name__ == "__main__":
    main()
