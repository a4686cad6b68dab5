"""PyRat in training: its `GameSpec` (`SPEC`: a two-player network, the shortest-path greedy
opponent), collected in `turbozero.games.GAMES`, and its presets in
`turbozero.games.pyrat.presets`. The rules are `envs.pyrat`."""

from __future__ import annotations

from typing import Callable

import jax

from envs.core import Env
from turbozero.games.spec import GameSpec, Opponent
from turbozero.networks.value_formats import SeatValues


def _pyrat_greedy(env: Env) -> Callable:
    def policy(variables, states, key):
        del variables, key
        return jax.vmap(env.greedy_actions)(states)

    return policy


SPEC = GameSpec("pyrat", SeatValues(2), "two_player", "two policies, the cheese each will collect",
                (Opponent("greedy", "greedy = shortest path to the nearest cheese "
                          "(envs.pyrat.greedy_actions)", policy=_pyrat_greedy),))
