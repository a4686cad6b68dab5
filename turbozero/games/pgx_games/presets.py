"""Tic-tac-toe's training presets (`turbozero.presets.get_preset("pgx/tic_tac_toe", name)`)."""

from __future__ import annotations

from typing import Any

from turbozero.games.preset_parts import kernel_search
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.cpu.tree import CPUSearchConfig
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.algorithm_configs import AlphaZero
from turbozero.training.updates import Optimizer

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": dict(
        num_envs=16, collect_steps=9, train_steps=8, batch_size=64, replay_capacity=36,
        num_iterations=20, eval_every=10, eval_games=16, optimizer=Optimizer(learning_rate=3e-3),
        network={"hidden_sizes": (32, 32)},
        algorithm=AlphaZero(search=kernel_search(16),
                            acting=TemperatureSchedule(temperature=1.0, moves=4)),
        max_eval_steps=9, eval_opponents=("random",),
    ),
    # self-play on the C++ CPU path (docs/cpu_search.md, "Training"): 16 whole games per
    # iteration on 2 worker threads, the kernel's formulas, evaluation on the JAX kernel
    "cpu": dict(
        num_envs=16, collect_steps=9, train_steps=8, batch_size=64, replay_capacity=36,
        num_iterations=20, eval_every=10, eval_games=16, optimizer=Optimizer(learning_rate=3e-3),
        network={"hidden_sizes": (32, 32)},
        # the C++ games act by the algorithm's acting, as the jitted collector's do
        algorithm=AlphaZero(
            search=CPUSelfPlayConfig(search=CPUSearchConfig(fpu_base=0.0), num_workers=2,
                                     num_games=16, num_simulations=16, max_steps=9,
                                     batch_tiers=(4, 16)),
            acting=TemperatureSchedule(temperature=1.0, moves=4)),
        max_eval_steps=9, eval_opponents=("random",),
    ),
}

# wall time of `turbozero train GAME --preset P` on 2 CPU cores where measured (the docs page
# named holds the conditions); `turbozero presets` says "not measured" for the rest
MEASURED_TIMES: dict[str, str] = {
    "tiny": "21 s (docs/training.md)",
}
