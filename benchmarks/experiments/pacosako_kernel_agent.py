"""The untrained Paco Sako tiny agent against random, searching with the tree kernel (spec PUCT,
mctx's PUCT formula) and with mctx: how many games finish and who wins (issue 18; results in
docs/benchmarks.md, "Paco Ŝako on the kernel").

    python benchmarks/experiments/pacosako_kernel_agent.py [--games 16] [--seed 0]
    python benchmarks/experiments/pacosako_kernel_agent.py --compare [--plies 40] [--seed 0]

`--seed` picks the evaluation key (games and tie-breaks); the network is the preset's seed-0
initialisation in every run, so the searches differ only in how they search.

`--compare` plays 16 games (seat 0: mctx's evaluation search, seat 1: random) and at every live
position runs the four noise-free, temperature-0 searches below on the same network, counting
positions where the root visits differ, where the chosen actions differ, and where the most
visited root child is a tie.
"""

import argparse
import dataclasses
import time

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.presets import get_preset
from turbozero.search import MctxPUCT, PUCTRoot, SpecPUCT, TreeSearchConfig
from turbozero.search import search
from turbozero.search.mctx_policies import MinMaxQ, MctxConfig, random_actions
from turbozero.training import Trainer

SIMS = 8
SEARCHES = {
    "kernel, spec PUCT": TreeSearchConfig(num_simulations=SIMS, selection=SpecPUCT(fpu_base=0.0),
                                          root=PUCTRoot(0.3, 0.25)),
    "kernel, mctx PUCT": TreeSearchConfig(num_simulations=SIMS, selection=MctxPUCT(),
                                          root=PUCTRoot(0.3, 0.25)),
    # mctx's default selection Q (DynamicFPU(fpu_base=0)) is the kernel's SpecPUCT(fpu_base=0)
    # formula up to the exploration constant; MinMaxQ is the formula of MctxPUCT
    "mctx": MctxConfig(num_simulations=SIMS),
    "mctx, MinMaxQ": MctxConfig(num_simulations=SIMS, q_transform=MinMaxQ()),
}
QUIET = PUCTRoot(dirichlet_fraction=0.0)
# (mctx, kernel) pairs of the same formula, noise off, the recommended (most visited) move
PAIRS = {
    "mctx MinMaxQ vs kernel MctxPUCT": (
        MctxConfig(num_simulations=SIMS, dirichlet_fraction=0.0,
                     q_transform=MinMaxQ()),
        TreeSearchConfig(num_simulations=SIMS, selection=MctxPUCT(), root=QUIET)),
    "mctx DynamicFPU(0) vs kernel SpecPUCT(fpu 0)": (
        MctxConfig(num_simulations=SIMS, dirichlet_fraction=0.0),
        TreeSearchConfig(num_simulations=SIMS, selection=SpecPUCT(fpu_base=0.0), root=QUIET)),
}


def play(args) -> None:
    key = jax.random.PRNGKey(args.seed)
    for name, config in SEARCHES.items():
        t = time.time()
        cfg = get_preset("pacosako", "tiny", eval_games=args.games, checkpoint_every=0)
        cfg = dataclasses.replace(cfg, algorithm=dataclasses.replace(cfg.algorithm,
                                                                     search=config))
        r = Trainer(cfg).evaluate("random", key=key)
        print(f"{name:20s}", {k: r[k] for k in ("finished", "wins", "draws", "losses", "steps")},
              f"{time.time() - t:.0f} s", flush=True)


def compare(args) -> None:
    games = 16
    trainer = Trainer(get_preset("pacosako", "tiny", eval_games=games, checkpoint_every=0))
    env, evaluator = trainer.env, trainer.algorithm.evaluator
    variables = trainer.variables(trainer.state.train_state)

    def run(states, key, config):
        return search(env, evaluator, variables, states, key, config)

    run = jax.jit(run, static_argnums=2)
    step = jax.jit(jax.vmap(env.step))
    key = jax.random.PRNGKey(args.seed)
    states = jax.vmap(env.init)(jax.random.split(key, games))
    counts = {name: dict(positions=0, visits_differ=0, actions_differ=0, top_tied=0)
              for name in PAIRS}
    for _ in range(args.plies):
        key, k_search, k_random, k_step = jax.random.split(key, 4)
        live = ~np.asarray(states.terminated | states.truncated)  # [G]
        if not live.any():
            break
        for name, (mctx_cfg, kernel_cfg) in PAIRS.items():
            m, k = run(states, k_search, mctx_cfg), run(states, k_search, kernel_cfg)
            pm, pk = np.asarray(m.policy), np.asarray(k.policy)  # [G, A] visits / SIMS
            top = pm.max(-1, keepdims=True)
            c = counts[name]
            c["positions"] += int(live.sum())
            c["visits_differ"] += int((live & (np.abs(pm - pk).max(-1) > 1e-6)).sum())
            c["actions_differ"] += int((live & (np.asarray(m.action) != np.asarray(k.action))).sum())
            c["top_tied"] += int((live & (((pm == top) & (pm > 0)).sum(-1) > 1)).sum())
        agent = run(states, k_search, PAIRS["mctx DynamicFPU(0) vs kernel SpecPUCT(fpu 0)"][0])
        actions = jnp.where(states.current_player == 0, agent.action,
                            random_actions(states, k_random))
        states = step(states, actions, jax.random.split(k_step, games))
    for name, c in counts.items():
        print(f"{name:45s}", c, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--plies", type=int, default=40)
    args = parser.parse_args()
    if args.games < 1:
        raise ValueError(f"--games must be >= 1, got {args.games}")
    if args.plies < 1:
        raise ValueError(f"--plies must be >= 1, got {args.plies}")
    compare(args) if args.compare else play(args)


if __name__ == "__main__":
    main()
