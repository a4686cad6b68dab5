"""Named training configurations per game: `tiny` runs on 2 CPU cores in minutes; the larger
ones are meant for a GPU. Each game's presets are in its own package
(`turbozero/games/<game>/presets.py`: `PRESETS`, `MEASURED_TIMES`); this module collects them
and builds a `TrainConfig` from one."""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

from turbozero.games.backgammon import presets as _backgammon
from turbozero.games.chess import presets as _chess
from turbozero.games.gomoku import presets as _gomoku
from turbozero.games.pacosako import presets as _pacosako
from turbozero.games.pgx_games import presets as _pgx_games
from turbozero.games.pyrat import presets as _pyrat
from turbozero.games import game_spec
from turbozero.training.config import TrainConfig

# game -> the module holding its presets
_PRESET_MODULES = {"backgammon": _backgammon, "pgx/tic_tac_toe": _pgx_games, "chess": _chess,
                   "pyrat": _pyrat, "gomoku": _gomoku, "pacosako": _pacosako}
_PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    game: module.PRESETS for game, module in _PRESET_MODULES.items()}
# Wall time of `turbozero train GAME --preset P` on 2 CPU cores, where someone measured it (the
# docs page named holds the conditions); `turbozero presets` says "not measured" for the rest.
MEASURED_TIMES: dict[tuple[str, str], str] = {
    (game, preset): text for game, module in _PRESET_MODULES.items()
    for preset, text in module.MEASURED_TIMES.items()}


def available_presets(game: str) -> tuple[str, ...]:
    return tuple(_PRESETS.get(game, {}))


# A preset entry `eval_opponents_if_installed`: registered opponents that need an optional
# package (turbozero.games.Opponent.module, e.g. gnubg); the preset evaluates against them only
# where that package is installed, so the preset runs without the extra.
_IF_INSTALLED = "eval_opponents_if_installed"


def _installed(game: str, opponent: str) -> bool:
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
    unknown = set(overrides) - {f.name for f in dataclasses.fields(TrainConfig)}
    if unknown:
        hint = ("; the self-play search, the evaluation player and acting are fields of "
                "`algorithm` (e.g. algorithm=dataclasses.replace(config.algorithm, search=...))"
                if unknown & {"search", "eval_search", "temperature_schedule"} else "")
        raise ValueError(f"unknown config fields: {sorted(unknown)}{hint}")
    cfg.update(overrides)
    return TrainConfig(**cfg)
