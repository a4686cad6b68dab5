"""Fingerprints of a few iterations of self-play and training, one preset per algorithm, for
checking that a refactor leaves what every algorithm plays and learns bit-identical (issue 44,
"every preset trains to the same curves"; docs/training.md, "Algorithms", says what was checked).

For each case a shrunk preset (4 games, a few moves, one gradient step, no evaluation or
checkpoints) trains `--iterations` iterations; printed per case: a sha256 of every replay leaf
and of the parameters, the metrics of each iteration, and a sha256 of the evaluation actions
(`Trainer.agent_policy`) at the final self-play states. Run it on two source trees and diff:

    git archive main | tar -x -C /tmp/ref && cp turbozero/_search_cpp*.so /tmp/ref/turbozero/
    python benchmarks/tools/run_in_tree.py /tmp/ref benchmarks/tools/selfplay_fingerprint.py > ref.txt
    python benchmarks/tools/selfplay_fingerprint.py > new.txt && diff ref.txt new.txt

`--leaves` adds a digest per replay leaf, for a change of the replay's layout (fields added or
dropped): the diff then names those fields, and every other leaf is compared on its own.

Not a timing: nothing here is measured for speed.
"""

from __future__ import annotations

import argparse
import hashlib

import jax
import numpy as np

from turbozero.presets import get_preset
from turbozero.training import Trainer

SHRINK = dict(num_envs=4, collect_steps=6, train_steps=1, batch_size=8, replay_capacity=16,
              eval_every=0, checkpoint_every=0, eval_opponents=())

# (label, game, preset, extra TrainConfig fields): one per algorithm (and per AlphaZero family)
CASES = [
    ("alphazero-kernel", "pgx/tic_tac_toe", "tiny", {}),
    ("alphazero-mctx", "pgx/tic_tac_toe", "tiny", {"algorithm": "mctx"}),
    ("alphazero-cpu", "pgx/tic_tac_toe", "cpu", {}),
    ("graph-search", "pyrat", "tiny", {}),
    ("muzero", "gomoku", "tiny", {}),
    ("td", "backgammon", "tiny", {}),
]


def _digest(tree) -> str:
    h = hashlib.sha256()
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        h.update(jax.tree_util.keystr(path).encode())
        h.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return h.hexdigest()[:16]


def _config(game, preset, extra):
    cfg = get_preset(game, preset, **SHRINK)
    if extra.get("algorithm") == "mctx":
        import dataclasses

        from turbozero.search.mctx_policies import MctxConfig

        cfg = dataclasses.replace(cfg, algorithm=dataclasses.replace(
            cfg.algorithm, search=MctxConfig(num_simulations=8)))
    if preset == "cpu":  # a few games of the C++ path
        import dataclasses

        cfg = dataclasses.replace(cfg, algorithm=dataclasses.replace(
            cfg.algorithm, search=dataclasses.replace(cfg.algorithm.search, num_games=4)))
    return cfg


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--only", nargs="*", default=None, help="labels of the cases to run")
    parser.add_argument("--leaves", action="store_true",
                        help="also a digest per replay leaf (a layout change then diffs as the "
                             "leaves added or dropped, the others compared one by one)")
    args = parser.parse_args()
    for label, game, preset, extra in CASES:
        if args.only and label not in args.only:
            continue
        trainer = Trainer(_config(game, preset, extra))
        lines = []
        for _ in range(args.iterations):
            record = trainer.step()
            lines.append({k: v for k, v in sorted(record.items()) if not k.endswith("_per_s")})
        state = trainer.state
        variables = trainer.variables(state.train_state)
        acts = jax.jit(trainer.agent_policy)(variables, state.collector.env_state,
                                             jax.random.PRNGKey(7))
        print(f"{label}: replay {_digest(state.buffer)} params "
              f"{_digest(state.train_state.params)} eval-actions {_digest(acts)}")
        if args.leaves:
            for path, leaf in jax.tree_util.tree_flatten_with_path(state.buffer)[0]:
                print(f"  replay{jax.tree_util.keystr(path)} {_digest(leaf)}")
        for record in lines:
            print(f"  {record}")


if __name__ == "__main__":
    main()
