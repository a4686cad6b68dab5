"""Backgammon's training presets (`turbozero.presets.get_preset("backgammon", name)`)."""

from __future__ import annotations

from typing import Any

from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import PUCTRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.algorithm_configs import TD, AlphaZero
from turbozero.training.td import TDConfig
from turbozero.training.updates import Optimizer

# Backgammon counts checker moves (about 3 per turn) and gets its variety from the dice, so
# it turns greedy after 20 of them (~7 turns); not tuned.
_BACKGAMMON = TemperatureSchedule(temperature=1.0, moves=20)


def _backgammon_kernel(num_simulations: int) -> TreeSearchConfig:
    """AlphaZero's backgammon search: the tree kernel's chance nodes with mctx's settings here
    (PUCT c 1.25, unvisited children at the parent's value, Dirichlet 0.3 / 0.25 over the
    legal moves). Against mctx's stochastic search it ran 13.5-22x faster at batch 64 x 64
    simulations and played even over 200 games at 16 simulations (-0.010 +- 0.104 points a
    game) and 100 at 32 (docs/benchmarks.md, "Backgammon search: kernel vs mctx"), so the
    AlphaZero presets moved to it (issue 33); the curves measured before name mctx."""
    return TreeSearchConfig(num_simulations=num_simulations,
                            selection=SpecPUCT(c_puct=1.25, fpu_base=0.0),
                            root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=0.25))


# The complete-move player's move filter before a look-ahead: at most 8 of the 0-ply moves,
# those within 0.16 points of the best, gnubg's "normal" filter before its 1-ply evaluation.
# It keeps 5.3 of 8 on average and plays the moves all 8 would (docs/learning.md, "Lookahead
# that is cheap"); self-play at 0 plies never reads it
MOVE_FILTER = dict(candidates=8, threshold=0.16)
_TD = TD(search=TDConfig(player=AfterstatePlayerConfig(**MOVE_FILTER)))

# afterstate TD(lambda) with the 0-ply complete-move player (turbozero.training.td,
# docs/learning.md "Backgammon, `td` preset"): sized for 2 CPU cores; 16 complete moves of 64
# games an iteration, each afterstate sampled ~4 times from a replay of the last ~8 iterations
_BACKGAMMON_TD = dict(
    num_envs=64, collect_steps=16, train_steps=16, batch_size=256, replay_capacity=128,
    optimizer=Optimizer(learning_rate=1e-3), network={"hidden_sizes": (128, 128)},
    algorithm=_TD, max_eval_steps=2000,
)

PRESETS: dict[str, dict[str, Any]] = {
    # the main job: afterstate TD(lambda), the td set-up below cut to 600 iterations, so that
    # training and its evaluation (32 games against random, and 32 against gnubg 0-ply where
    # gnubg is installed) finish within 5 minutes on 2 CPU cores. Side by side on the same
    # machine it learned more per minute than AlphaZero's az-tiny (docs/learning.md,
    # "Backgammon, the main job"); 60 iterations until issue 43 made an iteration ~5x cheaper
    # (complete moves listed and valued faster), measured again there (600 against 300:
    # -0.475 against -0.633 points a game against gnubg 0-ply, 400 games)
    "tiny": dict(
        _BACKGAMMON_TD, num_iterations=600, eval_every=600, eval_games=32, checkpoint_every=50,
        eval_opponents=("random",), eval_opponents_if_installed=("gnubg",),
    ),
    # the former tiny: AlphaZero, 8 simulations (on mctx's stochastic search until
    # issue 33; now the kernel, see _backgammon_kernel)
    "az-tiny": dict(
        num_envs=32, collect_steps=32, train_steps=16, batch_size=128, replay_capacity=256,
        num_iterations=24, eval_every=24, eval_games=32, optimizer=Optimizer(learning_rate=3e-3),
        network={"hidden_sizes": (64, 64)},
        algorithm=AlphaZero(search=_backgammon_kernel(8), acting=_BACKGAMMON),
        max_eval_steps=1200, eval_opponents=("random", "greedy"),
    ),
    # sized for the learning curves of docs/learning.md: ~20 min on 2 CPU cores, evaluated
    # against gnubg 0-ply too (needs the backgammon extra)
    "medium": dict(
        num_envs=64, collect_steps=32, train_steps=32, batch_size=256, replay_capacity=256,
        num_iterations=100, eval_every=20, eval_games=64, optimizer=Optimizer(learning_rate=3e-3),
        network={"hidden_sizes": (128, 128)},
        algorithm=AlphaZero(search=_backgammon_kernel(16), acting=_BACKGAMMON),
        max_eval_steps=2000, eval_opponents=("random", "greedy", "gnubg"),
    ),
    "small": dict(
        num_envs=256, collect_steps=64, train_steps=64, batch_size=512, replay_capacity=1024,
        num_iterations=500, eval_every=25, eval_games=256, optimizer=Optimizer(learning_rate=1e-3),
        network={"hidden_sizes": (256, 256, 256)},
        algorithm=AlphaZero(search=_backgammon_kernel(64), acting=_BACKGAMMON),
        max_eval_steps=2000, eval_opponents=("random", "greedy"),
    ),
    "large": dict(
        num_envs=1024, collect_steps=64, train_steps=128, batch_size=2048, replay_capacity=2048,
        num_iterations=5000, eval_every=100, eval_games=1024, optimizer=Optimizer(learning_rate=1e-3),
        network={"hidden_sizes": (512, 512, 512, 512)},
        algorithm=AlphaZero(search=_backgammon_kernel(200), acting=_BACKGAMMON),
        max_eval_steps=2000, eval_opponents=("random", "greedy"),
    ),
    # afterstate TD(lambda) trained for longer (_BACKGAMMON_TD above): 2000 iterations
    "td": dict(
        _BACKGAMMON_TD, num_iterations=2000, eval_every=100, eval_games=64,
        checkpoint_every=50, eval_opponents=("random",),
    ),
    # the td set-up for two hours on 2 CPU cores with gnubg-lite inputs, the cosine schedule
    # ending there: 28,000 iterations (485k games) in 1 h 52 min beside a second run; error
    # rate 16.9 at 0 ply against 20.6 for raw inputs over 36,000 iterations in the same two
    # hours (docs/learning.md, "Two hours on 2 CPU cores")
    "td-2h": dict(
        _BACKGAMMON_TD, num_iterations=28000, eval_every=28000, eval_games=64,
        checkpoint_every=1000, env_config=(("features", "gnubg-lite"),),
        eval_opponents=("random",), eval_opponents_if_installed=("gnubg",),
    ),
    # the same for a GPU: more games a call, a wider network
    "td-gpu": dict(
        num_envs=1024, collect_steps=16, train_steps=64, batch_size=1024,
        replay_capacity=64, num_iterations=5000, eval_every=250, eval_games=512,
        checkpoint_every=250, optimizer=Optimizer(learning_rate=1e-3),
        network={"hidden_sizes": (256, 256, 256)}, algorithm=_TD,
        max_eval_steps=2000,
        eval_opponents=("random", "gnubg"),
    ),
}

# wall time of `turbozero train GAME --preset P` on 2 CPU cores where measured (the docs page
# named holds the conditions); `turbozero presets` says "not measured" for the rest
MEASURED_TIMES: dict[str, str] = {
    "tiny": "2 min 44 s with no compilation cache at load 1.5-2 (docs/learning.md, "
        "\"The main job\")",
    "az-tiny": "75 s to 2 min 30 s (docs/training.md); 6 min 6 s at load 4-5 "
        "(docs/learning.md)",
    "medium": "22 min with a second seed beside it (docs/learning.md)",
    "td-2h": "1 h 52 min beside a second run (docs/learning.md, \"Two hours on 2 CPU "
        "cores\")",
    "td": "700 iterations in 95 min beside a second seed and other work "
        "(docs/learning.md); 2000 not measured",
}
