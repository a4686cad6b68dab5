"""Chess in training: the opponents and referees of evaluation (`referees`: the
material-greedy player, Stockfish through python-chess), PGN records of games (`records`) and
the scoring of self-play games cut by a ply cap (`adjudication`). The rules are `envs.chess`;
its `GameSpec` is `SPEC` below (collected in `turbozero.games.GAMES`), its presets
in `turbozero.games.chess.presets`."""

from __future__ import annotations

from turbozero.games.chess.referees import (STOCKFISH_OPPONENT_INSTALL, material_policy,
                                            stockfish_match)
from turbozero.games.spec import GameSpec, Opponent
from turbozero.networks.value_formats import WDLValue

SPEC = GameSpec("chess", WDLValue(), "resnet", "WDL value head, docs/chess.md",
                (Opponent("material", "material = 1-ply material-greedy (P1 N3 B3 R5 Q9, "
                          "mate first, ties at random)", policy=material_policy),
                 Opponent("stockfish", "stockfish = Stockfish at skill level 0, depth 1 "
                          "(its weakest)", match=stockfish_match, module="chess",
                          install=STOCKFISH_OPPONENT_INSTALL)))
