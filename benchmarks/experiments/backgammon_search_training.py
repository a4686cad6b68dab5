"""The backgammon `az-tiny` preset (AlphaZero; named tiny when this was measured) trained with
mctx's stochastic search or with the tree kernel's chance nodes (docs/benchmarks.md,
"Backgammon on the kernel"): wall time and the final evaluation against random and the 1-ply
greedy player, 64 games each.

    python benchmarks/experiments/backgammon_search_training.py SEED kernel|mctx
"""

import sys
import time

from turbozero.presets import get_preset
from turbozero.search import MctxConfig, PUCTRoot, SpecPUCT, TreeSearchConfig
from turbozero.training import Trainer

seed, which = int(sys.argv[1]), sys.argv[2]
kw = dict(eval_every=24, eval_games=64, eval_opponents=("random", "greedy"),
          checkpoint_every=0, seed=seed)
if which == "kernel":
    # the preset's mctx settings in the kernel: c 1.25, unvisited at the parent's value
    kw["search"] = TreeSearchConfig(
        num_simulations=8, selection=SpecPUCT(c_puct=1.25, fpu_base=0.0),
        root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=0.25))
else:  # the preset's search until issue 33 moved it to the kernel
    kw["search"] = MctxConfig(num_simulations=8)
t, rec = time.time(), []
Trainer(get_preset("backgammon", "az-tiny", **kw)).run(progress=False, callback=rec.append)
last = rec[-1]
shown = {k: v for k, v in last.items() if k.startswith("eval_")
         and k.endswith(("win_rate", "mean_return", "finished"))}
print(which, seed, f"{time.time() - t:.0f}s", shown)
