"""MuZero networks: parameters, and the cost of the calls the search and the loss make.

    python benchmarks/throughput/muzero_networks.py [--presets tiny small large] [--batch 32]
                                               [--unroll 3] [--repeats 5]

For each gomoku preset's network settings (turbozero/presets.py) on its view (H = W = view,
observation channels 2 P + 4 with P = 3):
* params: the number of parameters `init` creates;
* root: represent + predict on `batch` observations (one search root each);
* step: dynamics + predict on `batch` hidden states (one simulation below the root);
* train: value and gradient of a K-step unroll loss (every head, the consistency projection)
  on `batch` windows, the shape of one training step's work.
Median wall time of `repeats` jitted calls after one that compiles, the three calls timed
alternately through benchmarks/tools/timing.py (`time_compiled`, which refuses a timed call that
compiles or runs JAX eagerly; every input is built before timing). Figures: docs/benchmarks.md,
"MuZero networks (gomoku presets, CPU)".
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from turbozero.networks.muzero import MuZeroNet  # noqa: E402
from turbozero.presets import get_preset  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402

NUM_PLAYERS = 3


def _preset(name: str):
    config = get_preset("gomoku", name)
    return dict(config.env_config)["view"], dict(config.network)


def _unroll_loss(params, net, obs, actions):
    """Sum of every head's output and the projections' cosine, over a K-step unroll (a stand-in
    for the training loss with the same calls)."""
    variables = {"params": params}
    hidden = net.apply(variables, obs[:, 0], method="represent")
    total = 0.0
    for k in range(actions.shape[1] + 1):
        logits, value = net.apply(variables, hidden, method="predict")
        total += jnp.mean(jax.nn.log_softmax(logits)) + jnp.mean(value ** 2)
        if k == actions.shape[1]:
            break
        hidden, reward = net.apply(variables, hidden, actions[:, k], method="dynamics")
        online = net.apply(variables, hidden, True, method="project")
        real = net.apply(variables, obs[:, k + 1], method="represent")
        target = jax.lax.stop_gradient(net.apply(variables, real, False, method="project"))
        cos = jnp.sum(online * target, -1) / (jnp.linalg.norm(online, axis=-1)
                                              * jnp.linalg.norm(target, axis=-1))
        total += jnp.mean(reward ** 2) + jnp.mean(2.0 - 2.0 * cos)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "small", "large"])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--unroll", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    b, k = args.batch, args.unroll
    print(f"backend {jax.default_backend()}, batch {b}, unroll {k}")
    print("| preset | view | params | root ms | step ms | train ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.presets:
        view, settings = _preset(name)
        net = MuZeroNet(num_actions=view * view, num_players=NUM_PLAYERS,
                        hidden_shape=(view, view), **settings)
        key = jax.random.PRNGKey(0)
        obs = jax.random.uniform(key, (b, k + 1, view, view, 2 * NUM_PLAYERS + 4))
        actions = jax.random.randint(key, (b, k), 0, view * view)
        variables = jax.jit(net.init)(key, obs[:, 0])
        params = sum(x.size for x in jax.tree_util.tree_leaves(variables))

        root = jax.jit(lambda v, o: net.apply(
            v, net.apply(v, o, method="represent"), method="predict"))
        hidden = net.apply(variables, obs[:, 0], method="represent")

        def _step(v, h, a):
            nxt, reward = net.apply(v, h, a, method="dynamics")
            return net.apply(v, nxt, method="predict"), reward

        step = jax.jit(_step)
        train = jax.jit(jax.value_and_grad(
            lambda p, o, a: _unroll_loss(p, net, o, a)))
        # the first observation and action sliced before timing: `obs[:, 0]` inside the timed
        # call was an eager op (~0.2 ms here, 10% of the tiny network's root call)
        obs0, actions0 = jax.block_until_ready((obs[:, 0], actions[:, 0]))
        t = time_compiled({"root": lambda: root(variables, obs0),
                           "step": lambda: step(variables, hidden, actions0),
                           "train": lambda: train(variables["params"], obs, actions)},
                          repeats=args.repeats)
        t_root, t_step, t_train = (t[n].median for n in ("root", "step", "train"))
        print(f"| {name} | {view} | {params:,} | {t_root * 1e3:.2f} | {t_step * 1e3:.2f} "
              f"| {t_train * 1e3:.1f} |", flush=True)


if __name__ == "__main__":
    main()
