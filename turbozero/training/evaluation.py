"""Evaluation: the agent against a baseline over a batch of games, seats alternating."""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp

from envs.core import Env, State

# policy(variables, states[B], key) -> actions [B] (turn-based) or [B, P] (simultaneous)
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
    """Play `num_games` games; the agent is player `g % num_players` in game g.

    Both policies are evaluated on every game at every step and the agent's choice is kept where
    it acts (turn-based: when it is to move; simultaneous: its own entry of the joint action), so
    shapes stay static. The agent's return is its own reward for turn-based games and its score
    margin over the opponent for simultaneous two-player games. Games still running after
    `max_steps` count as unfinished and are left out of the rates.
    """
    if env.is_simultaneous and env.num_players != 2:
        raise ValueError("simultaneous evaluation supports two players")
    k_init, k_loop = jax.random.split(key)
    states = jax.vmap(env.init)(jax.random.split(k_init, num_games))
    seat = jnp.arange(num_games, dtype=jnp.int32) % env.num_players
    games = jnp.arange(num_games)

    def choose(s, a_agent, a_opp):
        if env.is_simultaneous:
            return jnp.where(jnp.arange(2)[None, :] == seat[:, None], a_agent, a_opp)
        return jnp.where(s.current_player == seat, a_agent, a_opp)

    def agent_return(rewards):
        own = rewards[games, seat]
        return own - rewards[games, 1 - seat] if env.is_simultaneous else own

    def cond(carry):
        s, _, step, _ = carry
        return (step < max_steps) & ~jnp.all(s.terminated | s.truncated)

    def body(carry):
        s, ret, step, k = carry
        k, ka, ko, ks = jax.random.split(k, 4)
        action = choose(s, agent(agent_variables, s, ka), opponent(opponent_variables, s, ko))
        nxt = jax.vmap(env.step)(s, action, jax.random.split(ks, num_games))
        return nxt, ret + agent_return(nxt.rewards), step + 1, k

    init = (states, jnp.zeros((num_games,), jnp.float32), jnp.int32(0), k_loop)
    s, ret, steps, _ = jax.lax.while_loop(cond, body, init)
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
