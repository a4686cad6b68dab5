"""A multi-layer perceptron with policy and value heads (flat observations), optionally one
value head or one whole network per phase of the game, the phase read from an observation unit."""

from __future__ import annotations

from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from turbozero.networks.heads import ValueHead, check_value_format
from turbozero.networks.value_formats import ScalarValue, ValueFormat
from turbozero.validation import check_int


def _pick(in_phase: jax.Array, if_1: jax.Array, if_0: jax.Array) -> jax.Array:
    """Per position of the batch, `if_1` where `in_phase` [B] else `if_0` ([B, ...] each)."""
    return jnp.where(in_phase.reshape(in_phase.shape + (1,) * (if_1.ndim - 1)), if_1, if_0)


# how an MLP splits by phase: one value head per phase on a shared trunk, or one whole
# network (trunk, policy and value heads) per phase, as programs that keep separate networks
# for separate parts of a game do; None: no split
PHASE_SPLITS = (None, "heads", "nets")


class MLPNet(nn.Module):
    """Trunk of Dense+LayerNorm+ReLU layers; returns `(policy_logits, value_out)`.

    With `phase_split` ("heads" or "nets") the observation unit `phase_unit` (0 or 1) picks,
    per position, the value head (or the whole network) of its phase; both are computed and
    one is kept, so each phase's parameters learn only from its own positions."""

    num_actions: int
    value_format: ValueFormat = ScalarValue()
    hidden_sizes: Sequence[int] = (128, 128)
    phase_split: str | None = None
    phase_unit: int | None = None

    def __post_init__(self) -> None:
        # (128, -5), 0 or "64" reached flax and failed there (or read "64" as 6 and 4)
        check_int("MLPNet: num_actions", self.num_actions, minimum=1)
        sizes = self.hidden_sizes
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, (tuple, list)):
            raise ValueError(f"MLPNet: hidden_sizes must be a tuple of layer widths, e.g. "
                             f"(64, 64), got {sizes!r}")
        for width in sizes:
            check_int(f"MLPNet: hidden_sizes entry (of {tuple(sizes)!r})", width, minimum=1)
        if self.phase_split not in PHASE_SPLITS:
            raise ValueError(f"MLPNet: phase_split must be one of {PHASE_SPLITS}, got "
                             f"{self.phase_split!r}")
        if self.phase_split is not None or self.phase_unit is not None:
            check_int("MLPNet: phase_unit (the observation unit holding the phase)",
                      self.phase_unit, minimum=0)
        super().__post_init__()

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        check_value_format(self.value_format)
        del train  # no batch statistics in this network
        x = x.reshape(x.shape[0], -1).astype(jnp.float32)
        if self.phase_split is None:
            return self._network(x, "")
        if self.phase_unit >= x.shape[-1]:
            raise ValueError(f"MLPNet: phase_unit {self.phase_unit} is past the observation's "
                             f"{x.shape[-1]} units")
        in_phase = x[:, self.phase_unit] > 0.5  # [B]
        if self.phase_split == "nets":
            policy_0, value_0 = self._network(x, "")
            policy_1, value_1 = self._network(x, "phase1_")
            return _pick(in_phase, policy_1, policy_0), _pick(in_phase, value_1, value_0)
        trunk = self._trunk(x, "")
        value_1 = ValueHead(self.value_format, name="phase1_value")(trunk)
        value_0 = ValueHead(self.value_format, name="value")(trunk)
        policy_logits = nn.Dense(self.num_actions, name="policy")(trunk)
        return policy_logits, _pick(in_phase, value_1, value_0)

    def _trunk(self, x: jax.Array, prefix: str) -> jax.Array:
        for i, width in enumerate(self.hidden_sizes):
            x = nn.Dense(width, name=f"{prefix}dense_{i}")(x)
            x = nn.LayerNorm(name=f"{prefix}norm_{i}")(x)
            x = nn.relu(x)
        return x

    def _network(self, x: jax.Array, prefix: str) -> tuple[jax.Array, jax.Array]:
        # the unsplit network's parameter names when prefix is "" (stored runs load as before)
        x = self._trunk(x, prefix)
        policy_logits = nn.Dense(self.num_actions, name=f"{prefix}policy")(x)
        value = ValueHead(self.value_format, name=f"{prefix}value")(x)
        return policy_logits, value
