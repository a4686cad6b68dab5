"""A run's trained network against its untrained one, under one evaluation.

    python benchmarks/experiments/eval_before_after.py RUN_DIR --opponent random --games 64 \
        --set eval_search.num_simulations=16 --set eval_search.root.max_considered=8

Builds the run's stored config with the `--set` overrides (`evaluation_config`, as
`turbozero eval` does), evaluates
the untrained network of that config (the run's seed, so the network the run started from) and
then the run's newest checkpoint, same games and opponent, and prints both. `--one-ply`
evaluates with `OnePlyConfig()` (the value head alone, every legal move once) instead of the
run's evaluation search. Whether training
helped depends on the evaluation: a search strong enough to win without the network hides what
the network learned (docs/learning.md, "Chess: what wins against random at this budget").
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from turbozero.cli import enable_compilation_cache
from turbozero.search import OnePlyConfig
from turbozero.training import Trainer
from turbozero.training.checkpoints import load_checkpoint, restore_network
from turbozero.runs import evaluation_config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir")
    parser.add_argument("--opponent", default="random")
    parser.add_argument("--games", type=int, default=None)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a field of the run's config, e.g. eval_search.num_simulations=16")
    parser.add_argument("--one-ply", action="store_true",
                        help="evaluate the value head alone (OnePlyConfig), not the run's search")
    args = parser.parse_args()
    enable_compilation_cache()
    config = evaluation_config(args.run_dir, args.games, args.set)
    if args.one_ply:
        config = dataclasses.replace(config, algorithm=dataclasses.replace(
            config.algorithm, eval_search=OnePlyConfig()))
    trainer = Trainer(config)  # no run directory: nothing is written
    untrained = trainer.evaluate(args.opponent)
    trainer.state, _ = load_checkpoint(args.run_dir, trainer.state, restore_network)
    trained = trainer.evaluate(args.opponent)
    print(json.dumps({"run_dir": args.run_dir, "opponent": args.opponent, "overrides": args.set,
                      "one_ply": args.one_ply, "untrained": untrained,
                      "iteration": int(trainer.state.iteration), "trained": trained}))


if __name__ == "__main__":
    main()
