"""Self-play throughput of a training run: the JAX collector against the C++ CPU path.

    python benchmarks/throughput/cpu_training.py [--game chess] [--presets tiny cpu] [--iterations 3]

Builds a Trainer for each preset (no evaluation, no checkpoints), runs one iteration to compile,
then `--iterations` more, and prints self-play positions per second of wall time over those
(the Trainer's own `selfplay_positions_per_s`, positions / time of the collect step) and the
training samples/s. The two presets of a game share the network and the search formulas; the
`cpu` one plays whole games on the C++ workers, the other steps every game `collect_steps`
moves in one jitted scan.

Feeds docs/benchmarks.md, "CPU path in training".
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from turbozero.presets import get_preset  # noqa: E402
from turbozero.training import Trainer  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--game", default="chess")
    ap.add_argument("--presets", nargs="+", default=["tiny", "cpu"])
    ap.add_argument("--iterations", type=int, default=3)
    args = ap.parse_args()
    for preset in args.presets:
        cfg = get_preset(args.game, preset, eval_every=0, eval_opponents=(), checkpoint_every=0,
                         num_iterations=args.iterations + 1)
        trainer = Trainer(cfg)
        trainer.step()  # compiles
        rates, positions = [], 0
        for _ in range(args.iterations):
            record = trainer.step()
            rates.append(record["selfplay_positions_per_s"])
            positions += record["positions"]
        print(f"{args.game} --preset {preset}: {statistics.median(rates):8.1f} self-play "
              f"positions/s (median of {args.iterations} iterations, {positions} positions; "
              f"search {type(cfg.algorithm.search).__name__})", flush=True)


if __name__ == "__main__":
    main()
