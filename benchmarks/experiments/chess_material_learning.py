"""The chess `small` preset with its untrained network evaluated first, and a choice of
evaluation searches (docs/learning.md, "Chess: what wins against random at this budget" and
the sections after it). The preset: its 32 x 2 network and 100-ply evaluation, self-play games
cut at 40 plies and scored by material by degree (`MaterialScore(3)`), 128 games x 20 moves an
iteration at 16 simulations (Gumbel root, 8 considered, 0.95 a ply), 32 updates of 128.

    python benchmarks/experiments/chess_material_learning.py --seed 0 --run-dir runs/chess-material-seed0
    python benchmarks/experiments/chess_material_learning.py --seed 0 --run-dir runs/chess-material-seed0 \
        --iterations 100          # a run dir that exists is resumed from its newest checkpoint

By default the evaluation search looks at every root move (Gumbel root, 64 considered, 64
simulations, 0.95 a ply: a mate now beats a won position later), as the sections that came
before the preset did. `--eval-one-ply` evaluates as the preset does, with the value head alone
(every legal move once, the best by the network's value; `turbozero.search.OnePlyConfig`):
`turbozero train chess --preset small` trains the same run, bit for bit, without the untrained
evaluation. `--eval-simulations 1` evaluates the network alone (its highest-prior move, as
docs/learning.md does for Paco Ŝako): the tree search finds the mates random play walks into
whatever the network, so it cannot show what the network learned against random.

Writes the untrained network's evaluation to RUN_DIR/iteration0.json first, then trains with
evaluation every 10 iterations into RUN_DIR/metrics.jsonl.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os

from turbozero.cli import enable_compilation_cache
from turbozero.presets import get_preset
from turbozero.search import TreeSearchConfig
from turbozero.search.roots import GumbelRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training import Trainer
from turbozero.training.algorithms import evaluation_search


def config(seed: int, iterations: int, eval_simulations: int = 64, one_ply: bool = False):
    small = get_preset("chess", "small", seed=seed, num_iterations=iterations)
    if one_ply:  # the preset's own evaluation
        return small
    return dataclasses.replace(small, algorithm=dataclasses.replace(
        small.algorithm, eval_search=evaluation_search(TreeSearchConfig(
            num_simulations=eval_simulations, selection=SpecPUCT(fpu_base=0.0),
            root=GumbelRoot(max_considered=64), discount=small.algorithm.search.discount))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run-dir", required=True)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--eval-simulations", type=int, default=64,
                        help="simulations of the evaluation search (1: the network alone)")
    parser.add_argument("--eval-one-ply", action="store_true",
                        help="evaluate the value head alone: 1 ply over every legal move")
    args = parser.parse_args()
    enable_compilation_cache()
    baseline = os.path.join(args.run_dir, "iteration0.json")
    resume = os.path.exists(baseline)
    trainer = Trainer(config(args.seed, args.iterations, args.eval_simulations,
                             args.eval_one_ply), args.run_dir, resume=resume)
    if not resume:
        record = {o: trainer.evaluate(o) for o in trainer.config.eval_opponents}
        print("iteration 0:", record, flush=True)
        with open(baseline, "w") as f:
            json.dump(record, f)
    trainer.run()


if __name__ == "__main__":
    main()
