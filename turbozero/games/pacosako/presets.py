"""Paco Ŝako's training presets (`turbozero.presets.get_preset("pacosako", name)`)."""

from __future__ import annotations

from typing import Any

from turbozero.games.preset_parts import OPENING_ACTING, kernel_search
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import GumbelRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training.algorithm_configs import AlphaZero
from turbozero.training.updates import Optimizer

PRESETS: dict[str, dict[str, Any]] = {
    # A 150-step cap with 32 games x 32 moves (commit 7c59cde) finished many more self-play
    # games but its win rate against random fell after iteration 30 (0.44 -> 0.06 at 60,
    # docs/learning.md): not adopted; this is the former preset.
    "tiny": dict(
        num_envs=16, collect_steps=16, train_steps=8, batch_size=64, replay_capacity=64,
        num_iterations=10, eval_every=5, eval_games=16, optimizer=Optimizer(learning_rate=1e-3),
        network={"num_filters": 16, "num_blocks": 1, "value_hidden": 32},
        # the tree kernel: once its temperature-0 action broke ties at random (as mctx),
        # it plays as mctx does here, 39 W / 14 L against mctx's 37 / 16 over 64 games
        # with the untrained network (docs/benchmarks.md, "Paco Ŝako on the kernel")
        algorithm=AlphaZero(search=kernel_search(8), acting=OPENING_ACTING),
        max_eval_steps=300, eval_opponents=("random",),
    ),
    # 4x tiny's games per iteration, 60 iterations, and a Gumbel root in self-play: its
    # policy target (softmax of prior logits + sigma(completed Q)) moves the prior only as
    # far as the values say, where 8 PUCT visits copy the sharpening prior back into the
    # target. The network alone (1 evaluation simulation) went 0.14-0.20 -> 0.46-0.71 of
    # finished games against random and held; with the PUCT root the same set-up fell back
    # after iteration 10-30 (docs/learning.md, "Paco Ŝako, the network alone")
    "small": dict(
        num_envs=64, collect_steps=32, train_steps=32, batch_size=256, replay_capacity=256,
        num_iterations=60, eval_every=10, eval_games=64, optimizer=Optimizer(learning_rate=1e-3),
        network={"num_filters": 16, "num_blocks": 1, "value_hidden": 32},
        algorithm=AlphaZero(
            search=TreeSearchConfig(num_simulations=8, selection=SpecPUCT(fpu_base=0.0),
                                    root=GumbelRoot(max_considered=8)),
            acting=OPENING_ACTING),
        max_eval_steps=300, eval_opponents=("random",),
    ),
}

# wall time of `turbozero train GAME --preset P` on 2 CPU cores where measured (the docs page
# named holds the conditions); `turbozero presets` says "not measured" for the rest
MEASURED_TIMES: dict[str, str] = {
    "tiny": "about 4 min beside other runs, on the tree kernel (1 min 52 s "
        "with mctx, docs/pacosako.md)",
    "small": "8 min 40 s beside one evaluation run (2026-11-25; 25 min with "
        "a second seed and another run before the per-step training calls, "
        "docs/learning.md)",
}
