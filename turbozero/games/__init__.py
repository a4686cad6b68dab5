"""What a game plugs into the loop: its value head, network trunk, evaluation opponents and
presets, each game in its own package here (`turbozero/games/<game>/`: `SPEC` in its
`__init__`, its presets in `presets.py`, its referees, records and adjudication beside them).

The loop, search and losses are shared; a game only says which value format its head outputs
(`turbozero.networks.value_formats`) and which trunk reads its observation
(`turbozero.games.spec`).

A game registers once, with `register_game` (the library's own below; docs/envs.md, "Training
a game of your own"): its env for `envs.make`, its spec for training, its presets for
`turbozero.presets` and `turbozero train GAME --preset P`. A game in another installed package
registers through the entry point group `turbozero.games` (the entry point names a module that
calls `register_game` when imported), loaded the first time a name is not known.
"""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Any, Optional, Union

import envs
from turbozero.games import backgammon, chess, gomoku, pacosako, pgx_games, pyrat
from turbozero.games.spec import GameSpec, Opponent, build_network

ENTRY_POINT_GROUP = "turbozero.games"

GAMES: dict[str, GameSpec] = {}  # game -> its spec
# game -> its presets: a module name (imported on first use: presets import the training
# configs, which import this package) or a {preset: settings} dict
PRESETS: dict[str, Union[str, dict]] = {}


def register_game(spec: GameSpec, *, env: Union[str, type, None] = None,
                  presets: Union[str, dict, None] = None) -> None:
    """Register a game for training under `spec.name`, once for everything that finds it by
    name: `env` (an `envs.core.Env` subclass or "module:Class") for `envs.make`, unless the
    name is already an env there; `presets` (a module with `PRESETS` and optionally
    `MEASURED_TIMES`, named by string, or a {preset: TrainConfig keywords} dict) for
    `turbozero.presets.get_preset`. The same registration again is a no-op; a different spec
    under a taken name is a ValueError."""
    if not isinstance(spec, GameSpec):
        raise ValueError(f"spec must be a turbozero.games.GameSpec, got {spec!r}")
    if spec.name in GAMES and GAMES[spec.name] != spec:
        raise ValueError(f"the game {spec.name!r} is registered with another spec")
    if presets is not None and not isinstance(presets, (str, dict)):
        raise ValueError(f"presets must be a module name or a dict, got {presets!r}")
    if env is not None:
        envs.register(spec.name, env)
    elif not spec.name.startswith("pgx/") and spec.name not in envs.available_envs():
        raise ValueError(f"{spec.name!r} is no env of envs.make: give env=YourEnvClass")
    GAMES[spec.name] = spec
    if presets is not None:
        PRESETS[spec.name] = presets


for _package in (backgammon, chess, gomoku, pacosako, pyrat):
    register_game(_package.SPEC, presets=f"{_package.__name__}.presets")
for _spec in pgx_games.SPECS:
    register_game(_spec, presets=pgx_games.PRESETS_MODULES.get(_spec.name))

_plugins_loaded = False


def load_plugins() -> None:
    """Import every module of the `turbozero.games` entry point group once (each registers its
    games); a module that fails to import is named in one line."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            importlib.import_module(entry.value.split(":")[0])
        except Exception as err:  # one broken plugin must not hide the others' games
            raise ValueError(f"the game plugin {entry.name!r} ({entry.value}) failed to "
                             f"import: {type(err).__name__}: {err}") from err


def game_spec(name: str) -> GameSpec:
    if name not in GAMES:
        load_plugins()
    if name not in GAMES:
        raise ValueError(f"no training set-up for game {name!r}; known: {', '.join(sorted(GAMES))}")
    return GAMES[name]


def game_hook(game: str, field: str, refusal: str) -> Any:
    """The object the game's spec names in `field` ("module:attribute", imported on use, e.g.
    `move_text`, `error_rate`). If it names none: ValueError(`refusal`), formatted with `game`
    and `games`, the registered games that name one."""
    path = getattr(game_spec(game), field)
    if not path:
        games = ", ".join(sorted(g for g, s in GAMES.items() if getattr(s, field)))
        raise ValueError(refusal.format(game=game, games=games))
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def presets_of(game: str) -> Optional[dict[str, Any]]:
    """{preset: settings} of a registered game, or None where it has none; with the measured
    times of its presets module where it has them (`MEASURED_TIMES`)."""
    if game not in PRESETS:
        load_plugins()
    entry = PRESETS.get(game)
    if isinstance(entry, str):
        return importlib.import_module(entry).PRESETS
    return entry


def measured_times_of(game: str) -> dict[str, str]:
    entry = PRESETS.get(game)
    if isinstance(entry, str):
        return dict(getattr(importlib.import_module(entry), "MEASURED_TIMES", {}))
    return {}


__all__ = ["ENTRY_POINT_GROUP", "GAMES", "PRESETS", "GameSpec", "Opponent",
           "build_network", "game_hook", "game_spec", "load_plugins", "measured_times_of",
           "presets_of", "register_game"]
