"""MuZero's networks on a spatial hidden state (docs/gomoku.md, "MuZero networks").

One flax module holds the four parts of (Efficient)MuZero, each callable on its own with
`net.apply(variables, x, method=MuZeroNet.represent)` (or `method="represent"`):

    represent(observation [B, H, W, C_obs])  -> hidden [B, H, W, C]
    dynamics(hidden, action int32[B])        -> (next_hidden [B, H, W, C], reward [B, P])
    predict(hidden)                          -> (logits [B, A], value [B, P])
    project(hidden, predictor)               -> float32[B, projection_dim]

The action is a cell of the hidden plane (A = H * W), so dynamics sees it as a one-hot plane
stacked on the hidden state. Values and rewards are mover-relative vectors
(`MoverRelativeValues`): the value in the (me, next, ...) order of the player to move at
`hidden`, the reward in the order of the player who moved.

Choices:
* Hidden states are min-max scaled to [0, 1] per sample over all H * W * C entries after
  representation and after every dynamics step (MuZero, Appendix G), so an unrolled state stays
  on the scale the heads were trained on.
* No BatchNorm: the K-step unroll would share running statistics between hidden states of
  different depths, and the search calls dynamics on batches of one node per environment.
  Residual blocks use LayerNorm over the channels instead: per position, no state, the same in
  training, unroll and search; it keeps the activations of a block on one scale between the
  min-max steps. On the tiny preset's network it fitted a fixed batch no better and no worse
  than no norm at all, at no visible cost (docs/gomoku.md, "MuZero networks"); it is kept for
  the deeper towers of the larger presets.
* The 1x1 convolutions that shrink the hidden state for the heads are linear (no ReLU): with
  no BatchNorm to centre them, a one-plane ReLU can be dead on every cell at initialisation,
  and was for the reward head in tests/networks/test_muzero_networks.py (all its gradients zero). The
  dense layers after them carry the non-linearity.
* The projection (EfficientZero's SimSiam head) reduces the channels with a 1x1 convolution
  before flattening: a dense layer on all H * W * C entries would dominate the parameter count
  on a 21x21 view (21 * 21 * 128 * 256 = 14.5 M weights).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from turbozero.networks.heads import ValueHead
from turbozero.networks.value_formats import MoverRelativeValues

# A hidden state whose entries are all (nearly) equal has no range to scale by; dividing by
# this floor instead maps it to zeros rather than NaNs (EfficientZero uses the same 1e-5).
MIN_HIDDEN_RANGE = 1e-5


def normalize_hidden(hidden: jax.Array) -> jax.Array:
    """float32[B, ...] scaled to [0, 1] per sample over all its non-batch entries."""
    axes = tuple(range(1, hidden.ndim))
    lo = jnp.min(hidden, axis=axes, keepdims=True)  # [B, 1, 1, 1]
    hi = jnp.max(hidden, axis=axes, keepdims=True)  # [B, 1, 1, 1]
    return (hidden - lo) / jnp.maximum(hi - lo, MIN_HIDDEN_RANGE)


class _ResidualBlock(nn.Module):
    """conv3x3 - LN - ReLU - conv3x3 - LN, plus the input, then ReLU."""

    channels: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:  # [B, H, W, C] -> [B, H, W, C]
        y = nn.Conv(self.channels, (3, 3), name="conv_0")(x)
        y = nn.relu(nn.LayerNorm(name="ln_0")(y))
        y = nn.Conv(self.channels, (3, 3), name="conv_1")(y)
        y = nn.LayerNorm(name="ln_1")(y)
        return nn.relu(x + y)


class _Tower(nn.Module):
    """`num_blocks` residual blocks."""

    channels: int
    num_blocks: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for i in range(self.num_blocks):
            x = _ResidualBlock(self.channels, name=f"block_{i}")(x)
        return x


class _PlaneHead(nn.Module):
    """A 1x1 convolution to `planes` channels, flattened, then a `ValueHead` (tanh vector)."""

    value_format: MoverRelativeValues
    planes: int
    hidden: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:  # [B, H, W, C] -> [B, P]
        y = nn.Conv(self.planes, (1, 1), name="conv")(x).reshape(x.shape[0], -1)
        return ValueHead(self.value_format, hidden=self.hidden, name="mlp")(y)


def _check_integer(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"MuZeroNet: {name} must be an integer >= {minimum}, got {value!r}")


class MuZeroNet(nn.Module):
    """Representation, dynamics, prediction and projection of (Efficient)MuZero on a spatial
    hidden state [H, W, C].

    num_actions: A = H * W (the action is a cell of the hidden plane).
    num_players: P; value and reward vectors in (me, next, prev, ...) order.
    hidden_shape: (H, W) of the observation and hidden planes.
    channels: C, the hidden state's channels (and every tower's width).
    representation_blocks, dynamics_blocks, prediction_blocks: residual blocks of each tower.
    projection_dim: width of the projection (and of the predictor's output).
    head_hidden: units of the hidden layer of the value and reward heads.
    projection_channels: channels the projection reduces the hidden state to before its MLP.

    Every method takes `train` and ignores it (no layer behaves differently in training): the
    training loop binds `train=False` to `apply` (`turbozero.training.algorithms`).
    """

    num_actions: int
    num_players: int
    hidden_shape: tuple
    channels: int = 32
    representation_blocks: int = 2
    dynamics_blocks: int = 1
    prediction_blocks: int = 1
    projection_dim: int = 64
    head_hidden: int = 64
    projection_channels: int = 4

    def __post_init__(self) -> None:
        shape = self.hidden_shape
        if (not isinstance(shape, tuple) or len(shape) != 2
                or any(isinstance(s, bool) or not isinstance(s, int) or s < 1 for s in shape)):
            raise ValueError(f"MuZeroNet: hidden_shape must be a tuple (H, W) of positive integers, "
                             f"got {shape!r}")
        _check_integer("num_actions", self.num_actions, 1)
        if self.num_actions != shape[0] * shape[1]:
            raise ValueError(f"MuZeroNet: num_actions must be H * W = {shape[0] * shape[1]} "
                             f"(an action is a cell of the {shape[0]}x{shape[1]} hidden plane), "
                             f"got {self.num_actions}")
        _check_integer("num_players", self.num_players, 2)
        _check_integer("channels", self.channels, 1)
        _check_integer("representation_blocks", self.representation_blocks, 0)
        _check_integer("dynamics_blocks", self.dynamics_blocks, 0)
        _check_integer("prediction_blocks", self.prediction_blocks, 0)
        _check_integer("projection_dim", self.projection_dim, 1)
        _check_integer("head_hidden", self.head_hidden, 1)
        _check_integer("projection_channels", self.projection_channels, 1)
        super().__post_init__()

    def setup(self) -> None:
        c = self.channels
        fmt = MoverRelativeValues(self.num_players)
        self.repr_stem = nn.Conv(c, (3, 3), name="repr_stem")
        self.repr_stem_ln = nn.LayerNorm(name="repr_stem_ln")
        self.repr_tower = _Tower(c, self.representation_blocks, name="repr_tower")
        self.dyn_stem = nn.Conv(c, (3, 3), name="dyn_stem")
        self.dyn_stem_ln = nn.LayerNorm(name="dyn_stem_ln")
        self.dyn_tower = _Tower(c, self.dynamics_blocks, name="dyn_tower")
        self.reward_head = _PlaneHead(fmt, planes=1, hidden=self.head_hidden, name="reward")
        self.pred_tower = _Tower(c, self.prediction_blocks, name="pred_tower")
        # AlphaZero's policy head (its 1x1 convolution linear, see above): two planes, then a
        # dense layer over all of them, so a cell's logit can depend on the whole view
        self.policy_conv = nn.Conv(2, (1, 1), name="policy_conv")
        self.policy_out = nn.Dense(self.num_actions, name="policy")
        self.value_head = _PlaneHead(fmt, planes=1, hidden=self.head_hidden, name="value")
        # EfficientZero's projection (3 layers) and predictor (2 layers, hidden half as wide),
        # LayerNorm where it has BatchNorm
        d = self.projection_dim
        self.proj_conv = nn.Conv(self.projection_channels, (1, 1), name="proj_conv")
        self.proj_dense = [nn.Dense(d, name=f"proj_{i}") for i in range(3)]
        self.proj_ln = [nn.LayerNorm(name=f"proj_ln_{i}") for i in range(3)]
        self.pred_dense = [nn.Dense(max(1, d // 2), name="predictor_0"),
                           nn.Dense(d, name="predictor_1")]
        self.pred_ln = nn.LayerNorm(name="predictor_ln_0")

    # ------------------------------------------------------------------ checks
    def _check_hidden(self, hidden: jax.Array, what: str) -> None:
        want = (*self.hidden_shape, self.channels)
        if hidden.ndim != 4 or tuple(hidden.shape[1:]) != want:
            raise ValueError(f"MuZeroNet: {what} must be [batch, {want[0]}, {want[1]}, {want[2]}]"
                             f", got {tuple(hidden.shape)}")

    # ------------------------------------------------------------------ parts
    def represent(self, observation: jax.Array, train: bool = False) -> jax.Array:
        """float32[B, H, W, C_obs] -> hidden float32[B, H, W, C] in [0, 1]."""
        del train
        if observation.ndim != 4 or tuple(observation.shape[1:3]) != tuple(self.hidden_shape):
            raise ValueError(f"MuZeroNet: the observation must be [batch, {self.hidden_shape[0]}"
                             f", {self.hidden_shape[1]}, channels], got {tuple(observation.shape)}")
        x = nn.relu(self.repr_stem_ln(self.repr_stem(observation.astype(jnp.float32))))
        return normalize_hidden(self.repr_tower(x))

    def dynamics(self, hidden: jax.Array, action: jax.Array,
                 train: bool = False) -> tuple[jax.Array, jax.Array]:
        """(next hidden float32[B, H, W, C] in [0, 1], reward float32[B, P] in (-1, 1)).

        action: int32[B], a cell of the plane; the reward is in the (me, next, ...) order of
        the player who moved. An action outside [0, A) has an all-zero plane (jax's one-hot),
        which is what the search never sends: its actions come from [0, A)."""
        del train
        self._check_hidden(hidden, "hidden")
        if action.shape != hidden.shape[:1]:
            raise ValueError(f"MuZeroNet: action must be [batch] = {hidden.shape[:1]}, "
                             f"got {tuple(action.shape)}")
        h, w = self.hidden_shape
        plane = jax.nn.one_hot(action, self.num_actions, dtype=jnp.float32)
        plane = plane.reshape(hidden.shape[0], h, w, 1)  # [B, H, W, 1]
        x = self.dyn_stem(jnp.concatenate([hidden, plane], axis=-1))
        # EfficientZero adds the state back after the stem: the step is a change of the state
        x = nn.relu(hidden + self.dyn_stem_ln(x))
        next_hidden = normalize_hidden(self.dyn_tower(x))
        return next_hidden, self.reward_head(next_hidden)

    def predict(self, hidden: jax.Array, train: bool = False) -> tuple[jax.Array, jax.Array]:
        """(policy logits float32[B, A], value float32[B, P] in (-1, 1)); the value is in the
        (me, next, ...) order of the player to move at `hidden`."""
        del train
        self._check_hidden(hidden, "hidden")
        x = self.pred_tower(hidden)
        p = self.policy_conv(x).reshape(x.shape[0], -1)  # [B, 2 H W]
        return self.policy_out(p), self.value_head(x)

    def project(self, hidden: jax.Array, predictor: bool,
                train: bool = False) -> jax.Array:
        """float32[B, projection_dim]: EfficientZero's projection of `hidden`, and with
        `predictor=True` its predictor on top (the dynamics branch of the consistency loss; the
        target branch takes `predictor=False` and stops the gradient in the loss)."""
        del train
        self._check_hidden(hidden, "hidden")
        x = self.proj_conv(hidden).reshape(hidden.shape[0], -1)  # [B, H W c_p]
        for i in range(3):
            x = self.proj_ln[i](self.proj_dense[i](x))
            if i < 2:
                x = nn.relu(x)
        if predictor:
            x = nn.relu(self.pred_ln(self.pred_dense[0](x)))
            x = self.pred_dense[1](x)
        return x

    def __call__(self, observation: jax.Array,
                 train: bool = False) -> tuple[jax.Array, jax.Array]:
        """predict(represent(observation)). While initialising it also runs dynamics and the
        projection with its predictor, so that `init` creates every parameter."""
        hidden = self.represent(observation)
        if self.is_initializing():
            action = jnp.zeros(hidden.shape[:1], jnp.int32)
            self.dynamics(hidden, action)
            self.project(hidden, True)
        return self.predict(hidden)


__all__ = ["MuZeroNet", "normalize_hidden", "MIN_HIDDEN_RANGE"]
