"""pgx's deterministic games in training (`envs.make("pgx/<id>")`): their `GameSpec`s
(`SPECS`), collected in `turbozero.games.GAMES`, and tic-tac-toe's presets in
`turbozero.games.pgx_games.presets`."""

from __future__ import annotations

from turbozero.games.spec import GameSpec
from turbozero.networks.value_formats import WDLValue

SPECS = (
    GameSpec("pgx/tic_tac_toe", WDLValue(), "mlp", "small test game"),
    GameSpec("pgx/connect_four", WDLValue(), "mlp", "small test game"),
)
# the games that have presets, and where (`turbozero.games.register_game`)
PRESETS_MODULES = {"pgx/tic_tac_toe": "turbozero.games.pgx_games.presets"}
