"""Output heads shared by the trunks: policy logits and a configurable value head."""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

# value_head_out_size -> meaning of the value output
VALUE_HEAD_KINDS = {
    1: "scalar",  # tanh value in [-1, 1] from the side to move
    3: "wdl",  # logits of [win, draw, loss]
    4: "four_way",  # logits of [win, gam_win_cond, gam_loss_cond, bg_rate]; sigmoid in `equity`
}


def check_value_head_size(size: int) -> None:
    if size not in VALUE_HEAD_KINDS:
        raise ValueError(
            f"value_head_out_size must be one of {sorted(VALUE_HEAD_KINDS)} "
            f"(scalar, WDL, 4-way), got {size}"
        )


class ValueHead(nn.Module):
    """Dense head; the scalar variant is squashed with tanh, the others stay logits."""

    out_size: int
    hidden: int = 64

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        check_value_head_size(self.out_size)
        x = nn.relu(nn.Dense(self.hidden, name="hidden")(x))
        v = nn.Dense(self.out_size, name="out")(x)
        if self.out_size == 1:
            return jnp.tanh(v[..., 0])
        return v


def value_to_scalar(value_out: jax.Array, out_size: int) -> jax.Array:
    """A scalar value for the side to move, in the game's reward units, from any value head.

    scalar and WDL heads: [-1, 1]. 4-way (backgammon): cubeless money equity in points, in
    [-3, 3], the unit of the env's rewards (a certain gammon win is worth 2, as the env's
    terminal reward), so leaf values, afterstate values, terminal rewards and the greedy
    baseline add up in one unit (docs/search.md).
    """
    check_value_head_size(out_size)
    if out_size == 1:
        return value_out
    if out_size == 3:
        p = jax.nn.softmax(value_out, axis=-1)
        return p[..., 0] - p[..., 2]
    from equity import value_outputs_to_equity

    return value_outputs_to_equity(jax.nn.sigmoid(value_out))
