"""How the replay keeps a position's network input (docs/training.md, "Replay").

`ObservationPlanes()` (the default) stores the observation as the network reads it.
`EnvStates()` stores the env state instead, without its observation and legal mask (the replay
keeps the mask anyway), and computes the observation with `env.observe` when a batch is read.
That trades one `observe` per sampled position for memory: a chess position is 31,232 bytes of
float32 planes but 1,722 bytes of state (measured on the start position, docs/chess.md), so the
replay of a large run holds several times more positions in the same memory.

`for_env(env)` binds a form to the game; the bound form is a static field of the buffer, so
reading a batch needs nothing but the buffer.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import jax

from envs.core import Env, State


@dataclasses.dataclass(frozen=True)
class ObservationPlanes:
    """Keep the observation itself."""

    def for_env(self, env: Env) -> "ObservationPlanes":
        del env
        return self

    def example(self, env: Env, state: State) -> Any:
        """What one position stores (unbatched; for shapes and dtypes)."""
        return env.observe(state)

    def encode(self, states: State) -> Any:
        """What a batch of states stores (their observations must be set)."""
        return states.observation

    def decode(self, stored: Any) -> jax.Array:
        """The observations of stored positions (any leading shape)."""
        return stored


@dataclasses.dataclass(frozen=True)
class EnvStates:
    """Keep the env state without observation and legal mask; observe when read."""

    env: Optional[Env] = None  # set by `for_env`

    def for_env(self, env: Env) -> "EnvStates":
        return dataclasses.replace(self, env=env)

    def example(self, env: Env, state: State) -> Any:
        return self.encode(state)

    def encode(self, states: State) -> Any:
        return states.replace(observation=None, legal_action_mask=None)

    def decode(self, stored: Any) -> jax.Array:
        if self.env is None:
            raise ValueError("EnvStates() must be bound to its env (EnvStates().for_env(env)) "
                             "before the replay is read")
        lead = _lead_shape(stored)
        flat = jax.tree_util.tree_map(lambda x: x.reshape((-1,) + x.shape[len(lead):]), stored)
        obs = jax.vmap(self.env.observe)(flat)
        return obs.reshape(lead + obs.shape[1:])


def _lead_shape(stored: State) -> tuple[int, ...]:
    """The batch shape of stored states: the leading axes of `step_count` (a scalar per state)."""
    return tuple(stored.step_count.shape)


def check_form(form: Any) -> None:
    if not isinstance(form, (ObservationPlanes, EnvStates)):
        raise ValueError("replay_observations must be ObservationPlanes() or EnvStates(), got "
                         f"{form!r}")
