"""AlphaZero residual network (channels-last boards), as docs/chess.md describes."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from turbozero.networks.heads import ValueHead, check_value_format
from turbozero.networks.value_formats import ScalarValue, ValueFormat


class ResidualBlock(nn.Module):
    filters: int

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        bn = lambda name: nn.BatchNorm(use_running_average=not train, name=name)  # noqa: E731
        y = nn.Conv(self.filters, (3, 3), use_bias=False, name="conv_0")(x)
        y = nn.relu(bn("bn_0")(y))
        y = nn.Conv(self.filters, (3, 3), use_bias=False, name="conv_1")(y)
        y = bn("bn_1")(y)
        return nn.relu(x + y)


class ResNet(nn.Module):
    """Conv stem, `num_blocks` residual blocks, a policy and a value head.

    Input `[B, H, W, C]`; returns `(policy_logits [B, num_actions], value_out)`.
    Call with `train=True` and `mutable=["batch_stats"]` while training.
    """

    num_actions: int
    value_format: ValueFormat = ScalarValue()
    num_filters: int = 64
    num_blocks: int = 4
    value_hidden: int = 256

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        check_value_format(self.value_format)
        if x.ndim != 4:
            raise ValueError(f"ResNet expects [batch, height, width, channels], got {x.shape}")
        x = x.astype(jnp.float32)
        bn = lambda name: nn.BatchNorm(use_running_average=not train, name=name)  # noqa: E731
        x = nn.Conv(self.num_filters, (3, 3), use_bias=False, name="stem_conv")(x)
        x = nn.relu(bn("stem_bn")(x))
        for i in range(self.num_blocks):
            x = ResidualBlock(self.num_filters, name=f"block_{i}")(x, train)
        p = nn.Conv(2, (1, 1), use_bias=False, name="policy_conv")(x)
        p = nn.relu(bn("policy_bn")(p)).reshape(x.shape[0], -1)
        policy_logits = nn.Dense(self.num_actions, name="policy")(p)
        v = nn.Conv(1, (1, 1), use_bias=False, name="value_conv")(x)
        v = nn.relu(bn("value_bn")(v)).reshape(x.shape[0], -1)
        value = ValueHead(self.value_format, hidden=self.value_hidden, name="value")(v)
        return policy_logits, value
