"""Named training configurations per game: `tiny` runs on 2 CPU cores in minutes; the larger
ones are meant for a GPU."""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.cpu.tree import CPUSearchConfig
from turbozero.search.mcgs import MCGSConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.one_ply import OnePlyConfig
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT
from turbozero.games.chess.adjudication import MaterialScore
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.algorithm_configs import TD, AlphaZero, GraphSearch, MuZero
from turbozero.training.config import TrainConfig
from turbozero.training.muzero import MuZeroConfig
from turbozero.training.stored_observations import EnvStates
from turbozero.training.td import TDConfig
from turbozero.training.stored_policies import LegalPolicy
from turbozero.training.trainer import Optimizer

# Self-play acting schedules (docs/training.md: tau = 1 for the first 30 moves, then
# argmax). Backgammon counts checker moves (about 3 per turn) and gets its variety from the
# dice, so it turns greedy after 20 of them (~7 turns); not tuned.
_CHESS_LIKE = TemperatureSchedule(temperature=1.0, moves=30)


def _kernel(num_simulations: int) -> TreeSearchConfig:
    """The library's tree kernel (docs/search.md) with the settings mctx had here: dynamic FPU
    with fpu_base 0 (measured best at few simulations, docs/search.md "Selection Q") and
    Dirichlet(0.3) noise on 25% of the root prior, over the legal moves."""
    return TreeSearchConfig(num_simulations=num_simulations, selection=SpecPUCT(fpu_base=0.0),
                            root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=0.25))


# alphazero-chess search settings (docs/chess.md): c_puct 1.5, fpu_base 1.0, beta 0,
# Dirichlet 0.3 / 0.25 over the legal moves, 800 simulations
_SPEC_CHESS_SEARCH = TreeSearchConfig(
    num_simulations=800, selection=SpecPUCT(c_puct=1.5, fpu_base=1.0, risk_beta=0.0),
    root=PUCTRoot(dirichlet_alpha=0.3, dirichlet_fraction=0.25))
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

# games capped at 100 plies (a cap is a draw) so that self-play finishes games: 32 of them every
# ~3 iterations, about a quarter decisive with the untrained net (measured; at the spec's 512
# plies the old preset finished 2 games in 10 iterations); a replay ring of 256 positions holds
# whole games. Evaluation plays the same capped games, so its win rate counts mates within 100
# plies (docs/learning.md).
_CHESS_TINY = dict(
    env_config=(("max_plies", 100),),
    num_envs=32, collect_steps=32, train_steps=16, batch_size=128, replay_capacity=256,
    num_iterations=40, eval_every=10, eval_games=32,
    optimizer=Optimizer(learning_rate=3e-3),
    network={"num_filters": 16, "num_blocks": 1, "value_hidden": 32},
    algorithm=AlphaZero(search=_kernel(8), acting=_CHESS_LIKE),
    max_eval_steps=100, eval_opponents=("random",),
    replay_policies=LegalPolicy(),
)

# afterstate TD(lambda) with the 0-ply complete-move player (turbozero.training.td,
# docs/learning.md "Backgammon, `td` preset"): sized for 2 CPU cores; 16 complete moves of 64
# games an iteration, each afterstate sampled ~4 times from a replay of the last ~8 iterations
_BACKGAMMON_TD = dict(
    num_envs=64, collect_steps=16, train_steps=16, batch_size=256, replay_capacity=128,
    optimizer=Optimizer(learning_rate=1e-3), network={"hidden_sizes": (128, 128)},
    algorithm=TD(search=TDConfig()), max_eval_steps=2000,
)

_PYRAT_TINY = dict(
    env_config=(("width", 7), ("height", 7), ("cheese_count", 10), ("max_turns", 60)),
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

_PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "backgammon": {
        # the main job: afterstate TD(lambda), the td set-up below cut to 60 iterations, so that
        # training and its evaluation (32 games against random, and 32 against gnubg 0-ply where
        # gnubg is installed) finish within 5 minutes on 2 CPU cores. Side by side on the same
        # machine it learned more per minute than AlphaZero's az-tiny (docs/learning.md,
        # "Backgammon, the main job")
        "tiny": dict(
            _BACKGAMMON_TD, num_iterations=60, eval_every=60, eval_games=32, checkpoint_every=10,
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
        # the same for a GPU: more games a call, a wider network
        "td-gpu": dict(
            num_envs=1024, collect_steps=16, train_steps=64, batch_size=1024,
            replay_capacity=64, num_iterations=5000, eval_every=250, eval_games=512,
            checkpoint_every=250, optimizer=Optimizer(learning_rate=1e-3),
            network={"hidden_sizes": (256, 256, 256)}, algorithm=TD(search=TDConfig()),
            max_eval_steps=2000,
            eval_opponents=("random", "gnubg"),
        ),
    },
    "pgx/tic_tac_toe": {
        "tiny": dict(
            num_envs=16, collect_steps=9, train_steps=8, batch_size=64, replay_capacity=36,
            num_iterations=20, eval_every=10, eval_games=16, optimizer=Optimizer(learning_rate=3e-3),
            network={"hidden_sizes": (32, 32)},
            algorithm=AlphaZero(search=_kernel(16),
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
                                         num_games=16, num_simulations=16, max_moves=9,
                                         batch_tiers=(4, 16)),
                acting=TemperatureSchedule(temperature=1.0, moves=4)),
            max_eval_steps=9, eval_opponents=("random",),
        ),
    },
    "chess": {
        "tiny": _CHESS_TINY,
        # tiny's games and a 32 x 2 network, with self-play games cut at 40 plies and scored by
        # material by degree (MaterialScore(3): a 3-pawn lead is worth a win), 128 games x 20
        # moves an iteration at 16 simulations (Gumbel root, 8 considered; 0.95 a ply, so a
        # mate now beats a won position later), 32 updates of 128 (about 1.6 uses a position).
        # Evaluated with the value head alone (one ply over the legal moves): a tree search
        # mates whatever random play offers, whatever the network. Wins against random rose from
        # 3 / 15 of 32 untrained to means of 15.8 / 22.8 over iterations 60-100 (docs/learning.md,
        # "Chess, `small` preset"); the former small (32 PUCT simulations, 100-ply games
        # adjudicated at the cap, a tree-search evaluation) stayed flat.
        "small": dict(
            _CHESS_TINY,
            network={"num_filters": 32, "num_blocks": 2, "value_hidden": 64},
            num_envs=128, collect_steps=20, train_steps=32, replay_capacity=128,
            num_iterations=100, self_play_max_moves=40, truncated_games=MaterialScore(3.0),
            algorithm=AlphaZero(
                search=TreeSearchConfig(num_simulations=16, selection=SpecPUCT(fpu_base=0.0),
                                        root=GumbelRoot(max_considered=8), discount=0.95),
                acting=_CHESS_LIKE, eval_search=OnePlyConfig()),
            eval_opponents=("random", "material"),
        ),
        # the tiny set-up with self-play on the C++ CPU path (docs/cpu_search.md, "Training")
        "cpu": dict(
            env_config=(("max_plies", 100),),
            num_envs=32, collect_steps=32, train_steps=16, batch_size=128, replay_capacity=256,
            num_iterations=40, eval_every=10, eval_games=32,
            optimizer=Optimizer(learning_rate=3e-3),
            network={"num_filters": 16, "num_blocks": 1, "value_hidden": 32},
            algorithm=AlphaZero(
                search=CPUSelfPlayConfig(search=CPUSearchConfig(fpu_base=0.0), num_workers=2,
                                         num_games=32, num_simulations=8, max_moves=100,
                                         temperature_moves=30, batch_tiers=(8, 32)),
                acting=_CHESS_LIKE),
            max_eval_steps=100, eval_opponents=("random",),
            replay_policies=LegalPolicy(),
        ),
        # the replay keeps env states, not planes: 512 x 1,024 positions of float32 planes
        # would be 16.4 GB (31,232 bytes each), as states 0.9 GB (1,722 bytes; docs/chess.md);
        # and the legal moves' policy targets, not dense ones: 12.2 GB (23,360 bytes) -> 0.7 GB
        # (1,308 bytes). Every chess preset keeps legal-move targets (read back identical).
        "large": dict(
            num_envs=512, collect_steps=64, train_steps=256, batch_size=256, replay_capacity=1024,
            replay_observations=EnvStates(), replay_policies=LegalPolicy(),
            donate_loop_state=True,
            num_iterations=10000, eval_every=100, eval_games=256, optimizer=Optimizer(learning_rate=1e-3),
            network={"num_filters": 192, "num_blocks": 15, "value_hidden": 256},
            algorithm=AlphaZero(search=_SPEC_CHESS_SEARCH, acting=_CHESS_LIKE),
            max_eval_steps=512, eval_opponents=("random", "greedy"),
        ),
    },
    "pyrat": {
        "tiny": _PYRAT_TINY,
        # the tiny set-up trained 12.5x longer and evaluated with 128 playouts: 250 iterations,
        # because the margin against greedy kept rising past 100 (-0.9 at 100, -0.02 at 250;
        # at 512 evaluation playouts 9 wins / 117 draws / 2 losses of 128, docs/learning.md)
        "small": dict(_PYRAT_TINY, num_iterations=250, eval_every=25, eval_games=64,
                      algorithm=dataclasses.replace(
                          _PYRAT_TINY["algorithm"],
                          eval_search=MCGSConfig(num_simulations=128, temperature=0.0,
                                                 exploration_floor=0.0))),
        "large": dict(
            num_envs=512, collect_steps=100, train_steps=128, batch_size=1024, replay_capacity=600,
            num_iterations=2000, eval_every=50, eval_games=256, optimizer=Optimizer(learning_rate=1e-3),
            network={"num_filters": 64, "num_layers": 6, "hidden": 256},
            algorithm=GraphSearch(search=MCGSConfig(num_simulations=256),
                                  acting=TemperatureSchedule(temperature=0.5, moves=None)),
            max_eval_steps=300, eval_opponents=("random", "greedy"),
        ),
    },
    "gomoku": {
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
    },
    "pacosako": {
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
            algorithm=AlphaZero(search=_kernel(8), acting=_CHESS_LIKE),
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
                acting=_CHESS_LIKE),
            max_eval_steps=300, eval_opponents=("random",),
        ),
    },
}


# Wall time of `turbozero train GAME --preset P` on 2 CPU cores, where someone measured it (the
# docs page named holds the conditions); `turbozero presets` says "not measured" for the rest.
MEASURED_TIMES: dict[tuple[str, str], str] = {
    ("backgammon", "tiny"): "4 min 55 s with no compilation cache at load 2-4 (docs/learning.md, "
                            "\"The main job\")",
    ("backgammon", "az-tiny"): "75 s to 2 min 30 s (docs/training.md); 6 min 6 s at load 4-5 "
                               "(docs/learning.md)",
    ("backgammon", "medium"): "22 min with a second seed beside it (docs/learning.md)",
    ("backgammon", "td"): "700 iterations in 95 min beside a second seed and other work "
                          "(docs/learning.md); 2000 not measured",
    ("chess", "tiny"): "9 min 27 s beside a second seed (docs/learning.md)",
    ("chess", "small"): "57 min beside a second seed (docs/learning.md)",
    ("pgx/tic_tac_toe", "tiny"): "21 s (docs/training.md)",
    ("pyrat", "tiny"): "4 min 50 s (docs/pyrat.md)",
    ("pyrat", "small"): "41 min beside other runs (250 iterations, docs/learning.md)",
    ("pacosako", "tiny"): "about 4 min beside other runs, on the tree kernel (1 min 52 s "
                          "with mctx, docs/pacosako.md)",
    ("pacosako", "small"): "8 min 40 s beside one evaluation run (2026-11-25; 25 min with "
                           "a second seed and another run before the per-step training calls, "
                           "docs/learning.md)",
    ("gomoku", "tiny"): "5 min 30 s beside a second seed (docs/learning.md)",
}


def available_presets(game: str) -> tuple[str, ...]:
    return tuple(_PRESETS.get(game, {}))


# A preset entry `eval_opponents_if_installed`: registered opponents that need an optional
# package (turbozero.games.Opponent.module, e.g. gnubg); the preset evaluates against them only
# where that package is installed, so the preset runs without the extra.
_IF_INSTALLED = "eval_opponents_if_installed"


def _installed(game: str, opponent: str) -> bool:
    from turbozero.games import game_spec

    module = next(o.module for o in game_spec(game).opponents if o.name == opponent)
    return module is None or importlib.util.find_spec(module) is not None


def _preset(game: str, preset: str) -> dict[str, Any]:
    if game not in _PRESETS:
        raise ValueError(f"no presets for game {game!r}; games with presets: {sorted(_PRESETS)}")
    if preset not in _PRESETS[game]:
        raise ValueError(
            f"unknown preset {preset!r} for {game}; available: {', '.join(_PRESETS[game])}"
        )
    return _PRESETS[game][preset]


def missing_opponents(game: str, preset: str) -> tuple[tuple[str, str], ...]:
    """(name, install command) of each opponent `preset` evaluates against where its package is
    installed and that is not installed here (`turbozero train` says so in one line each)."""
    from turbozero.games import game_spec

    install = {o.name: o.install for o in game_spec(game).opponents}
    return tuple((o, install[o]) for o in _preset(game, preset).get(_IF_INSTALLED, ())
                 if not _installed(game, o))


def get_preset(game: str, preset: str, **overrides: Any) -> TrainConfig:
    """The `TrainConfig` of `preset` for `game`, with keyword overrides. A preset's optional
    opponents (`eval_opponents_if_installed`) join `eval_opponents` where their package is
    installed, unless `eval_opponents` is given."""
    cfg = dict(_preset(game, preset), game=game)
    optional = cfg.pop(_IF_INSTALLED, ())
    cfg["eval_opponents"] = tuple(cfg.get("eval_opponents", ())) + tuple(
        o for o in optional if _installed(game, o))
    unknown = set(overrides) - {f.name for f in dataclasses.fields(TrainConfig)} - set(
        TrainConfig.legacy_fields)
    if unknown:
        raise ValueError(f"unknown config fields: {sorted(unknown)}")
    cfg.update(overrides)
    return TrainConfig(**cfg)
