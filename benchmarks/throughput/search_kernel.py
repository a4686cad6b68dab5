"""The tree kernel (turbozero/search/kernel.py) against mctx's `muzero_policy`, side by side.

    python benchmarks/throughput/search_kernel.py speed [--games chess pacosako] [--batches 16 64]
    python benchmarks/throughput/search_kernel.py memory [--batch 512 --sims 800]
    python benchmarks/throughput/search_kernel.py leaves [--game chess --batch 16 --sims 64]
    python benchmarks/throughput/search_kernel.py reuse [--game chess --batch 16 --sims 64]

speed: simulations/s of one search (same env, network, simulations), both through
`turbozero.search.search`, mctx with `MctxConfig`, the kernel with `TreeSearchConfig`.
memory: XLA's `memory_analysis()` of the compiled search (lowered and compiled, not run).
leaves: time per search for L = 1, 4, 8 leaves per step at equal total simulations.
reuse: evaluations carried into the next move's search by `reuse_subtree` during self-play.
floor: the model alone (env transition + observe + network, `sims` calls): a search's floor.

Feeds docs/benchmarks.md, "The tree kernel against mctx".
"""

from __future__ import annotations

import os
import sys
import argparse

import jax
import jax.numpy as jnp

import envs
from turbozero.games import build_network, game_spec
from turbozero.search import (
    NetworkEvaluator, MctxConfig, TreeSearchConfig, random_actions, search)
# the repository root, for benchmarks.tools.timing
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from benchmarks.tools.timing import time_compiled  # noqa: E402


TINY = {"num_filters": 8, "num_blocks": 1}


def _setup(game: str, batch: int, plies: int = 6):
    env = envs.make(game)
    spec = game_spec(game)
    net = build_network(spec, env, dict(TINY))
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), batch))
    step = jax.jit(jax.vmap(env.step))
    for i in range(plies):  # a few random plies so that the games differ
        states = step(states, random_actions(states, jax.random.PRNGKey(i)))
    variables = net.init(jax.random.PRNGKey(1), states.observation[:1])
    return env, NetworkEvaluator(net.apply, spec.value_format), variables, states


def _interleaved_min(fns, repeats):
    """Fastest wall time of each function (a list, in order), the calls interleaved
    (`timing.time_compiled`, which refuses a timed call that compiles or runs JAX ops
    un-jitted): on a shared, loaded machine the minimum of interleaved runs is the figure least
    changed by other processes."""
    t = time_compiled({i: fn for i, fn in enumerate(fns)}, repeats=repeats)
    return [t[i].min for i in range(len(fns))]


def _search_fn(env, evaluator, config):
    return jax.jit(lambda v, s, k: search(env, evaluator, v, s, k, config).policy)


def speed(games, batches, sims, repeats):
    print(f"| game | batch | sims | mctx sims/s | kernel sims/s | speed-up | ({jax.devices()[0].platform})")
    print("| --- | --- | --- | --- | --- | --- |")
    for game in games:
        for batch in batches:
            env, ev, variables, states = _setup(game, batch)
            key = jax.random.PRNGKey(3)
            mctx_fn = _search_fn(env, ev, MctxConfig(num_simulations=sims))
            ours_fn = _search_fn(env, ev, TreeSearchConfig(num_simulations=sims))
            t_mctx, t_ours = _interleaved_min(
                [lambda: mctx_fn(variables, states, key), lambda: ours_fn(variables, states, key)],
                repeats)
            r_mctx, r_ours = batch * sims / t_mctx, batch * sims / t_ours
            print(f"| {game} | {batch} | {sims} | {r_mctx:.0f} | {r_ours:.0f} | "
                  f"{r_ours / r_mctx:.1f}x |", flush=True)


def memory(game, batch, sims):
    env, ev, variables, states = _setup(game, 1, plies=0)
    big = jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct((batch,) + x.shape[1:], x.dtype), states)
    key = jax.ShapeDtypeStruct((2,), jnp.uint32)
    print(f"| search | {game} games x sims | temporaries GiB | arguments GiB | output GiB |")
    print("| --- | --- | --- | --- | --- |")
    for name, cfg in (("kernel", TreeSearchConfig(num_simulations=sims)),
                      ("mctx", MctxConfig(num_simulations=sims))):
        fn = jax.jit(lambda v, s, k, cfg=cfg: search(env, ev, v, s, k, cfg).policy)
        m = fn.lower(variables, big, key).compile().memory_analysis()
        g = 2.0 ** 30
        print(f"| {name} | {batch} x {sims} | {m.temp_size_in_bytes / g:.2f} | "
              f"{m.argument_size_in_bytes / g:.3f} | {m.output_size_in_bytes / g:.3f} |",
              flush=True)


def leaves(game, batch, sims, repeats):
    env, ev, variables, states = _setup(game, batch)
    key = jax.random.PRNGKey(3)
    print(f"| game | batch | sims | L | ms per search | ({jax.devices()[0].platform})")
    print("| --- | --- | --- | --- | --- |")
    ls = (1, 4, 8)
    fns = [_search_fn(env, ev, TreeSearchConfig(num_simulations=sims, leaves_per_step=n))
           for n in ls]
    times = _interleaved_min([lambda f=f: f(variables, states, key) for f in fns], repeats)
    for num_l, t in zip(ls, times):
        print(f"| {game} | {batch} | {sims} | {num_l} | {t * 1e3:.0f} |", flush=True)


def floor(games, batches, sims, repeats):
    """The model alone: `sims` sequential `EnvModel.step` calls (env transition + observe +
    network) on the batch, the work any search of `sims` simulations must do."""
    from turbozero.search.model import EnvModel

    print("| game | batch | sims | model steps alone, sims/s |")
    print("| --- | --- | --- | --- |")
    for game in games:
        for batch in batches:
            env, ev, variables, states = _setup(game, batch)
            model = EnvModel(env, ev)
            emb, out = model.root(variables, states)
            first = jnp.argmax(out.legal, axis=-1).astype(jnp.int32)

            def run(emb=emb, first=first, model=model, variables=variables):
                def body(i, acc):
                    # the action depends on the carry, so XLA cannot hoist the step
                    shift = (acc > 1e9).astype(jnp.int32)
                    _, reward, o = model.step(variables, jax.random.PRNGKey(0), emb,
                                              first + shift)
                    return acc + 1.0 + 1e-9 * (o.value.sum() + reward.sum())
                return jax.lax.fori_loop(0, sims, body, jnp.zeros(()))

            fn = jax.jit(run)
            (t,) = _interleaved_min([fn], repeats)
            print(f"| {game} | {batch} | {sims} | {batch * sims / t:.0f} |", flush=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["speed", "memory", "leaves", "reuse", "floor"])
    p.add_argument("--games", nargs="+", default=["chess", "pacosako"])
    p.add_argument("--game", default="chess")
    p.add_argument("--batches", nargs="+", type=int, default=[16, 64])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--sims", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    if a.what == "speed":
        speed(a.games, a.batches, a.sims, a.repeats)
    elif a.what == "floor":
        floor(a.games, a.batches, a.sims, a.repeats)
    elif a.what == "memory":
        memory(a.game, a.batch, a.sims)
    elif a.what == "leaves":
        leaves(a.game, a.batch, a.sims, a.repeats)
    else:
        reuse(a.game, a.batch, a.sims)


def reuse(game, batch, sims, moves=12):
    """Self-play with the tiny network (acting temperature 1, root noise on): after each move
    the chosen child's subtree is carried; its nodes are evaluations the next search skips."""
    from turbozero.search.kernel import tree_search
    from turbozero.search.model import EnvModel
    from turbozero.search.reuse import reuse_subtree

    env, ev, variables, states = _setup(game, batch, plies=0)
    model = EnvModel(env, ev)
    cfg = TreeSearchConfig(num_simulations=sims, extra_nodes=sims)
    first = jax.jit(lambda s, k: tree_search(model, variables, s, k, cfg))
    again = jax.jit(lambda s, k, t: tree_search(model, variables, s, k, cfg, tree=t))
    carry = jax.jit(lambda t, a: reuse_subtree(t, a, sims))
    step = jax.jit(jax.vmap(env.step))
    result, tree = first(states, jax.random.PRNGKey(0))
    saved = []
    for i in range(moves):
        kept = carry(tree, result.action)
        states = step(states, result.action)
        saved.append(float(kept.next_node.mean()))
        result, tree = again(states, jax.random.PRNGKey(i + 1), kept)
    print(f"{game}, batch {batch}, {sims} simulations, capacity {cfg.num_nodes}: evaluations "
          f"carried per move (mean over games), moves 1-{moves}: "
          + ", ".join(f"{x:.1f}" for x in saved)
          + f"; mean {sum(saved) / len(saved):.1f} of {sims}")


if __name__ == "__main__":
    main()
