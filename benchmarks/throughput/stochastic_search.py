"""Where the time of backgammon's stochastic search goes, and the tree kernel against mctx.

    python benchmarks/throughput/stochastic_search.py          # where mctx's time goes
    python benchmarks/throughput/stochastic_search.py kernel   # the tree kernel against mctx
    python benchmarks/throughput/stochastic_search.py kernel --batches 16 --sims 16 --repeats 2  # quick

mctx's `stochastic_muzero_policy` calls the decision function (env `step_deterministic` + a
network call) AND the chance function (env `step_chance` + a network call) on the whole batch at
every simulation, keeping one of the two per node. The default mode measures one search against
the cost of `num_simulations` calls of each function alone, to see whether the doubled work
matters (docs/benchmarks.md, "Search and training"); `kernel` times the tree kernel with chance
nodes against mctx on the same searches (docs/benchmarks.md, "Backgammon on the kernel").

Timed through benchmarks/tools/timing.py (`time_compiled`: a warm-up call, then the timed calls
alternate between the fns compared; a timed call that compiles or runs JAX eagerly is refused).
The search key is built before timing: `jax.random.PRNGKey(3)` inside the timed call, as before
2026-11-27, was eager work of ~0.2 ms a call on these cores.
"""

from __future__ import annotations

import os
import sys
import argparse

import jax
import jax.numpy as jnp

import envs
from turbozero.networks import FourWayValue, MLPNet
from turbozero.search import NetworkEvaluator, MctxConfig, random_actions, search
from turbozero.search.mctx_policies import make_stochastic_fns

# the repository root, for benchmarks.tools.timing
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.tools.timing import time_compiled  # noqa: E402


def main(batch: int = 32, sims: int = 16, repeats: int = 5) -> None:
    env = envs.make("backgammon")
    net = MLPNet(num_actions=env.num_actions, value_format=FourWayValue(), hidden_sizes=(64, 64))
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), batch))
    step = jax.jit(jax.vmap(env.step))
    for i in range(20):  # move away from the opening
        k1, k2 = jax.random.split(jax.random.PRNGKey(i))
        states = step(states, random_actions(states, k1), jax.random.split(k2, batch))
    variables = net.init(jax.random.PRNGKey(1), states.observation)
    ev = NetworkEvaluator(net.apply, FourWayValue())
    cfg = MctxConfig(num_simulations=sims)
    search_fn = jax.jit(lambda v, s, k: search(env, ev, v, s, k, cfg).action)
    decision_fn, chance_fn = make_stochastic_fns(env, ev)
    actions = random_actions(states, jax.random.PRNGKey(2))

    def repeat(fn):
        # inputs depend on the loop index, so that XLA cannot hoist the work out of the loop
        def body(i, acc):
            return acc + fn(i, acc)
        return jax.jit(lambda: jax.lax.fori_loop(0, sims, body, jnp.zeros(())))

    n_act = env.num_actions
    dec = repeat(lambda i, acc: decision_fn(variables, None, (actions + i) % n_act, states)[0]
                 .afterstate_value.sum())
    after = decision_fn(variables, None, actions, states)[1]
    cha = repeat(lambda i, acc: chance_fn(variables, None, jnp.full((batch,), i % 21, jnp.int32),
                                          after)[0].value.sum())
    net_only = repeat(lambda i, acc: ev(variables, states.observation + acc * 0.0)[1].sum())
    key = jax.random.PRNGKey(3)
    t = time_compiled({"search": lambda: search_fn(variables, states, key), "decision": dec,
                       "chance": cha, "network": net_only}, repeats=repeats)
    t_search, t_dec, t_cha, t_net = (t[n].median for n in ("search", "decision", "chance",
                                                          "network"))
    print(f"backgammon stochastic search, batch {batch}, {sims} simulations, {jax.devices()[0].platform}")
    print("| part | ms per search | share of search |")
    print("| --- | --- | --- |")
    for name, t in (("whole search", t_search), ("decision fn x sims", t_dec),
                    ("chance fn x sims", t_cha), ("network alone x sims", t_net)):
        print(f"| {name} | {t * 1e3:.1f} | {t / t_search:.0%} |")


def kernel_vs_mctx(batches=(16, 64), sims=(16, 64), repeats: int = 5) -> None:
    """Backgammon searches per second: the tree kernel with chance nodes against mctx's
    `stochastic_muzero_policy`, same env, network (the tiny preset's MLP, 4-way head) and
    simulations; selection as close as the two allow (PUCT with c 1.25, unvisited children at
    the parent's value, Dirichlet over the legal moves)."""
    from turbozero.search import PUCTRoot, SpecPUCT, TreeSearchConfig

    env = envs.make("backgammon")
    net = MLPNet(num_actions=env.num_actions, value_format=FourWayValue(), hidden_sizes=(64, 64))
    ev = NetworkEvaluator(net.apply, FourWayValue())
    print("| batch | simulations | mctx ms | kernel ms | kernel / mctx speed |")
    print("| --- | --- | --- | --- | --- |")
    for b in batches:
        states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), b))
        step = jax.jit(jax.vmap(env.step))
        for i in range(20):
            k1, k2 = jax.random.split(jax.random.PRNGKey(i))
            states = step(states, random_actions(states, k1), jax.random.split(k2, b))
        variables = net.init(jax.random.PRNGKey(1), states.observation)
        key = jax.random.PRNGKey(3)
        for n in sims:
            cfgs = {"mctx": MctxConfig(num_simulations=n),
                    "kernel": TreeSearchConfig(num_simulations=n,
                                               selection=SpecPUCT(c_puct=1.25, fpu_base=0.0),
                                               root=PUCTRoot(dirichlet_alpha=0.3,
                                                             dirichlet_fraction=0.25))}
            fns = {name: jax.jit(lambda v, s, k, cfg=cfg: search(env, ev, v, s, k, cfg).action)
                   for name, cfg in cfgs.items()}
            t = time_compiled(fns, args=(variables, states, key), repeats=repeats)
            mctx_s, kernel_s = t["mctx"].median, t["kernel"].median
            print(f"| {b} | {n} | {mctx_s * 1e3:.1f} | {kernel_s * 1e3:.1f} | "
                  f"{mctx_s / kernel_s:.1f}x |", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", nargs="?", choices=("parts", "kernel"), default="parts",
                   help="parts (default): where mctx's time goes; kernel: kernel against mctx")
    p.add_argument("--batches", type=int, nargs="+", default=None,
                   help="default: 32 (parts), 16 64 (kernel)")
    p.add_argument("--sims", type=int, nargs="+", default=None,
                   help="default: 16 (parts), 16 64 (kernel)")
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    if a.mode == "kernel":
        kernel_vs_mctx(tuple(a.batches or (16, 64)), tuple(a.sims or (16, 64)), a.repeats)
    else:
        main((a.batches or [32])[0], (a.sims or [16])[0], a.repeats)
