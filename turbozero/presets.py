"""Named training configurations per game: `tiny` runs on 2 CPU cores in minutes; the larger
ones are meant for a GPU. Each game's presets are in its own package
(`turbozero/games/<game>/presets.py`: `PRESETS`, `MEASURED_TIMES`), registered with the
game (`turbozero.games.register_game`: a game outside the library brings its own); this
module builds a `TrainConfig` from one."""

from __future__ import annotations

import dataclasses
import importlib.util
from typing import Any

from turbozero.games import PRESETS, game_spec, measured_times_of, presets_of
from turbozero.training.config import TrainConfig


def measured_time(game: str, preset: str) -> str:
    """Wall time of `turbozero train GAME --preset P` on 2 CPU cores, where someone measured it
    (the docs page named holds the conditions); "not measured" for the rest."""
    return measured_times_of(game).get(preset, "not measured")


def available_presets(game: str) -> tuple[str, ...]:
    return tuple(presets_of(game) or {})


# A preset entry `eval_opponents_if_installed`: registered opponents that need an optional
# package (turbozero.games.Opponent.module, e.g. gnubg); the preset evaluates against them only
# where that package is installed, so the preset runs without the extra.
_IF_INSTALLED = "eval_opponents_if_installed"


def _installed(game: str, opponent: str) -> bool:
    module = next(o.module for o in game_spec(game).opponents if o.name == opponent)
    return module is None or importlib.util.find_spec(module) is not None


def _preset(game: str, preset: str) -> dict[str, Any]:
    presets = presets_of(game)
    if presets is None:
        raise ValueError(f"no presets for game {game!r}; games with presets: {sorted(PRESETS)}")
    if preset not in presets:
        raise ValueError(
            f"unknown preset {preset!r} for {game}; available: {', '.join(presets)}"
        )
    return presets[preset]


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
