"""Data types of the training loop: the replayed sample and the train state."""

from __future__ import annotations

from typing import Any, Optional

import jax
from flax import struct
from flax.training import train_state


@struct.dataclass
class Experience:
    """One batch of training samples (leading axis = batch), names as in the 4-way spec.

    observation_nn: network input of the position.
    policy_weights: float32[B, A] search policy target (visit distribution).
    policy_mask: bool[B, A] legal actions of the position.
    reward: float32[B, num_players] final outcome of the game for every player.
    cur_player_id: int32[B] the player to move in the position.
    """

    observation_nn: jax.Array
    policy_weights: jax.Array
    policy_mask: jax.Array
    reward: jax.Array
    cur_player_id: jax.Array


class TrainState(train_state.TrainState):
    """flax's TrainState plus optional BatchNorm statistics (None for networks without BN)."""

    batch_stats: Optional[Any] = None
