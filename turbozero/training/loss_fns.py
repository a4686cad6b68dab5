"""Loss functions: one function per idea, shared by every game.

* `policy_cross_entropy`: NaN-safe cross-entropy of the search policy over legal actions.
* value losses live with their value format (`turbozero.networks.value_formats`);
  `scalar_value_loss`, `wdl_value_loss` and `four_way_value_loss` are the plain functions.
* `az_loss_fn`: policy + the value format's loss + L2; `az_loss_fn_4way` is its 4-way form
  with the signature of the backgammon 4-way design (docs/equity.md).
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp
import optax

from turbozero.networks.heads import check_value_format
from turbozero.networks.value_formats import (  # noqa: F401  (re-exported: one home per format)
    FourWayValue,
    ScalarValue,
    SeatValues,
    ValueFormat,
    four_way_value_loss,
    outcome_to_wdl,
)
from turbozero.training.types import Experience, TrainState


def policy_cross_entropy(
    logits: jax.Array, target: jax.Array, legal_mask: jax.Array | None = None
) -> jax.Array:
    """Mean over the batch of `-sum_a target(a) log softmax(logits)(a)`, legal actions only.

    Illegal logits are pushed to the float minimum before the softmax, and the product with a
    zero target is taken as 0 (never `0 * -inf = NaN`).
    """
    if legal_mask is not None:
        logits = jnp.where(legal_mask, logits, jnp.finfo(logits.dtype).min)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    terms = jnp.where(target > 0, target * log_p, 0.0)
    return -jnp.sum(terms, axis=-1).mean()


def scalar_value_loss(pred_value: jax.Array, target_value: jax.Array) -> jax.Array:
    """Mean squared error between a tanh value and the game outcome in [-1, 1]."""
    return jnp.mean((pred_value - target_value) ** 2)


def wdl_value_loss(wdl_logits: jax.Array, outcome: jax.Array) -> jax.Array:
    """Cross-entropy of WDL logits against the one-hot outcome (docs/training.md)."""
    return optax.softmax_cross_entropy(wdl_logits, outcome_to_wdl(outcome)).mean()


def l2_penalty(params: chex.ArrayTree) -> jax.Array:
    """Sum of squares of all parameters."""
    return sum(jnp.sum(jnp.square(p)) for p in jax.tree_util.tree_leaves(params))


def apply_in_training(params, train_state: TrainState, observation: jax.Array):
    """`((policy_logits, value_out), updates)`: the network in training mode, its BatchNorm
    statistics (if any) updated in `updates`."""
    variables = {"params": params}
    mutable: list[str] = []
    if train_state.batch_stats is not None:
        variables["batch_stats"] = train_state.batch_stats
        mutable = ["batch_stats"]
    return train_state.apply_fn(variables, observation, train=True, mutable=mutable)


def total_loss(params, policy_loss, value_loss, l2_reg_lambda, metrics, updates):
    """policy + value + L2, with the metrics every loss reports."""
    l2_reg = l2_reg_lambda * l2_penalty(params)
    metrics = {"policy_loss": policy_loss, "value_loss": value_loss, "l2_reg": l2_reg, **metrics}
    return policy_loss + value_loss + l2_reg, (metrics, updates)


def az_loss_fn(
    params: chex.ArrayTree,
    train_state: TrainState,
    experience: Experience,
    l2_reg_lambda: float = 1e-4,
    *,
    value_format: ValueFormat = ScalarValue(),
) -> tuple[jax.Array, tuple[dict, dict]]:
    """AlphaZero loss: policy cross-entropy + the value format's loss + L2.

    Returns `(loss, (aux_metrics, updates))`; `updates` holds new BatchNorm statistics.
    """
    (policy_logits, value_out), updates = apply_in_training(params, train_state,
                                                             experience.observation)
    policy_loss = policy_cross_entropy(
        policy_logits, experience.policy, experience.legal_action_mask
    )
    check_value_format(value_format)
    value_loss, metrics = value_format.loss(value_out, experience.returns, experience.current_player)
    return total_loss(params, policy_loss, value_loss, l2_reg_lambda, metrics, updates)


def az_loss_fn_4way(
    params: chex.ArrayTree,
    train_state: TrainState,
    experience: Experience,
    l2_reg_lambda: float = 1e-4,
) -> tuple[jax.Array, tuple[dict, dict]]:
    """AlphaZero loss with the backgammon 4-way conditional value head (spec signature)."""
    return az_loss_fn(params, train_state, experience, l2_reg_lambda, value_format=FourWayValue())


def simultaneous_loss_fn(
    params: chex.ArrayTree,
    train_state: TrainState,
    experience: Experience,
    l2_reg_lambda: float = 1e-4,
) -> tuple[jax.Array, tuple[dict, dict]]:
    """Two-player simultaneous games: each player's policy CE + MSE of each player's return.

    `policy`/`legal_action_mask` are `[B, 2, A]`, `returns` is `[B, 2]` (return to the end).
    """
    policy_logits, values = train_state.apply_fn(
        {"params": params}, experience.observation, train=True
    )
    b, p, a = policy_logits.shape
    policy_loss = p * policy_cross_entropy(
        policy_logits.reshape(b * p, a),
        experience.policy.reshape(b * p, a),
        experience.legal_action_mask.reshape(b * p, a),
    )
    value_loss, _ = SeatValues(p).loss(values, experience.returns, experience.current_player)
    return total_loss(params, policy_loss, value_loss, l2_reg_lambda, {}, {})


LossFn = Callable[..., tuple[jax.Array, tuple[dict, dict]]]
