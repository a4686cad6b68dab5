"""Data types of the training loop: the replayed sample and the train state."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

import jax
from flax import struct
from flax.training import train_state


@struct.dataclass
class Experience:
    """One batch of training samples (leading axis = batch), each datum under the name it has
    from the env to the loss (docs/training.md, "Names"; the 4-way spec's `observation_nn`,
    `policy_weights`, `policy_mask`, `reward`, `cur_player_id` are these five).

    observation: network input of the position.
    policy: float32[B, A] search policy target (visit distribution).
    legal_action_mask: bool[B, A] legal actions of the position.
    returns: float32[B, num_players] each player's return from the position to the end.
    current_player: int32[B] the player to move in the position.
    """

    observation: jax.Array
    policy: jax.Array
    legal_action_mask: jax.Array
    returns: jax.Array
    current_player: jax.Array


class SelfPlayTargets(NamedTuple):
    """What a self-play search hands the collector (`Algorithm.self_play`)."""

    policy: jax.Array  # float32[B, A] (or [B, P, A] per player) policy target
    search_values: jax.Array  # float32[B, P] the search's root value per seat
    # per-position facts of the search kept in the replay as they are (`ReplayBuffer.
    # search_record`, declared by `Algorithm.replay_fields`), e.g. the root WDL; None: nothing
    search_record: Any = None


class TrainState(train_state.TrainState):
    """flax's TrainState plus optional BatchNorm statistics (None for networks without BN)."""

    batch_stats: Optional[Any] = None


def variables_of(train_state: TrainState) -> dict:
    """The network's variables of a train state: its params, and its BatchNorm statistics
    where it has them."""
    v = {"params": train_state.params}
    if train_state.batch_stats is not None:
        v["batch_stats"] = train_state.batch_stats
    return v
