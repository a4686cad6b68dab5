"""Value formats: what a network's value head outputs, and everything that depends on it.

One object per format holds, in one place: the head's output size and activation, the
conversion to the search's values (a scalar for the player to move, or one value per player in
seat order), and the value loss against the returns stored in replay. A game picks its format
in `turbozero.games`; the network, the search evaluator and the loss all read the same object,
so no integer kind has to be interpreted in three places.

Returns in replay are `float32[B, num_players]` in seat order (each player's return from the
position to the end of the game) and `mover` is `int32[B]`, the seat to move at the position.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import optax

from equity import reward_to_value_targets, value_outputs_to_equity


def mover_to_seats(mover_value, mover, num_players: int):
    """float32[..., P]: the values in seat order of a zero-sum game of one or two players, from
    `mover_value [...]`, the value for the player to move (`mover [...]`): the mover's seat gets
    it, the other seat its negation. The one place this conversion is written: the value
    formats, the search families, the tree kernel's model and the C++ path's replay writer
    use it. numpy in, numpy out (the C++ path's host side); else jax. ValueError for more than
    two players: a mover's scalar says nothing of a third seat."""
    if num_players > 2:
        raise ValueError(f"a value for the player to move gives the seats' values of a zero-sum "
                         f"game of two players; the game has {num_players} players: use a value "
                         "format with one value per seat (MoverRelativeValues, SeatValues) and "
                         "the tree kernel (TreeSearchConfig), which keeps one value per seat")
    xp = np if isinstance(mover_value, np.ndarray) and isinstance(mover, np.ndarray) else jnp
    value = xp.asarray(mover_value)[..., None]
    seat_is_mover = xp.arange(num_players) == xp.asarray(mover)[..., None]
    return xp.where(seat_is_mover, value, -value)


def reports_wdl(value_format, num_players: int) -> bool:
    """Whether searches keep a win/draw/loss average for `value_format` (None: a plain
    evaluator with none): a format with a draw class, in a two-player game. The one place this
    rule is written (the search contract, the C++ path, the memory bound)."""
    return value_format is not None and value_format.has_wdl and num_players == 2


class ValueFormat(abc.ABC):
    """Base class; subclasses are frozen dataclasses (hashable, so jit may close over them)."""

    name: str = ""
    # capabilities, declared rather than discovered with hasattr: `has_wdl` formats give
    # `wdl(value_out)` (win / draw / loss probabilities, averaged at the search's root);
    # `has_outcomes` formats give outcome distributions (`expected_outcome`, `flip_outcome`,
    # `outcome_of`, `outcome_loss`), which afterstate TD learns
    has_wdl: ClassVar[bool] = False
    has_outcomes: ClassVar[bool] = False

    @property
    @abc.abstractmethod
    def out_size(self) -> int:
        """Units of the value head's last dense layer."""

    def activate(self, raw: jax.Array) -> jax.Array:
        """The head's output from its last dense layer `raw [..., out_size]` (default: as is)."""
        return raw

    @abc.abstractmethod
    def to_scalar(self, value_out: jax.Array) -> jax.Array:
        """float32[...]: the value for the player to move, in the game's reward units."""

    def to_player_values(
        self, value_out: jax.Array, mover: jax.Array, num_players: int
    ) -> jax.Array:
        """float32[..., num_players]: one value per seat. Default (two-player zero-sum
        formats): the mover gets `to_scalar`, the other seat its negation."""
        if num_players != 2:
            raise ValueError(
                f"{type(self).__name__} gives one value for the mover, which only determines "
                f"the others' in a two-player zero-sum game, not with {num_players} players; "
                "use MoverRelativeValues or SeatValues")
        return mover_to_seats(self.to_scalar(value_out), mover, num_players)

    @abc.abstractmethod
    def loss(
        self, value_out: jax.Array, returns: jax.Array, mover: jax.Array
    ) -> tuple[jax.Array, dict]:
        """(scalar loss, metrics) of the head's outputs against the stored returns."""


def _mover_return(returns: jax.Array, mover: jax.Array) -> jax.Array:
    return jnp.take_along_axis(returns, mover[..., None], axis=-1)[..., 0]


def _clipped_share(target: jax.Array) -> dict:
    """The batch's share of value targets beyond [-1, 1], which a bounded head's loss clips:
    reported as `value_targets_clipped` so that a game or a `truncated_games` scoring with
    larger returns shows in the metrics instead of training on silently altered targets."""
    return {"value_targets_clipped": jnp.mean((jnp.abs(target) > 1.0).astype(jnp.float32))}


@dataclasses.dataclass(frozen=True)
class ScalarValue(ValueFormat):
    """A tanh value in [-1, 1] for the player to move; MSE against the outcome."""

    name: str = "scalar"

    @property
    def out_size(self) -> int:
        return 1

    def activate(self, raw: jax.Array) -> jax.Array:
        return jnp.tanh(raw[..., 0])

    def to_scalar(self, value_out: jax.Array) -> jax.Array:
        return value_out

    def loss(self, value_out, returns, mover):
        # Returns beyond ±1 (e.g. points of a multi-point game) are clipped into the tanh
        # range, and counted in the metrics
        raw = _mover_return(returns, mover)
        target = jnp.clip(raw, -1.0, 1.0)
        return jnp.mean((value_out - target) ** 2), _clipped_share(raw)


def outcome_to_wdl(outcome: jax.Array) -> jax.Array:
    """[win, draw, loss] target of a scalar outcome, clipped to [-1, 1]: one-hot for 1, 0 and
    -1; between them the draw shares the mass, e.g. 0.4 -> [0.4, 0.6, 0], so the target's
    P(win) - P(loss) is the outcome (a game scored by degree, `turbozero.games.chess.adjudication.MaterialScore`).
    """
    o = jnp.clip(outcome.astype(jnp.float32), -1.0, 1.0)
    win = jnp.maximum(o, 0.0)
    loss = jnp.maximum(-o, 0.0)
    return jnp.stack([win, 1.0 - win - loss, loss], axis=-1)


@dataclasses.dataclass(frozen=True)
class WDLValue(ValueFormat):
    """Logits of [win, draw, loss] for the player to move (docs/chess.md, docs/training.md);
    the scalar value is P(win) - P(loss)."""

    name: str = "wdl"
    has_wdl: ClassVar[bool] = True

    @property
    def out_size(self) -> int:
        return 3

    def to_scalar(self, value_out: jax.Array) -> jax.Array:
        p = jax.nn.softmax(value_out, axis=-1)
        return p[..., 0] - p[..., 2]

    def wdl(self, value_out: jax.Array) -> jax.Array:
        """float32[..., 3] probabilities (the search averages them at the root, docs/search.md)."""
        return jax.nn.softmax(value_out, axis=-1)

    def loss(self, value_out, returns, mover):
        raw = _mover_return(returns, mover)
        target = outcome_to_wdl(raw)  # clipped to [-1, 1], counted in the metrics
        return optax.softmax_cross_entropy(value_out, target).mean(), _clipped_share(raw)


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


@dataclasses.dataclass(frozen=True)
class FourWayValue(ValueFormat):
    """Backgammon's 4-way conditional head (docs/equity.md): logits of
    [win, gammon win | win, gammon loss | loss, backgammon rate]. The scalar is cubeless money
    equity in points, the unit of the env's rewards (docs/search.md, "Values and signs")."""

    name: str = "four_way"
    has_outcomes: ClassVar[bool] = True

    @property
    def out_size(self) -> int:
        return 4

    def to_scalar(self, value_out: jax.Array) -> jax.Array:
        return value_outputs_to_equity(jax.nn.sigmoid(value_out))

    def loss(self, value_out, returns, mover):
        reward = _mover_return(returns, mover)
        # reward_to_value_targets needs a decided game: positions of games cut without a
        # result (reward 0, e.g. a step cap) are left out of the value loss.
        decided = reward != 0
        targets, masks = reward_to_value_targets(jnp.where(decided, reward, 1.0))
        masks = masks * decided[..., None]
        probs = jax.nn.sigmoid(value_out)
        metrics = {
            "pred_win": probs[:, 0].mean(),
            "pred_gam_win_cond": probs[:, 1].mean(),
            "pred_gam_loss_cond": probs[:, 2].mean(),
            "pred_bg_rate": probs[:, 3].mean(),
            "target_win": targets[:, 0].mean(),
        }
        return four_way_value_loss(value_out, targets, masks), metrics

    # -- afterstate TD learning (turbozero.training.td): a target is a distribution over the
    # game's outcomes, kept as joint probabilities, which mix linearly (a lambda-return is a
    # weighted mix of later estimates); the conditional head is trained on it with soft
    # targets and the probabilities of the conditions as masks, which is the masked 4-way loss
    # of the spec in expectation over the outcomes.
    outcome_size = 4

    def expected_outcome(self, value_out: jax.Array) -> jax.Array:
        """float32[..., 4] joint [P(win), P(gammon win), P(gammon loss), P(backgammon)] for
        the player the value belongs to, from the head's logits."""
        w, gwc, glc, bgr = jnp.moveaxis(jax.nn.sigmoid(value_out.astype(jnp.float32)), -1, 0)
        gw, gl = w * gwc, (1.0 - w) * glc
        return jnp.stack([w, gw, gl, (gw + gl) * bgr], axis=-1)

    def flip_outcome(self, joint: jax.Array) -> jax.Array:
        """The same distribution seen by the other player."""
        return jnp.stack([1.0 - joint[..., 0], joint[..., 2], joint[..., 1], joint[..., 3]],
                         axis=-1)

    def outcome_of(self, points: jax.Array) -> jax.Array:
        """The joint of a finished game in which the player scored `points` (±1, ±2, ±3)."""
        points = jnp.asarray(points, jnp.float32)
        won, gammon, bg = points > 0, jnp.abs(points) >= 2, jnp.abs(points) >= 3
        return jnp.stack([won, won & gammon, ~won & gammon, bg], axis=-1).astype(jnp.float32)

    def outcome_loss(self, value_out: jax.Array, joint: jax.Array) -> tuple[jax.Array, dict]:
        """The masked 4-way loss against the outcome distribution `joint` [B, 4]: targets
        [P(win), P(gammon | win), P(gammon | loss), P(bg | gammon)], masks [1, P(win),
        P(loss), P(gammon)] (a one-hot joint gives the spec's targets and masks exactly)."""
        w, gw, gl, bg = jnp.moveaxis(joint, -1, 0)
        eps = 1e-6
        gammon = gw + gl
        targets = jnp.stack([w, gw / jnp.maximum(w, eps), gl / jnp.maximum(1.0 - w, eps),
                             bg / jnp.maximum(gammon, eps)], axis=-1)
        masks = jnp.stack([jnp.ones_like(w), w, 1.0 - w, gammon], axis=-1)
        targets = jnp.clip(targets, 0.0, 1.0)
        probs = jax.nn.sigmoid(value_out)
        metrics = {"pred_win": probs[:, 0].mean(), "target_win": w.mean(),
                   "pred_gam_win_cond": probs[:, 1].mean(), "pred_bg_rate": probs[:, 3].mean()}
        return four_way_value_loss(value_out, targets, masks), metrics


@dataclasses.dataclass(frozen=True)
class SeatValues(ValueFormat):
    """One unbounded value per seat, in seat order (PyRat: the cheese each player will still
    collect); MSE summed over the seats."""

    num_players: int = 2
    name: str = "seat_values"

    def __post_init__(self) -> None:
        if self.num_players < 1:
            raise ValueError(f"num_players must be >= 1, got {self.num_players}")

    @property
    def out_size(self) -> int:
        return self.num_players

    def to_scalar(self, value_out: jax.Array) -> jax.Array:
        raise ValueError("SeatValues has no single mover's value; use to_player_values")

    def to_player_values(self, value_out, mover, num_players):
        del mover
        _check_players(self.num_players, num_players)
        return value_out

    def loss(self, value_out, returns, mover):
        del mover
        return jnp.mean(jnp.sum((value_out - returns) ** 2, axis=-1)), {}


@dataclasses.dataclass(frozen=True)
class MoverRelativeValues(ValueFormat):
    """One tanh value per player in turn order from the mover: (me, next, previous) for three
    players (docs/gomoku.md). Seat `s` is entry `(s - mover) mod num_players`."""

    num_players: int = 3
    name: str = "mover_relative_values"

    def __post_init__(self) -> None:
        if self.num_players < 2:
            raise ValueError(f"num_players must be >= 2, got {self.num_players}")

    @property
    def out_size(self) -> int:
        return self.num_players

    def activate(self, raw: jax.Array) -> jax.Array:
        return jnp.tanh(raw)

    def to_scalar(self, value_out: jax.Array) -> jax.Array:
        return value_out[..., 0]

    def to_player_values(self, value_out, mover, num_players):
        _check_players(self.num_players, num_players)
        seats = jnp.arange(num_players)
        rel = (seats - jnp.asarray(mover)[..., None]) % num_players  # [..., P]
        return jnp.take_along_axis(value_out, rel, axis=-1)

    def from_seat_values(self, seat_values: jax.Array, mover: jax.Array) -> jax.Array:
        """The inverse of `to_player_values`: seat order -> (me, next, ...) order."""
        n = self.num_players
        rel = (jnp.asarray(mover)[..., None] + jnp.arange(n)) % n
        return jnp.take_along_axis(seat_values, rel, axis=-1)

    def loss(self, value_out, returns, mover):
        target = jnp.clip(self.from_seat_values(returns, mover), -1.0, 1.0)
        return jnp.mean(jnp.sum((value_out - target) ** 2, axis=-1)), {}


def _check_players(own: int, asked: int) -> None:
    if own != asked:
        raise ValueError(f"this value head has {own} players' values, the game has {asked}")
