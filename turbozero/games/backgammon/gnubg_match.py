"""Backgammon evaluation against gnubg at 0-ply (gnubg is a test/evaluation dependency).

gnubg is not jittable, so this is a Python loop over a batch of games
(`evaluation.play_outside_match`): the agent's actions come from jitted batched searches of the
games where it must move (a complete-move player's plan plays the rest of its turn), gnubg's
complete move is found once per turn (through `envs.backgammon.gnubg_bridge`) and fed to the
env one checker at a time.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax

from turbozero.training.evaluation import play_outside_match


def play_against_gnubg(
    env: Any,
    agent: Callable,
    variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
    plies: int = 0,
    duplicate: bool = True,
) -> dict[str, Optional[float]]:
    """`agent(variables, states, key) -> actions` against gnubg; seats alternate over games.
    `agent` is called as given: pass a jitted function, kept across matches (the Trainer passes
    its cached one), or every match compiles the search again.

    `duplicate` (the default, as the field measures): games 2k and 2k+1 see the same dice,
    the agent in seat 0 in one and seat 1 in the other (`evaluation.play_outside_match`), and
    the points per game's standard error is taken over the pairs; `num_games` must be even.
    `duplicate=False` plays independent games.

    Backgammon registers this as its `gnubg` opponent (`turbozero.games`). Returns
    `evaluation.match_summary` (`duplicate_summary` for duplicate games, with `pairs`): counts
    of wins, draws, losses and unfinished games, rates over the finished games only (None when
    none finished), `mean_return` (points per game) and `mean_return_se`.
    """
    if env.id != "backgammon":
        raise ValueError(f"gnubg can only play backgammon, not {env.id}")
    try:
        from envs.backgammon.gnubg_bridge import best_move_actions
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ValueError("the gnubg opponent needs the `gnubg` package: "
                         'pip install -e ".[backgammon]"') from err
    return play_outside_match(env, agent, variables, key, num_games, max_steps,
                              _Gnubg(best_move_actions, plies), duplicate=duplicate).summary()


class _Gnubg:
    """gnubg as an `evaluation.OutsideOpponent`: its complete move is found once per turn and
    fed to the env one checker move at a time."""

    def __init__(self, best_move_actions: Callable, plies: int):
        self.best_move_actions = best_move_actions
        self.plies = plies
        self.queues: dict[int, list[int]] = {}

    def choose(self, game: int, states: Any) -> int:
        if not self.queues.get(game):
            single = jax.tree_util.tree_map(lambda x: x[game], states)  # numpy: cheap
            self.queues[game] = list(self.best_move_actions(single, plies=self.plies))
        return self.queues[game].pop(0)

    def after_move(self, game: int, action: int, agent_output: Any) -> None:
        if agent_output is not None:  # the agent moved: gnubg's turn has ended
            self.queues[game] = []

    def after_step(self, was_done: Any, states: Any) -> None:
        pass
