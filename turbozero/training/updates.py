"""Gradient steps on replayed samples with optax."""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import optax

from turbozero.training import replay
from turbozero.training.types import TrainState
from turbozero.validation import check_int, check_real

# loss_fn(params, train_state, experience) -> (loss, (metrics, updates)); weight decay is the
# optimizer's (MaskedWeightDecay), not a loss term
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


@dataclasses.dataclass(frozen=True)
class WarmupCosine:
    """Linear warm-up from 0 over `warmup_steps`, then cosine decay to `end_fraction` of the
    peak at the run's last step (no warm-up: start at the peak)."""

    warmup_steps: int = 0
    end_fraction: float = 0.1

    def __post_init__(self) -> None:
        check_int("warmup_steps", self.warmup_steps, minimum=0)
        check_real("end_fraction", self.end_fraction, minimum=0.0, maximum=1.0)

    def __call__(self, peak: float, total_steps: int) -> optax.Schedule:
        return optax.warmup_cosine_decay_schedule(
            init_value=0.0 if self.warmup_steps else peak,
            peak_value=peak,
            warmup_steps=self.warmup_steps,
            decay_steps=max(total_steps, self.warmup_steps + 1),
            end_value=peak * self.end_fraction,
        )


@dataclasses.dataclass(frozen=True)
class ConstantRate:
    """The peak learning rate at every step."""

    def __call__(self, peak: float, total_steps: int) -> optax.Schedule:
        return optax.constant_schedule(peak)


@dataclasses.dataclass(frozen=True)
class ClipByGlobalNorm:
    max_norm: float = 1.0

    def __post_init__(self) -> None:
        check_real("max_norm", self.max_norm, above=0.0)

    def transform(self) -> optax.GradientTransformation:
        return optax.clip_by_global_norm(self.max_norm)


@dataclasses.dataclass(frozen=True)
class MaskedWeightDecay:
    """Adds `weight_decay * w` to the gradient of the parameters whose leaf name is in
    `params` (flax: "kernel" = dense and convolution weights), before the update rule:
    PyTorch `Adam(weight_decay=...)`'s coupled L2, i.e. the gradient of a loss term
    `weight_decay / 2 * ||w||^2` (docs/training.md)."""

    weight_decay: float = 1e-4
    params: tuple = ("kernel",)

    def __post_init__(self) -> None:
        check_real("weight_decay", self.weight_decay, minimum=0.0)
        # a string is a tuple of its letters to Python: "kernel" would mask nothing
        if isinstance(self.params, str) or not all(isinstance(p, str) for p in self.params):
            raise ValueError(f"params must be a tuple of parameter names, e.g. ('kernel',), "
                             f"got {self.params!r}")

    def transform(self) -> optax.GradientTransformation:
        names = tuple(self.params)
        return optax.add_decayed_weights(self.weight_decay, mask=lambda p: decay_mask(p, names))

    def check(self, params: Any) -> None:
        check_decay_mask(params, self.params, self.weight_decay)


@dataclasses.dataclass(frozen=True)
class Adam:
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def __post_init__(self) -> None:
        check_real("b1", self.b1, minimum=0.0, maximum=1.0)
        check_real("b2", self.b2, minimum=0.0, maximum=1.0)
        check_real("eps", self.eps, minimum=0.0)

    def __call__(self, schedule: optax.Schedule) -> optax.GradientTransformation:
        return optax.adam(schedule, b1=self.b1, b2=self.b2, eps=self.eps)


@dataclasses.dataclass(frozen=True)
class SGD:
    momentum: float = 0.9
    nesterov: bool = True

    def __post_init__(self) -> None:
        check_real("momentum", self.momentum, minimum=0.0, maximum=1.0)
        if not isinstance(self.nesterov, bool):
            raise ValueError(f"nesterov must be True or False, got {self.nesterov!r}")

    def __call__(self, schedule: optax.Schedule) -> optax.GradientTransformation:
        return optax.sgd(schedule, momentum=self.momentum or None, nesterov=self.nesterov)


@dataclasses.dataclass(frozen=True)
class Optimizer:
    """The optax chain of a run, as parts a config can replace one by one:
    `clipping` (or None) -> `weight_decay` (or None) -> `update` rule driven by `schedule`
    from the peak `learning_rate`. On the command line, `--set optimizer.learning_rate=3e-3`
    or `--set optimizer.schedule.warmup_steps=100`; in Python any part may be replaced by an
    object with the same method (`update=SGD()`, `clipping=None`, an optax-building object of
    your own), and the whole optimizer by any object with `build(total_steps)` and
    `check(params)` (docs/training.md, "Optimizer")."""

    learning_rate: float = 1e-3
    schedule: Any = WarmupCosine()
    clipping: Any = ClipByGlobalNorm(1.0)
    weight_decay: Any = MaskedWeightDecay()
    update: Any = Adam()

    def __post_init__(self) -> None:
        # inf and NaN too: an infinite rate makes every parameter infinite at the first
        # update, and the run then skips every step with nothing said
        check_real("learning_rate", self.learning_rate, above=0.0)

    def build(self, total_steps: int) -> optax.GradientTransformation:
        parts = []
        if self.clipping is not None:
            parts.append(self.clipping.transform())
        if self.weight_decay is not None:
            parts.append(self.weight_decay.transform())
        parts.append(self.update(self.schedule(self.learning_rate, total_steps)))
        return optax.chain(*parts)

    def check(self, params: Any) -> None:
        """ValueError if a part cannot apply to `params` (a decay mask matching nothing)."""
        if self.weight_decay is not None and hasattr(self.weight_decay, "check"):
            self.weight_decay.check(params)


def make_optimizer(
    learning_rate: float,
    total_steps: int,
    warmup_steps: int = 0,
    weight_decay: float = 0.0,
    weight_decay_params: Sequence[str] = ("kernel",),
) -> optax.GradientTransformation:
    """`Optimizer(...).build(total_steps)` from plain numbers: global-norm clipping, masked
    weight decay (when > 0), then Adam with a warm-up then cosine decay."""
    decay = MaskedWeightDecay(weight_decay, tuple(weight_decay_params)) if weight_decay > 0 else None
    return Optimizer(learning_rate, WarmupCosine(warmup_steps), weight_decay=decay).build(total_steps)


def _all_finite(tree: Any) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree_util.tree_leaves(tree)]))


def train_step(
    train_state: TrainState, experience, loss_fn: LossFn
) -> tuple[TrainState, dict]:
    """One update; a step whose loss, gradients or updated parameters are not finite changes
    nothing (parameters, optimizer state, BatchNorm statistics, step count) and reports
    `skipped_nonfinite = 1` (docs/training.md). The updated parameters are checked too: a
    learning rate too large makes finite gradients into infinite parameters, and every later
    step of the run would then be skipped with the network already lost."""
    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)
    (loss, (metrics, updates)), grads = grad_fn(
        train_state.params, train_state, experience
    )
    new_state = train_state.apply_gradients(grads=grads)
    finite = jnp.isfinite(loss) & _all_finite(grads) & _all_finite(new_state.params)
    if train_state.batch_stats is not None and "batch_stats" in updates:
        new_state = new_state.replace(batch_stats=updates["batch_stats"])
    new_state = jax.tree_util.tree_map(
        lambda new, old: jnp.where(finite, new, old), new_state, train_state)
    metrics = {"loss": loss, **metrics, "grad_norm": optax.global_norm(grads)}
    metrics["skipped_nonfinite"] = (~finite).astype(jnp.int32)
    return new_state, metrics


def sampled_step(
    train_state: TrainState,
    buffer: replay.ReplayBuffer,
    key: jax.Array,
    *,
    loss_fn: LossFn,
    batch_size: int,
    shard_batch: Callable = lambda x: x,
    sample_fn: Callable = replay.sample,
) -> tuple[TrainState, dict]:
    """One update on a batch of `sample_fn(buffer, key, batch_size)` (`Algorithm.sample`;
    default uniform single positions): `train_step` after sampling."""
    experience = shard_batch(sample_fn(buffer, key, batch_size))
    return train_step(train_state, experience, loss_fn)


def summarize_steps(metrics: dict) -> dict:
    """The metrics of several steps (each leaf stacked, `[num_steps]`) averaged over the steps
    that were applied, with `skipped_nonfinite` their count of skipped steps (NaN averages when
    every step was skipped)."""
    metrics = dict(metrics)
    skipped = metrics.pop("skipped_nonfinite")
    applied = (skipped == 0).astype(jnp.float32)
    n = jnp.maximum(applied.sum(), 1.0)

    def mean_applied(x):
        return jnp.sum(jnp.where(applied > 0, x, 0.0)) / n

    out = {k: jnp.where(applied.sum() > 0, mean_applied(v), jnp.nan) for k, v in metrics.items()}
    out["skipped_nonfinite"] = skipped.sum()
    return out


def train(
    train_state: TrainState,
    buffer: replay.ReplayBuffer,
    key: jax.Array,
    *,
    num_steps: int,
    **step_options: Any,
) -> tuple[TrainState, dict]:
    """`num_steps` updates (lax.scan) of `sampled_step`, in one jittable function;
    `step_options` are `sampled_step`'s keywords (`loss_fn` and `batch_size` required).

    Returns the metrics averaged over the steps that were applied, and `skipped_nonfinite`, the
    number of steps skipped for a non-finite loss or gradient.

    The Trainer runs this on GPU and TPU (`ScanUpdates`), not on CPU: on XLA:CPU, gradients
    of convolutions inside a loop body (this scan) run 10-30x slower than the same gradients
    outside one (measured: chess tiny network, 8 gradients 0.11 s outside a loop, 3.6 s in a
    fori_loop; forward passes are not affected; jax issue 12868 is the forward case).
    `StepRunner` (`PerStepUpdates`) calls one jitted step per update from Python instead, with
    the same keys and results.
    """
    step = functools.partial(sampled_step, **step_options)
    train_state, metrics = jax.lax.scan(lambda ts, k: step(ts, buffer, k), train_state,
                                        jax.random.split(key, num_steps))
    return train_state, summarize_steps(metrics)


def _plain_jit(fn: Callable, name: str, donate_argnums: tuple = ()) -> Callable:
    """`jax.jit` with the signature of `Trainer._jit` (which may store the function lowered,
    turbozero/stored_functions.py; `name` names it there)."""
    return jax.jit(fn, donate_argnums=donate_argnums)


class StepRunner:
    """`train`'s updates, one jitted `sampled_step` call per update from Python (see `train` for
    why): same keys (`jax.random.split(key, num_steps)`), same averaged metrics. With `donate`,
    each step takes the train state donated (XLA updates parameters and optimizer state in
    place); the replay is only read. `step_options` as for `train`; `jit(fn, name,
    donate_argnums)` jits each function (default `jax.jit`; the Trainer's may store them)."""

    def __init__(self, *, num_steps: int, donate: bool = False, jit: Callable = None,
                 **step_options: Any):
        jit = jit or _plain_jit
        self.num_steps = num_steps
        self.step = jit(functools.partial(sampled_step, **step_options), "train_step",
                        (0,) if donate else ())
        # the keys as a tuple of arrays: indexing one split array from Python ran two eager
        # ops (slice, squeeze) per update (benchmarks/tools/timing.py caught them)
        self._keys = jit(lambda key: tuple(jax.random.split(key, num_steps)), "train_keys")
        self._summarize = jit(lambda ms: summarize_steps(
            jax.tree_util.tree_map(lambda *x: jnp.stack(x), *ms)), "train_summary")

    def __call__(self, train_state: TrainState, buffer: replay.ReplayBuffer,
                 key: jax.Array) -> tuple[TrainState, dict]:
        keys = self._keys(key)
        metrics = []
        for i in range(self.num_steps):
            train_state, m = self.step(train_state, buffer, keys[i])
            metrics.append(m)
        return train_state, self._summarize(metrics)


# ---------------------------------------------------- how an iteration's updates are run
@dataclasses.dataclass(frozen=True)
class PerStepUpdates:
    """An iteration's updates as one jitted `sampled_step` call per update from Python
    (`StepRunner`). The choice on CPU, where convolution gradients inside a `lax.scan` ran
    10-30x slower (`train`'s docstring; docs/training.md, "How the updates run")."""

    def build(self, *, num_steps: int, donate: bool = False, jit: Callable = None,
              **step_options: Any) -> Callable:
        return StepRunner(num_steps=num_steps, donate=donate, jit=jit, **step_options)


@dataclasses.dataclass(frozen=True)
class ScanUpdates:
    """An iteration's updates as one jitted `lax.scan` (`train`): one dispatch per iteration
    instead of one per update. The choice on GPU and TPU (docs/training.md, "How the updates
    run", has both measurements)."""

    def build(self, *, num_steps: int, donate: bool = False, jit: Callable = None,
              **step_options: Any) -> Callable:
        return (jit or _plain_jit)(functools.partial(train, num_steps=num_steps, **step_options),
                                   "train_scan", (0,) if donate else ())


def updates_for_backend(backend: str) -> PerStepUpdates | ScanUpdates:
    """The default way to run updates on `backend` (`jax.default_backend()`): per step on
    CPU, one scan elsewhere."""
    return PerStepUpdates() if backend == "cpu" else ScanUpdates()

