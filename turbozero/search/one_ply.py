"""A search one move deep: every legal move is made and the mover plays the one whose result the
network values best. The library's 1-ply greedy player, and a search config of its own
(`OnePlyConfig`) so that an evaluation can play it as the agent.

Why an evaluation would: it shows the value head alone. A tree search strong enough to win
without the network hides what the value learned, and the policy head alone (one simulation)
shows the policy only. One ply plays the value head's choices and takes every win in one
(docs/learning.md has a game where only this evaluation shows the value learning).

Values are the search's (docs/search.md): the network's value for the player to move in the
result, negated when the opponent moves there; a finished game is valued by its exact reward;
stochastic games value the afterstate (`env.step_deterministic`, before the chance event) as
the search does. Only legal moves are made, padded to `env.max_legal_actions`, not every action
id (docs/benchmarks.md, "One ply: legal moves only").
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, Optional

import jax
import jax.numpy as jnp

from envs.core import Env, State
from envs.sampling import legal_candidates
from turbozero.search.api import (
    NetworkEvaluator, SearchResult, register_family, two_player_values)


@dataclasses.dataclass(frozen=True)
class OnePlyConfig:
    """Search one move deep with the network's value (module docstring), the `one-ply` family.
    No settings: every legal move is looked at once, and ties go to the lowest action index."""

    family: ClassVar[str] = "one-ply"

    def for_evaluation(self) -> "OnePlyConfig":
        """Itself: the 1-ply search is deterministic (its best move, lowest index on ties)."""
        return self

    def tree_shapes(self, env: Env, states: State, with_wdl: bool = False) -> Any:
        """What a search of the batch `states` holds in place of a tree: the states of every
        legal move of each, with their observations (B x `env.max_legal_actions`), as shape
        structs (`jax.eval_shape` of the search's own step; the memory bound's count)."""
        del with_wdl
        _check_env(env)
        return jax.eval_shape(lambda st: _results(env, st, env.max_legal_actions), states)

    def tree_settings(self, batch: str, env: Env) -> str:
        """The settings the memory bound names for the results (`batch`: the games)."""
        return f"{batch} x the game's max_legal_actions={env.max_legal_actions} moves"


def _check_env(env: Env) -> None:
    if env.is_simultaneous:
        raise ValueError(f"{env.id} is a simultaneous-move game: a 1-ply search needs one "
                         "mover per state (a simultaneous game registers its own greedy player)")


def _results(env: Env, states: State, width: int) -> tuple[Any, State]:
    """The legal moves of each state, padded to `width` ([B, K]), and the states they make
    ([B, K], observed)."""
    cand = jax.vmap(lambda m: legal_candidates(m, width))(states.legal_action_mask)

    def result(state, action):
        if env.is_stochastic:
            nxt = env.step_deterministic(state, action)
            return nxt.replace(observation=env.observe(nxt))
        return env.step(state, action, jax.random.PRNGKey(0))

    return cand, jax.vmap(lambda s, acts: jax.vmap(lambda a: result(s, a))(acts))(
        states, cand.actions)


def one_ply_search(env: Env, evaluator: NetworkEvaluator, variables: Any, states: State,
                   width: Optional[int] = None) -> SearchResult:
    """Every legal move of each state of a batch (leading axis B), valued for the mover.

    Returns a `SearchResult`: the best move, a one-hot policy on it and its value as the root
    value. One network call values all B * `width` results; `width` (default
    `env.max_legal_actions`, the least that holds every legal move) is a static count."""
    _check_env(env)
    width = env.max_legal_actions if width is None else width
    if width < env.max_legal_actions:
        raise ValueError(f"one_ply_search width {width} is below {env.id}'s "
                         f"max_legal_actions {env.max_legal_actions}: legal moves would be lost")
    cand, results = _results(env, states, width)  # [B, K]
    mover = states.current_player  # [B]
    flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[2:]), results)
    _, value = evaluator(variables, flat.observation)
    value = value.reshape(cand.actions.shape)  # [B, K] for the player to move in each result
    mover_k = jnp.broadcast_to(mover[:, None], value.shape)
    reward = jnp.take_along_axis(results.rewards, mover_k[..., None], axis=2)[..., 0]
    same = results.current_player == mover_k
    done = results.terminated | results.truncated
    total = jnp.where(done, reward, reward + jnp.where(same, value, -value))  # [B, K]
    total = jnp.where(cand.valid, total, -jnp.inf)
    best = jnp.argmax(total, axis=-1)  # [B]; candidates ascend, so ties take the lowest action
    action = jnp.take_along_axis(cand.actions, best[:, None], axis=1)[:, 0]
    policy = jax.nn.one_hot(action, env.num_actions, dtype=jnp.float32)
    root_value = jnp.take_along_axis(total, best[:, None], axis=1)[:, 0]
    return SearchResult(action=action, policy=policy, root_value=root_value,
                        root_values=two_player_values(root_value, mover, env.num_players))


def greedy_actions(env: Env, evaluator: NetworkEvaluator, variables: Any,
                   states: State) -> jax.Array:
    """int32[B] the 1-ply greedy baseline's moves: `one_ply_search`'s."""
    return one_ply_search(env, evaluator, variables, states).action


def _run(env, evaluator, variables, states, key, config, risk_beta=None) -> SearchResult:
    del key, config, risk_beta  # deterministic, no settings, no risk term
    return one_ply_search(env, evaluator, variables, states)


register_family("one-ply", OnePlyConfig, _run)

__all__ = ["OnePlyConfig", "greedy_actions", "one_ply_search"]
