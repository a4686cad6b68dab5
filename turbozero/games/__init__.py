"""What a game plugs into the loop: its value head, network trunk, evaluation opponents and
presets, each game in its own package here (`turbozero/games/<game>/`: `SPEC` in its
`__init__`, its presets in `presets.py`, its referees, records and adjudication beside them).

The loop, search and losses are shared; a game only says which value format its head outputs
(`turbozero.networks.value_formats`) and which trunk reads its observation
(`turbozero.games.spec`).
"""

from __future__ import annotations

from turbozero.games import backgammon, chess, gomoku, pacosako, pgx_games, pyrat
from turbozero.games.spec import GameSpec, Opponent, build_network

# every game's spec, each from its own package
GAMES: dict[str, GameSpec] = {
    spec.name: spec
    for spec in (backgammon.SPEC, chess.SPEC, pacosako.SPEC, pyrat.SPEC, gomoku.SPEC,
                 *pgx_games.SPECS)
}


# game modules whose classes moved (old module -> module now), from each game's package: stored
# run directories name the old place (turbozero.training.migration reads them through this)
MOVED_MODULES: dict[str, str] = {
    old: new for package in (backgammon, chess, gomoku, pacosako, pgx_games, pyrat)
    for old, new in getattr(package, "MOVED_MODULES", {}).items()
}


def game_spec(name: str) -> GameSpec:
    if name not in GAMES:
        raise ValueError(f"no training set-up for game {name!r}; known: {', '.join(sorted(GAMES))}")
    return GAMES[name]


__all__ = ["GAMES", "MOVED_MODULES", "GameSpec", "Opponent", "build_network", "game_spec"]
