"""Gomoku in training: its `GameSpec` (`SPEC`: 3 players, the line-extender opponent),
collected in `turbozero.games.GAMES`, and its presets in `turbozero.games.gomoku.presets`. The
rules are `envs.gomoku`."""

from __future__ import annotations

from typing import Callable

from envs.core import Env
from envs.gomoku.extender import line_extender
from turbozero.games.spec import GameSpec, Opponent
from turbozero.networks.value_formats import MoverRelativeValues


def _gomoku_extender(env: Env) -> Callable:
    return line_extender(env)


# the MuZero set-up is 3-player (the spec's); MuZero builds its own model
# (turbozero.networks.muzero), the trunk serves AlphaZero on gomoku
SPEC = GameSpec("gomoku", MoverRelativeValues(3), "resnet",
                "3 players, (me, next, prev) values, MuZero, docs/gomoku.md",
                (Opponent("greedy", "greedy = line extender (wins, blocks, else extends "
                          "its longest line)", policy=_gomoku_extender),))
