"""A multi-layer perceptron with policy and value heads (flat observations: backgammon)."""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from turbozero.networks.heads import ValueHead, check_value_format
from turbozero.networks.value_formats import ScalarValue, ValueFormat
from turbozero.validation import check_int


class MLPNet(nn.Module):
    """Trunk of Dense+LayerNorm+ReLU layers; returns `(policy_logits, value_out)`."""

    num_actions: int
    value_format: ValueFormat = ScalarValue()
    hidden_sizes: Sequence[int] = (128, 128)

    def __post_init__(self) -> None:
        # (128, -5), 0 or "64" reached flax and failed there (or read "64" as 6 and 4)
        check_int("MLPNet: num_actions", self.num_actions, minimum=1)
        sizes = self.hidden_sizes
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (tuple, list)):
            raise ValueError(f"MLPNet: hidden_sizes must be a tuple of layer widths, e.g. "
                             f"(64, 64), got {sizes!r}")
        for width in sizes:
            check_int(f"MLPNet: hidden_sizes entry (of {tuple(sizes)!r})", width, minimum=1)
        super().__post_init__()

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        check_value_format(self.value_format)
        del train  # no batch statistics in this network
        x = x.reshape(x.shape[0], -1).astype(jnp.float32)
        for i, width in enumerate(self.hidden_sizes):
            x = nn.Dense(width, name=f"dense_{i}")(x)
            x = nn.LayerNorm(name=f"norm_{i}")(x)
            x = nn.relu(x)
        policy_logits = nn.Dense(self.num_actions, name="policy")(x)
        value = ValueHead(self.value_format, name="value")(x)
        return policy_logits, value
