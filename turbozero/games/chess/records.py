"""PGN records of a trainer's chess games: its search against itself or an evaluation opponent,
each of its moves annotated with the searched value and the visit share (docs/chess.md,
"Records and referees").

    records = record_trainer_games(trainer, "material", num_games=4)
    open("eval.pgn", "w").write(games_to_pgn(records))
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Optional

import jax

from envs.chess.pgn import GameRecord, games_to_pgn, record_games
from turbozero.search import search

SELF = "self"  # the opponent name of a game the agent plays against itself


@functools.lru_cache(maxsize=4)
def search_policy(algorithm: Any, config: Any = None) -> Callable:
    """`(variables, states, key) -> SearchResult` of a tree-search algorithm (AlphaZero), with
    its evaluation search by default. Cached (bounded) so that recording again with the same
    algorithm does not compile the game loop again."""
    if not hasattr(algorithm, "evaluator"):
        raise ValueError(f"{type(algorithm).__name__} has no network evaluator to search with; "
                         "records with search notes need an AlphaZero algorithm")
    cfg = algorithm.eval_search_config if config is None else config

    def policy(variables, states, key):
        return search(algorithm.env, algorithm.evaluator, variables, states, key, cfg)

    return policy


def record_trainer_games(trainer: Any, opponent: str = SELF, num_games: int = 2,
                         key: Optional[jax.Array] = None, max_steps: Optional[int] = None,
                         variables: Any = None, self_play: bool = False) -> list[GameRecord]:
    """Record `num_games` chess games of `trainer`'s agent: against itself (`opponent="self"`)
    or a registered evaluation opponent with a jittable policy (random, greedy, material).

    The agent searches with its evaluation settings, or the self-play ones (root noise,
    temperature) with `self_play=True`. Against an opponent the agent is White in the first
    half of the games (rounded up) and Black in the rest. `max_steps` defaults to the trainer's
    `max_eval_steps`; `variables` to the trainer's current network.
    """
    if isinstance(num_games, bool) or int(num_games) < 1:
        raise ValueError(f"record_trainer_games: num_games must be >= 1, got {num_games}")
    algorithm = trainer.algorithm
    agent = search_policy(algorithm, algorithm.search_config if self_play else None)
    if variables is None:
        variables = trainer.variables(trainer.state.train_state)
    key = jax.random.PRNGKey(trainer.config.seed + 2) if key is None else key
    steps = trainer.config.max_eval_steps if max_steps is None else max_steps
    name = "agent (self-play search)" if self_play else "agent"
    if opponent == SELF:
        return record_games(trainer.env, agent, agent, key, int(num_games), steps,
                            (variables, variables), (name, name))
    other = trainer.baseline_policy(opponent)  # ValueError listing the playable ones
    n_white = (int(num_games) + 1) // 2
    k1, k2 = jax.random.split(key)
    records = record_games(trainer.env, agent, other, k1, n_white, steps,
                           (variables, variables), (name, opponent))
    if int(num_games) > n_white:
        records += record_games(trainer.env, other, agent, k2, int(num_games) - n_white, steps,
                                (variables, variables), (opponent, name))
    return records


__all__ = ["SELF", "games_to_pgn", "record_trainer_games", "search_policy"]
