"""A jittable replay buffer: one ring of `capacity` slots per self-play game.

Layout `[num_envs, capacity, ...]`, so that the buffer can be sharded along the games axis with
the games themselves. Each slot remembers its episode id and the rewards its player had collected
before the position; when an episode ends, every slot of it gets its target: the return from
that position to the end, per player (for games with rewards only at the end, the outcome).
Only slots whose episode has ended are sampled.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from turbozero.training.types import Experience


@struct.dataclass
class ReplayBuffer:
    observation: jax.Array  # [E, T, *obs]
    policy: jax.Array  # [E, T, *policy] search policy target
    legal_action_mask: jax.Array  # [E, T, *policy] bool
    current_player: jax.Array  # [E, T] int32
    return_before: jax.Array  # [E, T, P] rewards collected before the position
    returns: jax.Array  # [E, T, P] return from the position to the end of its episode
    episode_id: jax.Array  # [E, T] int32
    written: jax.Array  # [E, T] bool
    has_target: jax.Array  # [E, T] bool
    ptr: jax.Array  # int32, next column to write


def init_buffer(
    num_envs: int,
    capacity: int,
    observation: jax.Array,
    policy_shape: tuple[int, ...],
    num_players: int,
) -> ReplayBuffer:
    """An empty buffer; `observation` is one unbatched example (for shape and dtype)."""
    if capacity < 1:
        raise ValueError(f"replay capacity must be >= 1, got {capacity}")
    et = (num_envs, capacity)
    return ReplayBuffer(
        observation=jnp.zeros(et + observation.shape, observation.dtype),
        policy=jnp.zeros(et + tuple(policy_shape), jnp.float32),
        legal_action_mask=jnp.zeros(et + tuple(policy_shape), jnp.bool_),
        current_player=jnp.zeros(et, jnp.int32),
        return_before=jnp.zeros(et + (num_players,), jnp.float32),
        returns=jnp.zeros(et + (num_players,), jnp.float32),
        episode_id=jnp.full(et, -1, jnp.int32),
        written=jnp.zeros(et, jnp.bool_),
        has_target=jnp.zeros(et, jnp.bool_),
        ptr=jnp.zeros((), jnp.int32),
    )


def add(
    buffer: ReplayBuffer,
    observation: jax.Array,
    policy: jax.Array,
    legal_action_mask: jax.Array,
    current_player: jax.Array,
    return_before: jax.Array,
    episode_id: jax.Array,
) -> ReplayBuffer:
    """Write one position per game (leading axis E) into the current column."""
    col = buffer.ptr

    def put(arr, value):
        return jax.lax.dynamic_update_index_in_dim(arr, value.astype(arr.dtype), col, axis=1)

    return buffer.replace(
        observation=put(buffer.observation, observation),
        policy=put(buffer.policy, policy),
        legal_action_mask=put(buffer.legal_action_mask, legal_action_mask),
        current_player=put(buffer.current_player, current_player),
        return_before=put(buffer.return_before, return_before),
        returns=put(buffer.returns, jnp.zeros_like(return_before)),
        episode_id=put(buffer.episode_id, episode_id),
        written=put(buffer.written, jnp.ones_like(episode_id, jnp.bool_)),
        has_target=put(buffer.has_target, jnp.zeros_like(episode_id, jnp.bool_)),
        ptr=(col + 1) % buffer.episode_id.shape[1],
    )


def finish_episodes(
    buffer: ReplayBuffer, done: jax.Array, episode_id: jax.Array, episode_return: jax.Array
) -> ReplayBuffer:
    """For every game with `done`, set the targets of all slots of its episode."""
    match = buffer.written & done[:, None] & (buffer.episode_id == episode_id[:, None])
    returns = episode_return[:, None, :] - buffer.return_before
    return buffer.replace(
        returns=jnp.where(match[..., None], returns, buffer.returns),
        has_target=buffer.has_target | match,
    )


def num_samples(buffer: ReplayBuffer) -> jax.Array:
    """How many slots can be sampled (their episode has ended)."""
    return jnp.sum(buffer.has_target)


def sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Experience:
    """Uniform sample with replacement among the slots that have a target.

    With no such slot yet, the sample is uniform over all slots (the caller should not train
    before `num_samples(buffer) > 0`; the trainer checks this).
    """
    flat_ok = buffer.has_target.reshape(-1)
    logits = jnp.where(flat_ok, 0.0, -jnp.inf)
    logits = jnp.where(jnp.any(flat_ok), logits, jnp.zeros_like(logits))
    idx = jax.random.categorical(key, logits, shape=(batch_size,))

    def take(arr: Any) -> jax.Array:
        flat = arr.reshape((-1,) + arr.shape[2:])
        return flat[idx]

    return Experience(
        observation=take(buffer.observation),
        policy=take(buffer.policy),
        legal_action_mask=take(buffer.legal_action_mask),
        returns=take(buffer.returns),
        current_player=take(buffer.current_player),
    )
