"""The environment protocol shared by every game of the library.

An environment is a Python object holding only static configuration (board size, ply cap, ...).
Its methods are pure functions over a `State` pytree, so they can be `jit`-ed and `vmap`-ed.
The API follows pgx where pgx has a convention:

    env = envs.make("backgammon")
    state = env.init(key)                    # State pytree
    state = env.step(state, action, key)     # one transition

Every `State` carries the common fields below; a game subclasses it and adds its own.

Optional parts of the protocol (see docs/envs.md):

* chance (`Env.is_stochastic`): states with `is_chance=True` wait for a chance outcome;
  `chance_outcome_probs(state)` gives the distribution over `num_chance_outcomes` outcomes,
  `step_chance(state, outcome)` applies one and `step_deterministic(state, action)` applies a
  decision without resolving the chance event that may follow it. `step(state, action, key)` is
  `step_deterministic` followed by a sampled `step_chance` when the result is a chance state.
* simultaneous moves (`Env.is_simultaneous`): `legal_action_mask` is `[num_players, num_actions]`
  and `step` takes one action per player, `int32[num_players]`.
* N players: `rewards` has one entry per player; `current_player` is in `[0, num_players)`.
* several actions in a row by one player: nothing special, `current_player` simply does not
  change (the search then uses discount +1 instead of -1).
"""

from __future__ import annotations

import abc
from typing import Any, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

Array = jax.Array
PRNGKey = jax.Array

ILLEGAL_ACTION_PENALTY = -1.0


@struct.dataclass
class State:
    """Fields common to every game's state.

    current_player: int32 scalar, the player to act (0-based; for simultaneous games 0).
    observation: the network input from `current_player`'s point of view.
    rewards: float32[num_players], the reward each player got on the last transition.
    terminated: bool, the game is over (a terminal state absorbs every action).
    truncated: bool, the game was cut by a step cap.
    legal_action_mask: bool[num_actions] (or [num_players, num_actions] if simultaneous);
        all True at a terminal state, so that normalising a policy never divides by zero.
    step_count: int32, actions applied so far (chance outcomes not counted).
    """

    current_player: Array
    observation: Array
    rewards: Array
    terminated: Array
    truncated: Array
    legal_action_mask: Array
    step_count: Array


def require_unbatched(state: State, what: str) -> None:
    """Raise `ValueError` unless `state` is one game, not a batch of them.

    Helpers that read a state as Python values (rendering, notation, `check_action`) would
    otherwise fail deep inside with numpy's "truth value of an array is ambiguous". Every
    unbatched state has a scalar `step_count`; a batch has one per game.
    """
    batch = np.shape(state.step_count)
    if batch != ():
        raise ValueError(
            f"{what} takes one unbatched state, got a batch of shape {batch}; "
            "pick one game first, e.g. jax.tree_util.tree_map(lambda x: x[i], states)"
        )


class Env(abc.ABC):
    """Base class of every environment. Subclasses implement `_init`, `_step`, `_observe`."""

    id: str = ""
    num_players: int = 2
    num_actions: int = 0
    is_stochastic: bool = False
    is_simultaneous: bool = False
    num_chance_outcomes: int = 0

    # ------------------------------------------------------------------ core API
    def init(self, key: PRNGKey) -> State:
        """Return an initial state (the key may decide the start, e.g. a maze or first roll)."""
        state = self._init(key)
        return state.replace(observation=self._observe(state, state.current_player))

    def step(self, state: State, action: Array, key: Optional[PRNGKey] = None) -> State:
        """Apply `action` (one per player for simultaneous games).

        * A terminated or truncated state absorbs: it is returned with zero rewards.
        * An illegal action ends the game: the player(s) who chose it get -1, every other
          player +1 (pgx's convention). Use `check_action` at the Python boundary to get a
          `ValueError` instead.
        * Stochastic games need `key` to sample the chance outcome that may follow the action.
        """
        if self.is_stochastic and key is None:
            raise ValueError(f"{self.id}: step() needs a PRNG key to sample chance outcomes")
        action = jnp.asarray(action, dtype=jnp.int32)
        illegal = self._illegal_players(state, action)
        done = state.terminated | state.truncated

        def _absorb(s):
            return s.replace(rewards=jnp.zeros_like(s.rewards))

        def _advance(s):
            s = s.replace(step_count=s.step_count + 1)
            return self._step(s, action, key)

        next_state = jax.lax.cond(done, _absorb, _advance, state)
        any_illegal = jnp.any(illegal) & ~done
        penalty = jnp.where(illegal, ILLEGAL_ACTION_PENALTY, -ILLEGAL_ACTION_PENALTY).astype(
            next_state.rewards.dtype
        )
        next_state = next_state.replace(
            rewards=jnp.where(any_illegal, penalty, next_state.rewards),
            terminated=next_state.terminated | any_illegal,
        )
        return self._finalize(next_state)

    def observe(self, state: State, player_id: Optional[Array] = None) -> Array:
        """The observation of `state` from `player_id`'s point of view (default: to move)."""
        if player_id is None:
            player_id = state.current_player
        return jax.lax.stop_gradient(self._observe(state, player_id))

    # --------------------------------------------------------------- chance API
    def chance_outcome_probs(self, state: State) -> Array:
        """float32[num_chance_outcomes]: the distribution of the pending chance event."""
        raise NotImplementedError(f"{self.id} has no chance events")

    def step_deterministic(self, state: State, action: Array) -> State:
        """Apply a decision; the result may be a chance state (`state.is_chance`)."""
        raise NotImplementedError(f"{self.id} has no chance events")

    def step_chance(self, state: State, outcome: Array) -> State:
        """Resolve the pending chance event with `outcome`; a no-op on a decision state."""
        raise NotImplementedError(f"{self.id} has no chance events")

    # ------------------------------------------------------------- boundary checks
    def check_action(self, state: State, action: Any) -> None:
        """Raise `ValueError` if `action` is illegal in a concrete (unbatched) `state`."""
        require_unbatched(state, f"{self.id}: check_action")
        mask = np.asarray(state.legal_action_mask)
        a = np.asarray(action)
        if self.is_simultaneous:
            if a.shape != (self.num_players,):
                raise ValueError(
                    f"{self.id}: expected one action per player, shape ({self.num_players},), "
                    f"got shape {a.shape}"
                )
            for p in range(self.num_players):
                if not 0 <= int(a[p]) < self.num_actions or not mask[p, int(a[p])]:
                    raise ValueError(f"{self.id}: action {int(a[p])} is illegal for player {p}")
            return
        if a.shape != ():
            raise ValueError(f"{self.id}: expected a scalar action, got shape {a.shape}")
        if not 0 <= int(a) < self.num_actions:
            raise ValueError(f"{self.id}: action {int(a)} out of range [0, {self.num_actions})")
        if bool(state.terminated) or bool(state.truncated):
            raise ValueError(f"{self.id}: the game is over; no action can be applied")
        if not mask[int(a)]:
            raise ValueError(f"{self.id}: action {int(a)} is illegal in this state")

    # --------------------------------------------------------------- subclass API
    @abc.abstractmethod
    def _init(self, key: PRNGKey) -> State: ...

    @abc.abstractmethod
    def _step(self, state: State, action: Array, key: Optional[PRNGKey]) -> State: ...

    @abc.abstractmethod
    def _observe(self, state: State, player_id: Array) -> Array: ...

    @property
    def observation_shape(self) -> tuple[int, ...]:
        state = jax.eval_shape(self.init, jax.random.PRNGKey(0))
        return tuple(state.observation.shape)

    # ------------------------------------------------------------------ helpers
    def _illegal_players(self, state: State, action: Array) -> Array:
        """bool[num_players] (simultaneous) or bool[] : whose action is illegal."""
        mask = state.legal_action_mask
        if self.is_simultaneous:
            in_range = (action >= 0) & (action < self.num_actions)
            legal = jnp.take_along_axis(
                mask, jnp.clip(action, 0, self.num_actions - 1)[:, None], axis=1
            )[:, 0]
            return ~(legal & in_range)
        in_range = (action >= 0) & (action < self.num_actions)
        legal = mask[jnp.clip(action, 0, self.num_actions - 1)] & in_range
        # a scalar flag is broadcast onto the mover in the penalty below
        return jnp.zeros(self.num_players, dtype=jnp.bool_).at[state.current_player].set(~legal)

    def _finalize(self, state: State) -> State:
        """All actions legal at terminal states; observation refreshed."""
        mask = jnp.where(state.terminated, True, state.legal_action_mask)
        state = state.replace(legal_action_mask=mask)
        return state.replace(observation=self._observe(state, state.current_player))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(id={self.id!r})"
