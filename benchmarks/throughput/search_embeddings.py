"""mctx search on chess with node embeddings that hold the observation (`env.step`) or not
(`env.transition`, the observation computed once for the node's evaluation). Feeds
docs/benchmarks.md, "Chess" (the search-embeddings table) and docs/chess.md.

    python benchmarks/throughput/search_embeddings.py [--batch 64] [--simulations 32] [--reps 3]

Same search, same evaluator (a linear layer over the channel means of the observation, cheap
next to the env), same keys: both variants give the same actions (checked). Prints CPU and
wall time per search and the bytes of the tree's embeddings. Timing goes through
`benchmarks/tools/timing.py` (`time_compiled`): one warm-up call each, then the two variants called
alternately `--reps` times on inputs built before; wall time is the median call, CPU time
(`time.process_time`, all threads of the process) the median over the same timed calls.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import mctx  # noqa: E402
import numpy as np  # noqa: E402

import envs  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


def make_search(env, weights, batch, simulations, bare: bool):
    def evaluate(obs):
        # the 122 channel means: a linear layer over the whole 7808-entry observation cost
        # more than the env (75 GFLOP per search at batch 64)
        feats = obs.mean(axis=(1, 2))  # [B, 122]
        out = feats @ weights  # [B, num_actions + 1]
        return out[:, :-1], jnp.tanh(out[:, -1])

    def recurrent_fn(params, key, action, state):
        keys = jax.random.split(key, action.shape[0])
        if bare:
            nxt = jax.vmap(env.transition)(state, action, keys)
            obs = jax.vmap(env.observe)(nxt)
        else:
            nxt = jax.vmap(env.step)(state, action, keys)
            obs = nxt.observation
        logits, value = evaluate(obs)
        logits = jnp.where(nxt.legal_action_mask, logits, jnp.finfo(logits.dtype).min)
        mover = state.current_player
        reward = jnp.take_along_axis(nxt.rewards, mover[:, None], axis=1)[:, 0]
        done = nxt.terminated | nxt.truncated
        discount = jnp.where(done, 0.0, -1.0)
        return mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits,
                                      value=jnp.where(done, 0.0, value)), nxt

    @jax.jit
    def search(states, key):
        logits, value = evaluate(states.observation)
        embedding = states.replace(observation=None) if bare else states
        root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=embedding)
        out = mctx.muzero_policy(None, key, root, recurrent_fn, simulations,
                                 invalid_actions=~states.legal_action_mask)
        emb_bytes = sum(x.size * x.dtype.itemsize
                        for x in jax.tree.leaves(out.search_tree.embeddings))
        return out.action, emb_bytes

    return search


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--simulations", type=int, default=32)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    env = envs.make("chess")
    states = jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(0), args.batch))
    channels = env.observation_shape[-1]
    weights = jax.random.normal(jax.random.PRNGKey(1), (channels, env.num_actions + 1))
    print(f"chess, batch {args.batch}, {args.simulations} simulations, jax {jax.__version__}, "
          f"load avg {os.getloadavg()[0]:.1f}")
    print("| embeddings | CPU s per search | wall s per search | embedding bytes |")
    print("|---|---|---|---|")
    names = {False: "with observation (step)", True: "bare (transition + observe)"}
    cpu = {bare: [] for bare in names}
    last = {}
    searches = {bare: make_search(env, weights, args.batch, args.simulations, bare)
                for bare in names}

    def timed(bare):
        def call(states, key):  # host-side: CPU seconds and the result of each call
            c0 = time.process_time()
            out = jax.block_until_ready(searches[bare](states, key))
            cpu[bare].append(time.process_time() - c0)
            last[bare] = out
            return out
        return call

    key = jax.random.PRNGKey(2)
    t = time_compiled({names[bare]: timed(bare) for bare in names}, args=(states, key),
                      repeats=args.reps)
    actions = {}
    for bare, name in names.items():
        act, emb = last[bare]
        actions[bare] = np.asarray(act)
        cpu_s = float(np.median(cpu[bare][-args.reps:]))  # the timed calls, not the warm-up
        print(f"| {name} | {cpu_s:.3f} | {t[name].median:.3f} | {int(emb):,} |", flush=True)
    print("same actions:", bool((actions[False] == actions[True]).all()))


if __name__ == "__main__":
    main()
