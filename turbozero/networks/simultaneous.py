"""A network for two-player simultaneous games (PyRat): one policy and one value per player."""

from __future__ import annotations

from typing import Optional

import flax.linen as nn
import jax
import jax.numpy as jnp


class TwoPlayerNet(nn.Module):
    """Conv trunk over `[B, H, W, C]` planes (or an MLP over flat input).

    Returns `(policy_logits [B, 2, num_actions], values [B, 2])`; the values are unbounded
    regressions (PyRat: the cheese each player will still collect).

    `gather_planes=(i, j)` names the one-hot input planes that locate player 1 and player 2
    (PyRat: `envs.pyrat.PLAYER_PLANES`). Each player's heads then also read the conv features at
    that player's cell: a move is relative to where the rat stands, and a flat dense layer would
    have to learn that lookup for every cell separately.
    """

    num_actions: int = 5
    num_filters: int = 32
    num_layers: int = 2
    hidden: int = 64
    gather_planes: Optional[tuple[int, int]] = None

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        del train  # no batch statistics
        x = x.astype(jnp.float32)
        inputs = x
        if x.ndim == 4:
            for i in range(self.num_layers):
                x = nn.relu(nn.Conv(self.num_filters, (3, 3), name=f"conv_{i}")(x))
        flat = x.reshape(x.shape[0], -1)
        trunk = nn.relu(nn.Dense(self.hidden, name="trunk")(flat))
        if self.gather_planes is None or inputs.ndim != 4:
            logits = nn.Dense(2 * self.num_actions, name="policy")(trunk)
            logits = logits.reshape(-1, 2, self.num_actions)
            values = nn.Dense(2, name="value")(nn.relu(nn.Dense(self.hidden, name="value_hidden")(trunk)))
            return logits, values
        # per player: [global trunk, conv features at its cell, conv features at the other's]
        at = [jnp.einsum("bhwc,bhw->bc", x, inputs[..., p]) for p in self.gather_planes]
        per_player = jnp.stack([jnp.concatenate([trunk, at[0], at[1]], -1),
                                jnp.concatenate([trunk, at[1], at[0]], -1)], axis=1)
        h = nn.relu(nn.Dense(self.hidden, name="player_hidden")(per_player))  # [B, 2, hidden]
        # separate output weights per player: the two rats move in opposite frames
        logits = jnp.stack([nn.Dense(self.num_actions, name=f"policy_{p}")(h[:, p])
                            for p in range(2)], axis=1)
        values = jnp.concatenate([nn.Dense(1, name=f"value_{p}")(h[:, p]) for p in range(2)], -1)
        return logits, values
