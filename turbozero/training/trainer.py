"""Gradient steps on replayed samples with optax."""

from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import optax

from turbozero.training import replay
from turbozero.training.types import TrainState

# loss_fn(params, train_state, experience, l2_reg_lambda) -> (loss, (metrics, updates))
LossFn = Callable


def make_optimizer(learning_rate: float, total_steps: int, warmup_steps: int = 0) -> optax.GradientTransformation:
    """Adam with a warm-up then cosine decay of the learning rate (optax schedules)."""
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0 if warmup_steps else learning_rate,
        peak_value=learning_rate,
        warmup_steps=warmup_steps,
        decay_steps=max(total_steps, warmup_steps + 1),
        end_value=learning_rate * 0.1,
    )
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


def train_step(
    train_state: TrainState, experience, loss_fn: LossFn, l2_reg_lambda: float
) -> tuple[TrainState, dict]:
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, (metrics, updates)), grads = grad_fn(
        train_state.params, train_state, experience, l2_reg_lambda
    )
    train_state = train_state.apply_gradients(grads=grads)
    if train_state.batch_stats is not None and "batch_stats" in updates:
        train_state = train_state.replace(batch_stats=updates["batch_stats"])
    metrics = {"loss": loss, **metrics, "grad_norm": optax.global_norm(grads)}
    return train_state, metrics


def train(
    train_state: TrainState,
    buffer: replay.ReplayBuffer,
    key: jax.Array,
    *,
    loss_fn: LossFn,
    batch_size: int,
    num_steps: int,
    l2_reg_lambda: float,
    shard_batch: Callable = lambda x: x,
) -> tuple[TrainState, dict]:
    """`num_steps` updates (lax.scan) on uniform samples; returns the mean metrics."""

    def one(ts, k):
        exp = shard_batch(replay.sample(buffer, k, batch_size))
        return train_step(ts, exp, loss_fn, l2_reg_lambda)

    train_state, metrics = jax.lax.scan(one, train_state, jax.random.split(key, num_steps))
    return train_state, jax.tree_util.tree_map(jnp.mean, metrics)
