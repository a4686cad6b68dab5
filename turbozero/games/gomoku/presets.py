"""Gomoku's training presets (`turbozero.presets.get_preset("gomoku", name)`)."""

from __future__ import annotations

from typing import Any

from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import GumbelRoot
from turbozero.search.selection import MctxPUCT
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.algorithm_configs import MuZero
from turbozero.training.muzero import MuZeroConfig
from turbozero.training.updates import Optimizer

PRESETS: dict[str, dict[str, Any]] = {
    # 3-player Gumbel MuZero (docs/gomoku.md): 9x9, 4 in a row, a 9x9 view centred on the
    # last stone; games last at most 81 moves, so a ring of 96 holds whole games
    "tiny": dict(
        env_config=(("size", 9), ("win_length", 4), ("num_players", 3), ("view", 9)),
        num_envs=32, collect_steps=16, train_steps=16, batch_size=64, replay_capacity=96,
        num_iterations=30, eval_every=10, eval_games=48,
        optimizer=Optimizer(learning_rate=3e-3),
        network={"channels": 16, "representation_blocks": 1, "dynamics_blocks": 1,
                 "prediction_blocks": 1, "projection_dim": 32},
        algorithm=MuZero(
            search=MuZeroConfig(
                search=TreeSearchConfig(num_simulations=16, root=GumbelRoot(max_considered=8),
                                        selection=MctxPUCT()),
                unroll_steps=3, td_steps=10),
            acting=TemperatureSchedule(temperature=1.0, moves=10)),
        max_eval_steps=81, eval_opponents=("random", "greedy"),
    ),
    # for a GPU: the spec's 15x15 / 5 in a row, and 100x100 / 8 in a row through a 21x21 view
    "small": dict(
        env_config=(("size", 15), ("win_length", 5), ("num_players", 3), ("view", 15)),
        num_envs=256, collect_steps=32, train_steps=64, batch_size=256, replay_capacity=256,
        num_iterations=500, eval_every=25, eval_games=192,
        optimizer=Optimizer(learning_rate=1e-3),
        network={"channels": 64, "representation_blocks": 4, "dynamics_blocks": 2,
                 "prediction_blocks": 1, "projection_dim": 128},
        algorithm=MuZero(
            search=MuZeroConfig(
                search=TreeSearchConfig(num_simulations=32, root=GumbelRoot(max_considered=16),
                                        selection=MctxPUCT(), discount=0.997),
                unroll_steps=5, td_steps=10),
            acting=TemperatureSchedule(temperature=1.0, moves=15)),
        max_eval_steps=225, eval_opponents=("random", "greedy"),
    ),
    "large": dict(
        env_config=(("size", 100), ("win_length", 8), ("num_players", 3), ("view", 21),
                    ("max_steps", 600)),
        num_envs=512, collect_steps=64, train_steps=128, batch_size=512, replay_capacity=640,
        num_iterations=5000, eval_every=100, eval_games=384,
        optimizer=Optimizer(learning_rate=1e-3),
        network={"channels": 128, "representation_blocks": 6, "dynamics_blocks": 4,
                 "prediction_blocks": 2, "projection_dim": 256},
        algorithm=MuZero(
            search=MuZeroConfig(
                search=TreeSearchConfig(num_simulations=64, root=GumbelRoot(max_considered=16),
                                        selection=MctxPUCT(), discount=0.997),
                unroll_steps=5, td_steps=10),
            acting=TemperatureSchedule(temperature=1.0, moves=30)),
        max_eval_steps=600, eval_opponents=("random", "greedy"),
    ),
}

# wall time of `turbozero train GAME --preset P` on 2 CPU cores where measured (the docs page
# named holds the conditions); `turbozero presets` says "not measured" for the rest
MEASURED_TIMES: dict[str, str] = {
    "tiny": "5 min 30 s beside a second seed (docs/learning.md)",
}
