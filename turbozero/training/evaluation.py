"""Evaluation: the agent against a baseline over a batch of games, seats alternating."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from envs.core import Env, State

# policy(variables, states[B], key) -> actions [B]
PolicyFn = Callable[[Any, State, jax.Array], jax.Array]


def play_match(
    env: Env,
    agent: PolicyFn,
    opponent: PolicyFn,
    agent_variables: Any,
    opponent_variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
) -> dict[str, jax.Array]:
    """Play `num_games` games (agent is player `g % num_players` in game g) for turn-based envs.

    Returns the agent's mean return, win/draw/loss rates and how many games ended in time.
    Both policies are evaluated on every game at every step and the mover's choice is kept
    (static shapes); games still running after `max_steps` count as unfinished.
    """
    if env.is_simultaneous:
        raise ValueError("play_match is for turn-based games; use the game's own evaluation")
    k_init, k_loop = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, num_games))
    agent_seat = jnp.arange(num_games, dtype=jnp.int32) % env.num_players
    returns0 = jnp.zeros((num_games,), jnp.float32)

    def cond(carry):
        s, _, step, _ = carry
        return (step < max_steps) & ~jnp.all(s.terminated | s.truncated)

    def body(carry):
        s, ret, step, k = carry
        k, ka, ko, ks = jax.random.split(k, 4)
        a_agent = agent(agent_variables, s, ka)
        a_opp = opponent(opponent_variables, s, ko)
        action = jnp.where(s.current_player == agent_seat, a_agent, a_opp)
        nxt = jax.vmap(env.step)(s, action, jax.random.split(ks, num_games))
        r = jnp.take_along_axis(nxt.rewards, agent_seat[:, None], axis=1)[:, 0]
        return nxt, ret + r, step + 1, k

    s, ret, steps, _ = jax.lax.while_loop(cond, body, (states, returns0, jnp.int32(0), k_loop))
    finished = s.terminated | s.truncated
    n_done = jnp.maximum(finished.sum(), 1)
    return {
        "mean_return": jnp.where(finished, ret, 0.0).sum() / n_done,
        "win_rate": (finished & (ret > 0)).sum() / n_done,
        "draw_rate": (finished & (ret == 0)).sum() / n_done,
        "loss_rate": (finished & (ret < 0)).sum() / n_done,
        "games_finished": finished.sum(),
        "steps": steps,
    }


def play_match_simultaneous(
    env: Env,
    agent: PolicyFn,
    opponent: PolicyFn,
    agent_variables: Any,
    opponent_variables: Any,
    key: jax.Array,
    num_games: int,
    max_steps: int,
) -> dict[str, jax.Array]:
    """`play_match` for two-player simultaneous games: both policies give joint actions
    `[B, 2]`; the agent's entry is kept for its seat (`g % 2`), the opponent's for the other."""
    if not env.is_simultaneous or env.num_players != 2:
        raise ValueError("play_match_simultaneous is for two-player simultaneous games")
    k_init, k_loop = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, num_games))
    agent_seat = jnp.arange(num_games, dtype=jnp.int32) % 2
    seat_is_agent = jnp.arange(2)[None, :] == agent_seat[:, None]  # [B, 2]

    def cond(carry):
        s, _, step, _ = carry
        return (step < max_steps) & ~jnp.all(s.terminated | s.truncated)

    def body(carry):
        s, ret, step, k = carry
        k, ka, ko, ks = jax.random.split(k, 4)
        action = jnp.where(seat_is_agent, agent(agent_variables, s, ka),
                           opponent(opponent_variables, s, ko))
        nxt = jax.vmap(env.step)(s, action, jax.random.split(ks, num_games))
        # score difference agent - opponent
        diff = jnp.where(agent_seat == 0, nxt.rewards[:, 0] - nxt.rewards[:, 1],
                         nxt.rewards[:, 1] - nxt.rewards[:, 0])
        return nxt, ret + diff, step + 1, k

    s, ret, steps, _ = jax.lax.while_loop(
        cond, body, (states, jnp.zeros((num_games,), jnp.float32), jnp.int32(0), k_loop))
    finished = s.terminated | s.truncated
    n_done = jnp.maximum(finished.sum(), 1)
    return {
        "mean_return": jnp.where(finished, ret, 0.0).sum() / n_done,  # score margin
        "win_rate": (finished & (ret > 0)).sum() / n_done,
        "draw_rate": (finished & (ret == 0)).sum() / n_done,
        "loss_rate": (finished & (ret < 0)).sum() / n_done,
        "games_finished": finished.sum(),
        "steps": steps,
    }
