"""A network for two-player simultaneous games (PyRat): one policy and one value per player."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp


class TwoPlayerNet(nn.Module):
    """Conv trunk over `[B, H, W, C]` planes (or an MLP over flat input).

    Returns `(policy_logits [B, 2, num_actions], values [B, 2])`; the values are unbounded
    regressions (PyRat: the cheese each player will still collect).
    """

    num_actions: int = 5
    num_filters: int = 32
    num_layers: int = 2
    hidden: int = 64

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        del train  # no batch statistics
        x = x.astype(jnp.float32)
        if x.ndim == 4:
            for i in range(self.num_layers):
                x = nn.relu(nn.Conv(self.num_filters, (3, 3), name=f"conv_{i}")(x))
        x = x.reshape(x.shape[0], -1)
        x = nn.relu(nn.Dense(self.hidden, name="trunk")(x))
        logits = nn.Dense(2 * self.num_actions, name="policy")(x).reshape(-1, 2, self.num_actions)
        values = nn.Dense(2, name="value")(nn.relu(nn.Dense(self.hidden, name="value_hidden")(x)))
        return logits, values
