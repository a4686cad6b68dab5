"""Ablation for docs/learning.md: PyRat `small` with the other MCGS exploration floor.

The PyRat presets use the spec's sqrt(N) exploration term (`exploration_floor=0.0`: 0 at a
fresh node, so the first selection there ignores the priors). This runs the preset with the
prior-following sqrt(max(N, 1)) (`exploration_floor=1.0`) in self-play and evaluation, all else
equal, for comparison with `turbozero train pyrat --preset small`.

    python benchmarks/experiments/pyrat_first_selection.py [--seed 0] [--floor 1.0] [--run-dir DIR]

Feeds docs/learning.md, "The spec's exploration floor, now PyRat's preset setting".
"""

from __future__ import annotations

import argparse
import dataclasses

from turbozero.presets import get_preset
from turbozero.training import Trainer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--floor", type=float, default=1.0, help="MCGSConfig.exploration_floor")
    ap.add_argument("--run-dir", default="/tmp/lc/pyrat-small-ablate")
    args = ap.parse_args()
    base = get_preset("pyrat", "small", seed=args.seed, checkpoint_every=0)
    cfg = dataclasses.replace(base, algorithm=dataclasses.replace(
        base.algorithm,
        search=dataclasses.replace(base.algorithm.search, exploration_floor=args.floor),
        eval_search=dataclasses.replace(base.algorithm.eval_search, exploration_floor=args.floor)))
    Trainer(cfg, args.run_dir).run(progress=False)


if __name__ == "__main__":
    main()
