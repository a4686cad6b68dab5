"""The value head shared by the trunks; what its output means is its `ValueFormat`."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax

from turbozero.networks.value_formats import ValueFormat


def check_value_format(value_format: Any) -> None:
    """ValueError unless `value_format` is a `ValueFormat` object (not an integer kind)."""
    if not isinstance(value_format, ValueFormat):
        raise ValueError(
            "value_format must be a ValueFormat object (ScalarValue(), WDLValue(), "
            "FourWayValue(), SeatValues(n), MoverRelativeValues(n) from "
            f"turbozero.networks.value_formats), got {value_format!r}")


class ValueHead(nn.Module):
    """Dense - ReLU - Dense(out_size), then the format's activation."""

    value_format: ValueFormat
    hidden: int = 64

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        check_value_format(self.value_format)
        x = nn.relu(nn.Dense(self.hidden, name="hidden")(x))
        raw = nn.Dense(self.value_format.out_size, name="out")(x)
        return self.value_format.activate(raw)
