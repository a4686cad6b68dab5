"""A jittable replay buffer: one ring of `capacity` slots per self-play game, and the one writer
every collector calls (`write`; `add` for the position replay).

Layout `[num_envs, capacity, ...]`, so that the buffer can be sharded along the games axis with
the games themselves. Each slot remembers its episode id and the rewards its player had collected
before the position; when an episode ends, every slot of it gets its target: the return from
that position to the end, per player (for games with rewards only at the end, the outcome).
Only slots whose episode has ended are sampled.

What else a slot keeps is the algorithm's to declare (`Algorithm.replay_fields`, the optional
fields below, None in a replay that does not keep them): MuZero keeps the action played, the
search's root value per seat and the write counter (`trajectory_fields`), so that it can read
whole stretches of a game: slot `(e, t + j)` continues slot `(e, t)` when it has the same
episode id and was written `j` writes later (`consecutive`); AlphaZero with a WDL head keeps its
searches' root WDL (`search_record`). A replay written before issue 44 kept the first three in
every replay; such checkpoints restore without them (turbozero.training.migration).
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Optional

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
    # the optional fields (OPTIONAL_FIELDS; None unless the algorithm declares them), kept at
    # their places so that a checkpoint's leaves keep their names and order
    action: Optional[jax.Array]  # [E, T, *policy[:-1]] int32 the action played from the position
    search_values: Optional[jax.Array]  # [E, T, P] float32 the search's root value per seat
    written_at: Optional[jax.Array]  # [E, T] int32 the write counter when the slot was written
    return_before: jax.Array  # [E, T, P] rewards collected before the position
    returns: jax.Array  # [E, T, P] return from the position to the end of its episode
    episode_id: jax.Array  # [E, T] int32
    written: jax.Array  # [E, T] bool
    has_target: jax.Array  # [E, T] bool
    ptr: jax.Array  # int32, next column to write
    num_writes: jax.Array  # int32, columns written so far (the next `written_at`)
    # optional too: what the algorithm keeps of each search beyond the targets
    # (`SelfPlayTargets.search_record`): a pytree of [E, T, ...] arrays, e.g. the root WDL
    # average and soft value of a search with a WDL head (docs/training.md)
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


# the fields a replay keeps only when its algorithm declares them (`Algorithm.replay_fields`)
OPTIONAL_FIELDS = ("action", "search_values", "written_at", "search_record")


def trajectory_fields(num_players: int, action_shape: tuple[int, ...] = ()) -> dict[str, Any]:
    """The optional fields that let an algorithm read a game back in order (`consecutive`), as
    an empty slot holds them: the action played, the search's root value per seat and the write
    counter (-1: never written). MuZero's unroll and n-step targets read them."""
    return {"action": jnp.zeros(action_shape, jnp.int32),
            "search_values": jnp.zeros((num_players,), jnp.float32),
            "written_at": jnp.full((), -1, jnp.int32)}


def init_buffer(
    num_envs: int,
    capacity: int,
    observation: jax.Array,
    policy_shape: tuple[int, ...],
    num_players: int,
    fields: Optional[Mapping[str, Any]] = None,
    form: Any = ObservationPlanes(),
    policy_form: Any = DensePolicy(),
) -> ReplayBuffer:
    """An empty buffer; `observation` is one unbatched example of what `form` stores (for
    shapes and dtypes; the observation itself by default). `fields` (`Algorithm.replay_fields`):
    the optional fields (OPTIONAL_FIELDS) it keeps, each as one empty slot holds it (a pytree of
    unbatched arrays: shape, dtype and value); the others are None. `policy_form` (bound to the
    game) says how the policy targets of shape `policy_shape` are kept."""
    if capacity < 1:
        raise ValueError(f"replay capacity must be >= 1, got {capacity}")
    fields = dict(fields or {})
    unknown = sorted(set(fields) - set(OPTIONAL_FIELDS))
    if unknown:
        raise ValueError(f"a replay has no optional field {unknown[0]!r}; the optional fields: "
                         f"{', '.join(OPTIONAL_FIELDS)}")
    et = (num_envs, capacity)

    def empty(example):
        return jax.tree_util.tree_map(
            lambda x: jnp.broadcast_to(jnp.asarray(x), et + jnp.shape(x)), example)

    target_like = policy_form.encode(jnp.zeros(tuple(policy_shape), jnp.float32),
                                     jnp.zeros(tuple(policy_shape), jnp.bool_))
    return ReplayBuffer(
        observation=jax.tree_util.tree_map(
            lambda x: jnp.zeros(et + jnp.shape(x), jnp.asarray(x).dtype), observation),
        # an empty slot holds the form's encoding of no legal action (LegalPolicy: NO_ACTION ids)
        policy_target=empty(target_like),
        current_player=jnp.zeros(et, jnp.int32),
        return_before=jnp.zeros(et + (num_players,), jnp.float32),
        returns=jnp.zeros(et + (num_players,), jnp.float32),
        episode_id=jnp.full(et, -1, jnp.int32),
        written=jnp.zeros(et, jnp.bool_),
        has_target=jnp.zeros(et, jnp.bool_),
        ptr=jnp.zeros((), jnp.int32),
        num_writes=jnp.zeros((), jnp.int32),
        form=form,
        policy_form=policy_form,
        **{name: None if name not in fields else empty(fields[name])
           for name in OPTIONAL_FIELDS},
    )


def write(buffer: Any, values: Mapping[str, Any], rows: Optional[jax.Array] = None,
          cols: Optional[jax.Array] = None) -> Any:
    """The one replay writer: `buffer` (a replay of [E, T, ...] slot fields with `written`, `ptr`
    and `num_writes`: the position replay, afterstate TD's) with `values[name]` (leading axis M,
    one entry per slot; a pytree for a pytree field) written into its field `name`.

    rows, cols None: the next column (`ptr`) of every game (M = E), one in-place update per
    field, and `ptr` and `num_writes` advance by one (the collectors, a move of every game at a
    time). Else the slots (rows int32[M], cols int32[M]), a row of E (past the last game) a
    padding entry that is dropped, `ptr` and `num_writes` left for the caller to set (the C++
    path, whole games at once). A field the buffer does not keep is a ValueError."""
    for name, value in values.items():
        field = getattr(buffer, name, None)
        if field is None:
            raise ValueError(f"the replay keeps no {name!r} (its algorithm's replay_fields "
                             "declares what it keeps)")
        if jax.tree_util.tree_structure(field) != jax.tree_util.tree_structure(value):
            raise ValueError(f"replay field {name!r}: the value written is "
                             f"{jax.tree_util.tree_structure(value)}, the replay keeps "
                             f"{jax.tree_util.tree_structure(field)}")

    def put(arr, value):
        value = jnp.asarray(value).astype(arr.dtype)
        if rows is None:
            return jax.lax.dynamic_update_index_in_dim(arr, value, buffer.ptr, axis=1)
        return arr.at[rows, cols].set(value, mode="drop")

    new = {name: jax.tree_util.tree_map(put, getattr(buffer, name), value)
           for name, value in values.items()}
    if rows is None:
        new.update(ptr=(buffer.ptr + 1) % buffer.written.shape[1],
                   num_writes=buffer.num_writes + 1)
    return buffer.replace(**new)


class Positions(NamedTuple):
    """Positions a collector hands the position replay (`add`), leading axis M. What the
    replay does not keep is not written; what it keeps must be given (`written_at` aside)."""

    observation: Any  # what the buffer's form stores (`buffer.form.encode(states)`)
    policy: jax.Array  # float32[M, *policy] the policy target
    legal_action_mask: jax.Array  # bool[M, *policy]
    current_player: jax.Array  # int32[M]
    episode_id: jax.Array  # int32[M]
    return_before: jax.Array  # float32[M, P] rewards collected before the position
    # float32[M, P] the return to the end, for games already over (the slot has its target);
    # None: set when the game ends (`finish_episodes`)
    returns: Optional[jax.Array] = None
    action: Optional[jax.Array] = None  # the action played from it
    search_values: Optional[jax.Array] = None  # float32[M, P] the search's root value per seat
    search_record: Any = None  # `SelfPlayTargets.search_record`
    written_at: Optional[jax.Array] = None  # int32[M]; None: the buffer's write counter


def add(buffer: ReplayBuffer, positions: Positions, rows: Optional[jax.Array] = None,
        cols: Optional[jax.Array] = None) -> ReplayBuffer:
    """`positions` written into the position replay by `write` (rows, cols None: the next
    column of every game): the fields every position replay keeps, and the optional ones the
    buffer keeps (a ValueError naming one the positions lack)."""
    p = positions
    m = p.episode_id.shape[0]
    finished = p.returns is not None
    values = {
        "observation": p.observation,
        "policy_target": buffer.policy_form.encode(p.policy, p.legal_action_mask),
        "current_player": p.current_player,
        "return_before": p.return_before,
        "returns": p.returns if finished else jnp.zeros_like(p.return_before),
        "episode_id": p.episode_id,
        "written": jnp.ones((m,), jnp.bool_),
        "has_target": jnp.full((m,), finished, jnp.bool_),
    }
    written_at = (jnp.full((m,), buffer.num_writes, jnp.int32) if p.written_at is None
                  else p.written_at)
    given = {"action": p.action, "search_values": p.search_values,
             "search_record": p.search_record, "written_at": written_at}
    for name, value in given.items():
        if getattr(buffer, name) is None:
            continue  # not declared by the algorithm: not kept
        if value is None:
            raise ValueError(f"the replay keeps {name!r} (declared by the algorithm's "
                             f"replay_fields), and the self-play gave none")
        values[name] = value
    return write(buffer, values, rows, cols)


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
    older lap of the ring). The replay must keep the write counter (`trajectory_fields`)."""
    if buffer.written_at is None:
        raise ValueError("replay.consecutive reads the write counter, which this replay does "
                         "not keep: declare replay.trajectory_fields in Algorithm.replay_fields")
    capacity = buffer.episode_id.shape[1]
    offsets = jnp.arange(length, dtype=jnp.int32)
    cols = (column[:, None] + offsets[None]) % capacity  # [B, length]
    rows = env_index[:, None]
    same_episode = buffer.episode_id[rows, cols] == buffer.episode_id[env_index, column][:, None]
    in_order = buffer.written_at[rows, cols] == (
        buffer.written_at[env_index, column][:, None] + offsets[None])
    valid = buffer.written[rows, cols] & same_episode & in_order
    return cols, valid
