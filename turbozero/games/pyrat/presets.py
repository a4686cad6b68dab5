"""PyRat's training presets (`turbozero.presets.get_preset("pyrat", name)`)."""

from __future__ import annotations

from typing import Any

import dataclasses

from turbozero.search.mcgs import MCGSConfig
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.algorithm_configs import GraphSearch
from turbozero.training.updates import Optimizer

_PYRAT_TINY = dict(
    env_config=(("width", 7), ("height", 7), ("cheese_count", 10), ("max_episode_steps", 60)),
    num_envs=32, collect_steps=30, train_steps=64, batch_size=128, replay_capacity=120,
    num_iterations=20, eval_every=10, eval_games=32, optimizer=Optimizer(learning_rate=3e-3),
    network={"num_filters": 16, "num_layers": 2, "hidden": 64},
    # acting at temperature 0.5 on the visits for the whole game (targets stay the plain visit
    # shares): self-play games then collect their cheese instead of wandering
    # the spec's sqrt(N) exploration (floor 0): learned better against greedy on `small` than
    # the prior-following sqrt(max(N, 1)) (docs/learning.md, "PyRat")
    algorithm=GraphSearch(search=MCGSConfig(num_simulations=32, exploration_floor=0.0),
                          acting=TemperatureSchedule(temperature=0.5, moves=None)),
    max_eval_steps=60, eval_opponents=("random", "greedy"),
)

PRESETS: dict[str, dict[str, Any]] = {
    "tiny": _PYRAT_TINY,
    # the tiny set-up trained 12.5x longer and evaluated with 128 playouts: 250 iterations,
    # because the margin against greedy kept rising past 100 (-0.9 at 100, -0.02 at 250;
    # at 512 evaluation playouts 9 wins / 117 draws / 2 losses of 128, docs/learning.md)
    "small": dict(_PYRAT_TINY, num_iterations=250, eval_every=25, eval_games=64,
                  algorithm=dataclasses.replace(
                      _PYRAT_TINY["algorithm"],
                      eval_search=MCGSConfig(num_simulations=128,
                                             exploration_floor=0.0))),
    "large": dict(
        num_envs=512, collect_steps=100, train_steps=128, batch_size=1024, replay_capacity=600,
        num_iterations=2000, eval_every=50, eval_games=256, optimizer=Optimizer(learning_rate=1e-3),
        network={"num_filters": 64, "num_layers": 6, "hidden": 256},
        algorithm=GraphSearch(search=MCGSConfig(num_simulations=256),
                              acting=TemperatureSchedule(temperature=0.5, moves=None)),
        max_eval_steps=300, eval_opponents=("random", "greedy"),
    ),
}

# wall time of `turbozero train GAME --preset P` on 2 CPU cores where measured (the docs page
# named holds the conditions); `turbozero presets` says "not measured" for the rest
MEASURED_TIMES: dict[str, str] = {
    "tiny": "4 min 50 s (docs/pyrat.md)",
    "small": "41 min beside other runs (250 iterations, docs/learning.md)",
}
