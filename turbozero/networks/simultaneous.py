"""A network for two-player simultaneous games (PyRat): one policy and one value per player."""

from __future__ import annotations

from typing import Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from turbozero.validation import check_int


class TwoPlayerNet(nn.Module):
    """Conv trunk over `[B, H, W, C]` planes (or an MLP over flat input).

    Returns `(policy_logits [B, 2, num_actions], values [B, 2])`; the values are unbounded
    regressions (PyRat: the cheese each player will still collect).

    `gather_planes=(i, j)` names the one-hot input planes that locate player 1 and player 2
    (PyRat: `envs.pyrat.PLAYER_PLANES`). Each player's heads then also read the conv features at
    that player's cell: a move is relative to where the rat stands, and a flat dense layer would
    have to learn that lookup for every cell separately.

    `opponent_view=(channel_permutation, action_permutation)` says that player 2 sees the board
    rotated by 180 degrees with the channels permuted (PyRat: `env.opponent_view`). The network
    then has ONE set of weights for "me": player 1's outputs come from the input as given, player
    2's from its own view, with its actions mapped back (`logits[action_permutation]`). Both
    players' experience trains the same weights, and neither player is learnt worse than the
    other.
    """

    num_actions: int = 5
    num_filters: int = 32
    num_layers: int = 2
    hidden: int = 64
    gather_planes: Optional[tuple[int, int]] = None
    opponent_view: Optional[tuple[tuple[int, ...], tuple[int, ...]]] = None

    def __post_init__(self) -> None:
        check_int("TwoPlayerNet: num_actions", self.num_actions, minimum=1)
        check_int("TwoPlayerNet: num_filters", self.num_filters, minimum=1)
        check_int("TwoPlayerNet: num_layers", self.num_layers, minimum=0)
        check_int("TwoPlayerNet: hidden", self.hidden, minimum=1)
        super().__post_init__()

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        del train  # no batch statistics
        x = x.astype(jnp.float32)
        if self.opponent_view is not None and x.ndim == 4:
            channels, actions = (jnp.asarray(p) for p in self.opponent_view)
            view2 = x[:, ::-1, ::-1, :][..., channels]
            b = x.shape[0]
            logits, values = self._heads(jnp.concatenate([x, view2]), players=1)
            logits2 = logits[b:, 0][:, actions]
            return (jnp.stack([logits[:b, 0], logits2], axis=1),
                    jnp.stack([values[:b, 0], values[b:, 0]], axis=1))
        return self._heads(x, players=2)

    def _heads(self, x: jax.Array, players: int) -> tuple[jax.Array, jax.Array]:
        """Outputs for the first `players` players of the view `x`: `([B, players, A], [B, players])`."""
        inputs = x
        if x.ndim == 4:
            for i in range(self.num_layers):
                x = nn.relu(nn.Conv(self.num_filters, (3, 3), name=f"conv_{i}")(x))
        flat = x.reshape(x.shape[0], -1)
        trunk = nn.relu(nn.Dense(self.hidden, name="trunk")(flat))
        if self.gather_planes is None or inputs.ndim != 4:
            logits = nn.Dense(players * self.num_actions, name="policy")(trunk)
            logits = logits.reshape(-1, players, self.num_actions)
            values = nn.Dense(players, name="value")(
                nn.relu(nn.Dense(self.hidden, name="value_hidden")(trunk)))
            return logits, values
        # per player: [global trunk, conv features at its cell, conv features at the other's]
        at = [jnp.einsum("bhwc,bhw->bc", x, inputs[..., p]) for p in self.gather_planes]
        per_player = jnp.stack([jnp.concatenate([trunk, at[p], at[1 - p]], -1)
                                for p in range(players)], axis=1)
        h = nn.relu(nn.Dense(self.hidden, name="player_hidden")(per_player))  # [B, players, hidden]
        # separate output weights per player when both come from one view: the two rats move
        # in opposite frames
        logits = jnp.stack([nn.Dense(self.num_actions, name=f"policy_{p}")(h[:, p])
                            for p in range(players)], axis=1)
        values = jnp.concatenate([nn.Dense(1, name=f"value_{p}")(h[:, p])
                                  for p in range(players)], -1)
        return logits, values
