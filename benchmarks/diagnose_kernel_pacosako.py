"""The untrained Paco Sako tiny agent against random, searching with the tree kernel (spec PUCT,
mctx's PUCT formula) and with mctx: how many of 16 games finish and who wins (issue 18 note).

    python benchmarks/diagnose_kernel_pacosako.py
"""

import time

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

for name, search in SEARCHES.items():
    t = time.time()
    cfg = get_preset("pacosako", "tiny", eval_games=16, checkpoint_every=0, search=search)
    r = Trainer(cfg).evaluate("random")
    print(f"{name:20s}", {k: r[k] for k in ("finished", "wins", "draws", "losses", "steps")},
          f"{time.time() - t:.0f} s", flush=True)
