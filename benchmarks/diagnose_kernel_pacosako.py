"""The untrained Paco Sako tiny agent against random, searching with the tree kernel (spec PUCT,
mctx's PUCT formula) and with mctx: how many games finish and who wins (issue 18; results in
docs/benchmarks.md, "Paco Sako on the kernel").

    python benchmarks/diagnose_kernel_pacosako.py [--games 16] [--seed 0]

`--seed` picks the evaluation key (games and tie-breaks); the network is the preset's seed-0
initialisation in every run, so the searches differ only in how they search.
"""

import argparse
import time

import jax

from turbozero.presets import get_preset
from turbozero.search import MctxPUCT, PUCTRoot, SpecPUCT, TreeSearchConfig
from turbozero.search.mctx_policies import SearchConfig
from turbozero.training import Trainer

SEARCHES = {
    "kernel, spec PUCT": TreeSearchConfig(num_simulations=8, selection=SpecPUCT(fpu_base=0.0),
                                          root=PUCTRoot(0.3, 0.25)),
    "kernel, mctx PUCT": TreeSearchConfig(num_simulations=8, selection=MctxPUCT(),
                                          root=PUCTRoot(0.3, 0.25)),
    "mctx": SearchConfig(num_simulations=8),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.games < 1:
        raise ValueError(f"--games must be >= 1, got {args.games}")
    key = jax.random.PRNGKey(args.seed)
    for name, search in SEARCHES.items():
        t = time.time()
        cfg = get_preset("pacosako", "tiny", eval_games=args.games, checkpoint_every=0,
                         search=search)
        r = Trainer(cfg).evaluate("random", key=key)
        print(f"{name:20s}", {k: r[k] for k in ("finished", "wins", "draws", "losses", "steps")},
              f"{time.time() - t:.0f} s", flush=True)


if __name__ == "__main__":
    main()
