"""What the tree kernel searches: a model of the game (docs/search.md, "The tree kernel").

The kernel never sees an `Env`. It asks a model for the root's evaluation and for transitions:

    model.root(params, root_input)           -> (embedding [B, ...], ModelOutput)
    model.step(params, key, embedding, action) -> (embedding, reward float32[B, P], ModelOutput)

`EnvModel` steps the true environment and evaluates with a network; a learned MuZero model
(dynamics + prediction networks) is another implementation of the same two methods.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from envs.core import Env, State
from turbozero.networks.value_formats import mover_to_seats


class ModelOutput(NamedTuple):
    """The evaluation of a batch of M nodes."""

    legal: jax.Array  # bool[M, A] legal actions (ignored where terminal)
    prior_logits: jax.Array  # float32[M, A] policy logits
    value: jax.Array  # float32[M, P] value per player, seat order (0 where terminal)
    player: jax.Array  # int32[M] player to move
    terminal: jax.Array  # bool[M] the game is over (the node gets no children)
    # float32[M, 3] [P(win), P(draw), P(loss)] for the player to move, from a two-player value
    # head with a draw class (the search averages it at the root); None without one
    wdl: Optional[jax.Array] = None
    # bool[M] the node waits for a chance outcome (models of games with chance events, else
    # None): its `legal` / `prior_logits` are over outcome ids (log-probabilities), its value
    # is the network's at the chance state, and selection picks outcomes by probability
    chance: Optional[jax.Array] = None


@dataclasses.dataclass(frozen=True)
class EnvModel:
    """The true dynamics of a turn-based `env` with a network evaluator.

    evaluator: a `NetworkEvaluator` (its `evaluate` gives the per-seat value vector of any
        value format, e.g. `[v, -v]` for a two-player scalar head, and the win/draw/loss
        probabilities of a two-player WDL head), or any callable
        `(variables, observation) -> (logits [M, A], value [M])` with the value for the player
        to move of a two-player zero-sum game.

    The embedding is the env `State` without its observation (`env.transition` leaves it None),
    so the tree stores no network input per node; `env.observe` computes the input of each
    evaluated node.
    """

    env: Env
    evaluator: Callable[..., tuple[jax.Array, jax.Array]]

    def __post_init__(self) -> None:
        if self.env.is_simultaneous:
            raise ValueError(f"{self.env.id} is a simultaneous-move game: the tree kernel "
                             "searches turn-based games (use turbozero.search.mcgs)")
        if self.env.is_stochastic and self.env.num_chance_outcomes > self.env.num_actions:
            raise ValueError(f"{self.env.id}: {self.env.num_chance_outcomes} chance outcomes do "
                             f"not fit the {self.env.num_actions} action ids the tree's child "
                             "slots hold")
        if self.env.num_players != 2 and not hasattr(self.evaluator, "evaluate"):
            raise ValueError(f"{self.env.id} has {self.env.num_players} players: the evaluator "
                             "must give one value per player (NetworkEvaluator.evaluate)")

    @property
    def num_actions(self) -> int:
        return self.env.num_actions

    @property
    def num_players(self) -> int:
        return self.env.num_players

    @property
    def max_children(self) -> int:
        bound = int(getattr(self.env, "max_legal_actions", self.env.num_actions))
        if self.env.is_stochastic:  # a chance node's children are its outcomes
            bound = max(bound, int(self.env.num_chance_outcomes))
        return bound

    def _evaluate(self, params, state: State, observation=None) -> ModelOutput:
        if observation is None:
            observation = jax.vmap(self.env.observe)(state)
        terminal = state.terminated | state.truncated
        player = state.current_player.astype(jnp.int32)
        wdl = None
        if hasattr(self.evaluator, "evaluate"):
            logits, vec, wdl = self.evaluator.evaluate(
                params, observation, player, self.env.num_players)
        else:
            logits, value = self.evaluator(params, observation)
            vec = mover_to_seats(value, player, 2)
        vec = jnp.where(terminal[:, None], 0.0, vec).astype(jnp.float32)
        legal, chance = state.legal_action_mask, None
        if self.env.is_stochastic:
            chance = state.is_chance & ~terminal
            probs = jax.vmap(self.env.chance_outcome_probs)(state)  # [M, C]
            pad = ((0, 0), (0, self.env.num_actions - probs.shape[-1]))
            outcome_legal = jnp.pad(probs > 0, pad)
            outcome_logits = jnp.pad(jnp.log(jnp.maximum(probs, jnp.finfo(jnp.float32).tiny)),
                                     pad, constant_values=-jnp.inf)
            legal = jnp.where(chance[:, None], outcome_legal, legal)
            logits = jnp.where(chance[:, None], outcome_logits, logits)
        return ModelOutput(legal=legal, prior_logits=logits, value=vec,
                           player=player, terminal=terminal,
                           wdl=None if wdl is None else wdl.astype(jnp.float32), chance=chance)

    def root(self, params, states: State) -> tuple[State, ModelOutput]:
        return states.replace(observation=None), self._evaluate(params, states, states.observation)

    def step(self, params, key, embedding: State, action: jax.Array):
        if not self.env.is_stochastic:
            keys = jax.random.split(key, action.shape[0])
            nxt = jax.vmap(self.env.transition)(embedding, action, keys)
            return nxt, nxt.rewards.astype(jnp.float32), self._evaluate(params, nxt)
        # a decision leads to the state before the chance event (a chance node), an outcome
        # resolves it; both are computed and the parent's kind picks (the observations they
        # compute are unused, so XLA drops them)
        at_chance = embedding.is_chance & ~(embedding.terminated | embedding.truncated)
        decided = jax.vmap(self.env.step_deterministic)(embedding, action)
        rolled = jax.vmap(self.env.step_chance)(embedding, action)
        nxt = jax.tree_util.tree_map(
            lambda r, d: jnp.where(at_chance.reshape((-1,) + (1,) * (r.ndim - 1)), r, d),
            rolled.replace(observation=None), decided.replace(observation=None))
        reward = jnp.where(at_chance[:, None], 0.0, nxt.rewards).astype(jnp.float32)
        return nxt, reward, self._evaluate(params, nxt)
