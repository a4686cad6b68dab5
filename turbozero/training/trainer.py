"""Gradient steps on replayed samples with optax."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import optax

from turbozero.training import replay
from turbozero.training.types import TrainState

# loss_fn(params, train_state, experience, l2_reg_lambda) -> (loss, (metrics, updates))
LossFn = Callable


def decay_mask(params: Any, names: Sequence[str]) -> Any:
    """A pytree of bools like `params`: True on the leaves whose own name is in `names`.

    flax names the weights of `nn.Dense` and `nn.Conv` "kernel"; biases ("bias") and BatchNorm
    parameters ("scale", "bias") are left out (docs/training.md: decaying BatchNorm scales is
    reported to collapse a WDL value head).
    """
    names = tuple(names)

    def leaf(path, _):
        last = path[-1]
        return getattr(last, "key", getattr(last, "name", None)) in names

    return jax.tree_util.tree_map_with_path(leaf, params)


def check_decay_mask(params: Any, names: Sequence[str], weight_decay: float) -> None:
    """ValueError if weight decay is asked for but `names` matches no parameter."""
    if weight_decay > 0 and not any(jax.tree_util.tree_leaves(decay_mask(params, names))):
        raise ValueError(
            f"weight_decay_params={tuple(names)!r} matches no parameter of the network "
            "(flax names dense and convolution weights 'kernel')")


def make_optimizer(
    learning_rate: float,
    total_steps: int,
    warmup_steps: int = 0,
    weight_decay: float = 0.0,
    weight_decay_params: Sequence[str] = ("kernel",),
) -> optax.GradientTransformation:
    """Global-norm clipping, masked weight decay, then Adam with a warm-up then cosine decay.

    The decay is added to the clipped gradient before Adam, as PyTorch's
    `Adam(weight_decay=...)` does (coupled L2, not AdamW).
    """
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0 if warmup_steps else learning_rate,
        peak_value=learning_rate,
        warmup_steps=warmup_steps,
        decay_steps=max(total_steps, warmup_steps + 1),
        end_value=learning_rate * 0.1,
    )
    parts = [optax.clip_by_global_norm(1.0)]
    if weight_decay > 0:
        names = tuple(weight_decay_params)
        parts.append(optax.add_decayed_weights(weight_decay, mask=lambda p: decay_mask(p, names)))
    parts.append(optax.adam(schedule))
    return optax.chain(*parts)


def _all_finite(tree: Any) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]))


def train_step(
    train_state: TrainState, experience, loss_fn: LossFn, l2_reg_lambda: float = 0.0
) -> tuple[TrainState, dict]:
    """One update; a step whose loss or gradients are not finite changes nothing (parameters,
    optimizer state, BatchNorm statistics, step count) and reports `skipped_nonfinite = 1`
    (docs/training.md)."""
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, (metrics, updates)), grads = grad_fn(
        train_state.params, train_state, experience, l2_reg_lambda
    )
    finite = jnp.isfinite(loss) & _all_finite(grads)
    new_state = train_state.apply_gradients(grads=grads)
    if train_state.batch_stats is not None and "batch_stats" in updates:
        new_state = new_state.replace(batch_stats=updates["batch_stats"])
    new_state = jax.tree_util.tree_map(
        lambda new, old: jnp.where(finite, new, old), new_state, train_state)
    metrics = {"loss": loss, **metrics, "grad_norm": optax.global_norm(grads)}
    metrics["skipped_nonfinite"] = (~finite).astype(jnp.int32)
    return new_state, metrics


def train(
    train_state: TrainState,
    buffer: replay.ReplayBuffer,
    key: jax.Array,
    *,
    loss_fn: LossFn,
    batch_size: int,
    num_steps: int,
    l2_reg_lambda: float = 0.0,
    shard_batch: Callable = lambda x: x,
) -> tuple[TrainState, dict]:
    """`num_steps` updates (lax.scan) on uniform samples.

    Returns the metrics averaged over the steps that were applied, and `skipped_nonfinite`, the
    number of steps skipped for a non-finite loss or gradient. `l2_reg_lambda` is the in-loss L2
    of the loss functions' signature; the Trainer passes 0 and decays weights in the optimizer.
    """

    def one(ts, k):
        exp = shard_batch(replay.sample(buffer, k, batch_size))
        return train_step(ts, exp, loss_fn, l2_reg_lambda)

    train_state, metrics = jax.lax.scan(one, train_state, jax.random.split(key, num_steps))
    skipped = metrics.pop("skipped_nonfinite")
    applied = (skipped == 0).astype(jnp.float32)
    n = jnp.maximum(applied.sum(), 1.0)

    def mean_applied(x):
        return jnp.sum(jnp.where(applied > 0, x, 0.0)) / n

    out = {k: jnp.where(applied.sum() > 0, mean_applied(v), jnp.nan) for k, v in metrics.items()}
    out["skipped_nonfinite"] = skipped.sum()
    return train_state, out
