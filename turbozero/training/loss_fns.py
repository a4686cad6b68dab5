"""Loss functions: one function per idea, shared by every game.

* `policy_cross_entropy`: NaN-safe cross-entropy of the search policy over legal actions.
* value losses: `scalar_value_loss` (MSE on a tanh value), `wdl_value_loss` (cross-entropy of
  win/draw/loss logits against the game outcome, alphazero-chess.md §8.2) and
  `four_way_value_loss` (masked BCE on the backgammon 4-way conditional logits).
* `az_loss_fn`: policy + value + L2 for any value head; `az_loss_fn_4way` is its 4-way form
  with the signature of backgammon-4way-value-head.md.
"""

from __future__ import annotations

from typing import Callable

import chex
import jax
import jax.numpy as jnp
import optax

from equity import reward_to_value_targets
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


def outcome_to_wdl(outcome: jax.Array) -> jax.Array:
    """One-hot [win, draw, loss] of a scalar outcome (> 0.5 win, < -0.5 loss, else draw)."""
    win = outcome > 0.5
    loss = outcome < -0.5
    draw = ~win & ~loss
    return jnp.stack([win, draw, loss], axis=-1).astype(jnp.float32)


def wdl_value_loss(wdl_logits: jax.Array, outcome: jax.Array) -> jax.Array:
    """Cross-entropy of WDL logits against the one-hot outcome (alphazero-chess.md §8.2)."""
    return optax.softmax_cross_entropy(wdl_logits, outcome_to_wdl(outcome)).mean()


def four_way_value_loss(
    pred_logits: jax.Array, targets: jax.Array, masks: jax.Array
) -> jax.Array:
    """Masked, numerically stable sigmoid BCE, averaged over the unmasked entries.

    BCE(x, t) = max(x, 0) - x t + log(1 + exp(-|x|)), exactly the spec's form.
    """
    bce = (
        jnp.maximum(pred_logits, 0.0)
        - pred_logits * targets
        + jnp.log1p(jnp.exp(-jnp.abs(pred_logits)))
    )
    return jnp.sum(bce * masks) / jnp.maximum(jnp.sum(masks), 1.0)


def l2_penalty(params: chex.ArrayTree) -> jax.Array:
    """Sum of squares of all parameters."""
    return sum(jnp.sum(jnp.square(p)) for p in jax.tree_util.tree_leaves(params))


def _value_loss_and_metrics(
    value_out: jax.Array, target_reward: jax.Array, value_head_out_size: int
) -> tuple[jax.Array, dict]:
    if value_head_out_size == 1:
        # Rewards beyond ±1 (backgammon points) are clipped into the tanh range.
        return scalar_value_loss(value_out, jnp.clip(target_reward, -1.0, 1.0)), {}
    if value_head_out_size == 3:
        return wdl_value_loss(value_out, target_reward), {}
    if value_head_out_size == 4:
        # reward_to_value_targets needs a decided game: positions of games cut without a
        # result (reward 0, e.g. a step cap) are left out of the value loss.
        decided = target_reward != 0
        safe = jnp.where(decided, target_reward, 1.0)
        targets, masks = reward_to_value_targets(safe)
        masks = masks * decided[..., None]
        loss = four_way_value_loss(value_out, targets, masks)
        probs = jax.nn.sigmoid(value_out)
        metrics = {
            "pred_win": probs[:, 0].mean(),
            "pred_gam_win_cond": probs[:, 1].mean(),
            "pred_gam_loss_cond": probs[:, 2].mean(),
            "pred_bg_rate": probs[:, 3].mean(),
            "target_win": targets[:, 0].mean(),
        }
        return loss, metrics
    raise ValueError(f"value_head_out_size must be 1, 3 or 4, got {value_head_out_size}")


def _total_loss(params, policy_loss, value_loss, l2_reg_lambda, metrics, updates):
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
    value_head_out_size: int = 1,
) -> tuple[jax.Array, tuple[dict, dict]]:
    """AlphaZero loss: policy cross-entropy + value loss (by head size) + L2.

    Returns `(loss, (aux_metrics, updates))`; `updates` holds new BatchNorm statistics.
    """
    variables = {"params": params}
    mutable: list[str] = []
    if train_state.batch_stats is not None:
        variables["batch_stats"] = train_state.batch_stats
        mutable = ["batch_stats"]
    (policy_logits, value_out), updates = train_state.apply_fn(
        variables, experience.observation_nn, train=True, mutable=mutable
    )
    policy_loss = policy_cross_entropy(
        policy_logits, experience.policy_weights, experience.policy_mask
    )
    batch = jnp.arange(experience.reward.shape[0])
    target_reward = experience.reward[batch, experience.cur_player_id]
    value_loss, metrics = _value_loss_and_metrics(value_out, target_reward, value_head_out_size)
    return _total_loss(params, policy_loss, value_loss, l2_reg_lambda, metrics, updates)


def az_loss_fn_4way(
    params: chex.ArrayTree,
    train_state: TrainState,
    experience: Experience,
    l2_reg_lambda: float = 1e-4,
) -> tuple[jax.Array, tuple[dict, dict]]:
    """AlphaZero loss with the backgammon 4-way conditional value head (spec signature)."""
    return az_loss_fn(params, train_state, experience, l2_reg_lambda, value_head_out_size=4)


def simultaneous_loss_fn(
    params: chex.ArrayTree,
    train_state: TrainState,
    experience: Experience,
    l2_reg_lambda: float = 1e-4,
) -> tuple[jax.Array, tuple[dict, dict]]:
    """Two-player simultaneous games: each player's policy CE + MSE of each player's return.

    `policy_weights`/`policy_mask` are `[B, 2, A]`, `reward` is `[B, 2]` (return to the end).
    """
    policy_logits, values = train_state.apply_fn(
        {"params": params}, experience.observation_nn, train=True
    )
    b, p, a = policy_logits.shape
    policy_loss = p * policy_cross_entropy(
        policy_logits.reshape(b * p, a),
        experience.policy_weights.reshape(b * p, a),
        experience.policy_mask.reshape(b * p, a),
    )
    value_loss = jnp.mean(jnp.sum((values - experience.reward) ** 2, axis=-1))
    return _total_loss(params, policy_loss, value_loss, l2_reg_lambda, {}, {})


LossFn = Callable[..., tuple[jax.Array, tuple[dict, dict]]]
