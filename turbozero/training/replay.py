"""A jittable replay buffer: one ring of `capacity` slots per self-play game.

Layout `[num_envs, capacity, ...]`, so that the buffer can be sharded along the games axis with
the games themselves. Each slot remembers its episode id and the rewards its player had collected
before the position; when an episode ends, every slot of it gets its target: the return from
that position to the end, per player (for games with rewards only at the end, the outcome).
Only slots whose episode has ended are sampled.

Each slot also keeps the action played from it, the search's root value per seat and the write
counter at which it was written, so that an algorithm can read whole stretches of a game: slot
`(e, t + j)` continues slot `(e, t)` when it has the same episode id and was written `j` writes
later (`consecutive`). MuZero's unroll and n-step targets are built that way
(`turbozero.training.muzero`).
"""

from __future__ import annotations

from typing import Any, Optional

import jax
import jax.numpy as jnp
from flax import struct

from turbozero.training.replay_sampling import UniformSampling
from turbozero.training.stored_observations import ObservationPlanes
from turbozero.training.stored_policies import DensePolicy
from turbozero.training.types import Experience


@struct.dataclass
class ReplayBuffer:
    observation: Any  # [E, T, *obs], or the stored form's pytree of [E, T, ...] (`form`)
    # the search policy target and legal mask in the stored form's pytree of [E, T, ...]
    # arrays (`policy_form`; dense: float32 and bool [E, T, *policy]); `policy_targets()` reads
    policy_target: Any
    current_player: jax.Array  # [E, T] int32
    action: jax.Array  # [E, T, *policy[:-1]] int32 the action played from the position
    search_values: jax.Array  # [E, T, P] float32 the search's root value per seat (0 if none)
    written_at: jax.Array  # [E, T] int32 the write counter when the slot was written
    return_before: jax.Array  # [E, T, P] rewards collected before the position
    returns: jax.Array  # [E, T, P] return from the position to the end of its episode
    episode_id: jax.Array  # [E, T] int32
    written: jax.Array  # [E, T] bool
    has_target: jax.Array  # [E, T] bool
    ptr: jax.Array  # int32, next column to write
    num_writes: jax.Array  # int32, columns written so far (the next `written_at`)
    # what the algorithm keeps of each search beyond the targets (`SelfPlayTargets.
    # search_record`): a pytree of [E, T, ...] arrays, e.g. the root WDL average and soft value
    # of a chess search (docs/chess.md, "Stored per move"); None for algorithms that keep nothing
    search_record: Any = None
    # how `observation` holds the network input (turbozero.training.stored_observations):
    # static, bound to the game; `observations()` reads it back as the network's input
    form: Any = struct.field(pytree_node=False, default=ObservationPlanes())
    # how `policy_target` holds the policy target and legal mask
    # (turbozero.training.stored_policies): static, bound to the game
    policy_form: Any = struct.field(pytree_node=False, default=DensePolicy())
    # how training batches are drawn (turbozero.training.replay_sampling,
    # `TrainConfig.replay_sampling`): static; `sample_slots` asks it
    sampling: Any = struct.field(pytree_node=False, default=UniformSampling())


def init_buffer(
    num_envs: int,
    capacity: int,
    observation: jax.Array,
    policy_shape: tuple[int, ...],
    num_players: int,
    search_record: Any = None,
    form: Any = ObservationPlanes(),
    policy_form: Any = DensePolicy(),
) -> ReplayBuffer:
    """An empty buffer; `observation` is one unbatched example of what `form` stores (for
    shapes and dtypes; the observation itself by default), and so is each leaf of
    `search_record` (None: no record is kept). `policy_form` (bound to the game) says how the
    policy targets of shape `policy_shape` are kept."""
    if capacity < 1:
        raise ValueError(f"replay capacity must be >= 1, got {capacity}")
    et = (num_envs, capacity)
    target_like = policy_form.encode(jnp.zeros(tuple(policy_shape), jnp.float32),
                                     jnp.zeros(tuple(policy_shape), jnp.bool_))
    return ReplayBuffer(
        observation=jax.tree_util.tree_map(
            lambda x: jnp.zeros(et + jnp.shape(x), jnp.asarray(x).dtype), observation),
        # an empty slot holds the form's encoding of no legal action (LegalPolicy: NO_ACTION ids)
        policy_target=jax.tree_util.tree_map(
            lambda x: jnp.broadcast_to(x, et + x.shape), target_like),
        current_player=jnp.zeros(et, jnp.int32),
        action=jnp.zeros(et + tuple(policy_shape)[:-1], jnp.int32),
        search_values=jnp.zeros(et + (num_players,), jnp.float32),
        written_at=jnp.full(et, -1, jnp.int32),
        return_before=jnp.zeros(et + (num_players,), jnp.float32),
        returns=jnp.zeros(et + (num_players,), jnp.float32),
        episode_id=jnp.full(et, -1, jnp.int32),
        written=jnp.zeros(et, jnp.bool_),
        has_target=jnp.zeros(et, jnp.bool_),
        ptr=jnp.zeros((), jnp.int32),
        num_writes=jnp.zeros((), jnp.int32),
        search_record=jax.tree_util.tree_map(
            lambda x: jnp.zeros(et + jnp.shape(x), jnp.asarray(x).dtype), search_record),
        form=form,
        policy_form=policy_form,
    )


def add(
    buffer: ReplayBuffer,
    observation: jax.Array,
    policy: jax.Array,
    legal_action_mask: jax.Array,
    current_player: jax.Array,
    return_before: jax.Array,
    episode_id: jax.Array,
    action: Optional[jax.Array] = None,
    search_values: Optional[jax.Array] = None,
    search_record: Any = None,
) -> ReplayBuffer:
    """Write one position per game (leading axis E) into the current column; `observation`
    is what the buffer's form stores (`buffer.form.encode(states)`; `action` and
    `search_values` default to zeros). `search_record` must match the buffer's record: both
    None, or the same pytree with a leading axis E."""
    col = buffer.ptr
    if (search_record is None) != (buffer.search_record is None):
        raise ValueError("the search record must match the replay's: the buffer keeps "
                         f"{'none' if buffer.search_record is None else 'one'}, the search "
                         f"gave {'none' if search_record is None else 'one'} "
                         "(Algorithm.init_replay declares it)")

    def put(arr, value):
        return jax.lax.dynamic_update_index_in_dim(arr, value.astype(arr.dtype), col, axis=1)

    return buffer.replace(
        observation=jax.tree_util.tree_map(put, buffer.observation, observation),
        policy_target=jax.tree_util.tree_map(
            put, buffer.policy_target, buffer.policy_form.encode(policy, legal_action_mask)),
        current_player=put(buffer.current_player, current_player),
        action=put(buffer.action, jnp.zeros(buffer.action.shape[:1] + buffer.action.shape[2:],
                                             jnp.int32) if action is None else action),
        search_values=put(buffer.search_values, jnp.zeros_like(return_before)
                          if search_values is None else search_values),
        written_at=put(buffer.written_at, jnp.full_like(episode_id, buffer.num_writes)),
        return_before=put(buffer.return_before, return_before),
        returns=put(buffer.returns, jnp.zeros_like(return_before)),
        episode_id=put(buffer.episode_id, episode_id),
        written=put(buffer.written, jnp.ones_like(episode_id, jnp.bool_)),
        has_target=put(buffer.has_target, jnp.zeros_like(episode_id, jnp.bool_)),
        ptr=(col + 1) % buffer.episode_id.shape[1],
        num_writes=buffer.num_writes + 1,
        search_record=jax.tree_util.tree_map(put, buffer.search_record, search_record),
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


def sample_slots(buffer: ReplayBuffer, key: jax.Array, batch_size: int
                 ) -> tuple[jax.Array, jax.Array]:
    """(env_index int32[B], column int32[B]): a sample with replacement among the slots that
    have a target, drawn as the buffer's `sampling` says (uniform by default;
    turbozero.training.replay_sampling).

    With no such slot yet, the sample is uniform over all slots (the caller should not train
    before `num_samples(buffer) > 0`; the trainer checks this).
    """
    return buffer.sampling.slots(buffer, key, batch_size)


def sample(buffer: ReplayBuffer, key: jax.Array, batch_size: int) -> Experience:
    """A sample with replacement among the slots that have a target (`sample_slots`)."""
    rows, cols = sample_slots(buffer, key, batch_size)

    def take(arr: Any) -> jax.Array:
        return arr[rows, cols]

    policy, legal_action_mask = policy_targets(buffer, rows, cols)
    return Experience(
        observation=observations(buffer, rows, cols),
        policy=policy,
        legal_action_mask=legal_action_mask,
        returns=take(buffer.returns),
        current_player=take(buffer.current_player),
    )


def observations(buffer: ReplayBuffer, rows: jax.Array, cols: jax.Array) -> jax.Array:
    """The network inputs of slots `(rows, cols)` (int32 arrays of one shape S): [*S, *obs],
    decoded from the buffer's stored form."""
    stored = jax.tree_util.tree_map(lambda x: x[rows, cols], buffer.observation)
    return buffer.form.decode(stored)


def policy_targets(buffer: ReplayBuffer, rows: jax.Array, cols: jax.Array
                   ) -> tuple[jax.Array, jax.Array]:
    """(policy float32[*S, *policy], legal_action_mask bool[*S, *policy]) of slots
    `(rows, cols)` (int32 arrays of one shape S), decoded from the buffer's policy form."""
    stored = jax.tree_util.tree_map(lambda x: x[rows, cols], buffer.policy_target)
    return buffer.policy_form.decode(stored)


def consecutive(buffer: ReplayBuffer, env_index: jax.Array, column: jax.Array,
                length: int) -> tuple[jax.Array, jax.Array]:
    """The `length` slots that follow slot `(env_index, column)` in its own game.

    env_index, column: int32[B]. Returns (columns int32[B, length] = column + 0..length-1 modulo
    the capacity, valid bool[B, length]): entry j is valid when that slot holds the position
    j moves after the first one, in the same episode (not a later episode of the game, not an
    older lap of the ring)."""
    capacity = buffer.episode_id.shape[1]
    offsets = jnp.arange(length, dtype=jnp.int32)
    cols = (column[:, None] + offsets[None]) % capacity  # [B, length]
    rows = env_index[:, None]
    same_episode = buffer.episode_id[rows, cols] == buffer.episode_id[env_index, column][:, None]
    in_order = buffer.written_at[rows, cols] == (
        buffer.written_at[env_index, column][:, None] + offsets[None])
    valid = buffer.written[rows, cols] & same_episode & in_order
    return cols, valid
