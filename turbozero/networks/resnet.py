"""AlphaZero residual network (channels-last boards), as docs/chess.md describes."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from turbozero.networks.heads import ValueHead, check_value_format
from turbozero.networks.value_formats import ScalarValue, ValueFormat
from turbozero.validation import check_int


# `compute_dtype` names (strings, so that a run's JSON config holds them)
COMPUTE_DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16}


def compute_dtype(name: str):
    if name not in COMPUTE_DTYPES:
        raise ValueError(f"compute_dtype must be one of {sorted(COMPUTE_DTYPES)}, got {name!r}")
    return COMPUTE_DTYPES[name]


class ResidualBlock(nn.Module):
    filters: int
    dtype: Any = jnp.float32

    @nn.compact
    def __call__(self, x: jax.Array, train: bool) -> jax.Array:
        bn = lambda name: nn.BatchNorm(use_running_average=not train, dtype=self.dtype,  # noqa: E731
                                       name=name)
        y = nn.Conv(self.filters, (3, 3), use_bias=False, dtype=self.dtype, name="conv_0")(x)
        y = nn.relu(bn("bn_0")(y))
        y = nn.Conv(self.filters, (3, 3), use_bias=False, dtype=self.dtype, name="conv_1")(y)
        y = bn("bn_1")(y)
        return nn.relu(x + y)


class ResNet(nn.Module):
    """Conv stem, `num_blocks` residual blocks, a policy and a value head.

    Input `[B, H, W, C]`; returns `(policy_logits [B, num_actions], value_out)`.
    Call with `train=True` and `mutable=["batch_stats"]` while training.

    compute_dtype: "float32" or "bfloat16" (docs/chess.md, "bf16 compute"): the stem,
    the residual tower and the head convolutions compute in that type; parameters, BatchNorm
    statistics, the final dense layers and both outputs stay float32, so the optimizer, the
    losses and the search see float32 as before.
    """

    num_actions: int
    value_format: ValueFormat = ScalarValue()
    num_filters: int = 64
    num_blocks: int = 4
    value_hidden: int = 256
    compute_dtype: str = "float32"

    def __post_init__(self) -> None:
        check_int("ResNet: num_actions", self.num_actions, minimum=1)
        check_int("ResNet: num_filters", self.num_filters, minimum=1)
        check_int("ResNet: num_blocks", self.num_blocks, minimum=0)
        check_int("ResNet: value_hidden", self.value_hidden, minimum=1)
        super().__post_init__()

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        check_value_format(self.value_format)
        if x.ndim != 4:
            raise ValueError(f"ResNet expects [batch, height, width, channels], got {x.shape}")
        dtype = compute_dtype(self.compute_dtype)
        x = x.astype(dtype)
        bn = lambda name: nn.BatchNorm(use_running_average=not train, dtype=dtype,  # noqa: E731
                                       name=name)
        x = nn.Conv(self.num_filters, (3, 3), use_bias=False, dtype=dtype, name="stem_conv")(x)
        x = nn.relu(bn("stem_bn")(x))
        for i in range(self.num_blocks):
            x = ResidualBlock(self.num_filters, dtype=dtype, name=f"block_{i}")(x, train)
        p = nn.Conv(2, (1, 1), use_bias=False, dtype=dtype, name="policy_conv")(x)
        p = nn.relu(bn("policy_bn")(p)).reshape(x.shape[0], -1).astype(jnp.float32)
        policy_logits = nn.Dense(self.num_actions, name="policy")(p)
        v = nn.Conv(1, (1, 1), use_bias=False, dtype=dtype, name="value_conv")(x)
        v = nn.relu(bn("value_bn")(v)).reshape(x.shape[0], -1).astype(jnp.float32)
        value = ValueHead(self.value_format, hidden=self.value_hidden, name="value")(v)
        return policy_logits, value
