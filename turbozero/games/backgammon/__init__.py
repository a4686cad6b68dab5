"""Backgammon in training: its `GameSpec` (`SPEC` below, collected in `turbozero.games.GAMES`),
the gnubg opponent's matches (`gnubg_match`) and its presets (`presets`). The rules are
`envs.backgammon`; the value format and equity are in `equity`."""

from __future__ import annotations

from turbozero.games.spec import GameSpec, Opponent
from turbozero.networks.value_formats import FourWayValue


def _gnubg_match(env, agent, variables, key, num_games, max_steps, duplicate=True):
    # on use: the match needs gnubg (optional, the backgammon extra) and its bridge (0.4 s)
    from turbozero.games.backgammon.gnubg_match import play_against_gnubg

    return play_against_gnubg(env, agent, variables, key, num_games, max_steps,
                              duplicate=duplicate)


SPEC = GameSpec("backgammon", FourWayValue(), "mlp", "4-way conditional value head (equity)",
                (Opponent("gnubg", "gnubg = GNU Backgammon at 0-ply (its neural net, "
                          "no lookahead)", match=_gnubg_match, module="gnubg",
                          install='pip install -e ".[backgammon]"', duplicate=True),),
                move_text="envs.backgammon.moves_text:MOVE_TEXT",
                error_rate="turbozero.games.backgammon.error_rate:report")
