"""Backgammon evaluation against gnubg at 0-ply (gnubg is a test/evaluation dependency).

gnubg is not jittable, so this is a Python loop over a batch of games: the agent's actions come
from one jitted batched search per step, gnubg's complete move is found once per turn (through
`envs._src.backgammon.gnubg_bridge`) and fed to the env one checker at a time.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import jax
import numpy as np

from turbozero.training.evaluation import match_counts, match_summary


def play_against_gnubg(
    env: Any,
    agent: Callable,
    variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
    plies: int = 0,
) -> dict[str, Optional[float]]:
    """`agent(variables, states, key) -> actions` against gnubg; seats alternate over games.
    `agent` is called as given: pass a jitted function, kept across matches (the Trainer passes
    its cached one), or every match compiles the search again.

    Backgammon registers this as its `gnubg` opponent (`turbozero.games`). Returns
    `evaluation.match_summary`: counts of wins, draws, losses and unfinished games, rates over
    the finished games only (None when none finished).
    """
    if env.id != "backgammon":
        raise ValueError(f"gnubg can only play backgammon, not {env.id}")
    try:
        from envs._src.backgammon.gnubg_bridge import best_move_actions
    except ImportError as err:  # pragma: no cover - depends on the install
        raise ValueError("the gnubg opponent needs the `gnubg` package: "
                         'pip install -e ".[backgammon]"') from err
    n = num_games
    step = jax.jit(jax.vmap(env.step))
    k_init, key = jax.random.split(key)
    states = jax.jit(jax.vmap(env.init))(jax.random.split(k_init, n))
    seat = np.arange(n) % env.num_players
    ret = np.zeros(n)
    queues: list[list[int]] = [[] for _ in range(n)]
    steps = 0
    while steps < max_steps:
        done = np.asarray(states.terminated | states.truncated)
        if done.all():
            break
        player = np.asarray(states.current_player)
        key, ka, ks = jax.random.split(key, 3)
        agent_turn = ~done & (player == seat)
        actions = np.asarray(agent(variables, states, ka)) if agent_turn.any() else np.zeros(n, np.int32)
        actions = actions.copy()
        for g in np.flatnonzero(~done & (player != seat)):
            if not queues[g]:
                single = jax.tree_util.tree_map(lambda x: x[g], states)
                queues[g] = list(best_move_actions(single, plies=plies))
            actions[g] = queues[g].pop(0)
        for g in np.flatnonzero(agent_turn):
            queues[g] = []
        states = step(states, actions, jax.random.split(ks, n))
        ret += np.asarray(states.rewards)[np.arange(n), seat]
        steps += 1
    finished = np.asarray(states.terminated | states.truncated)
    return match_summary(match_counts(finished, ret, steps))
