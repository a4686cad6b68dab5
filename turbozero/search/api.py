"""The one search contract: every search family answers `search(...)` with a `SearchResult`.

A search config names its family (`family`, a class attribute); families register themselves
by name with the function that runs them (`register_family`), as lc0 registers its search
algorithms, and `search` dispatches through that registry. This module imports no family, so
no family module needs another to be imported first (no import circle), and a family added
outside the library registers the same way. The families of the library (docs/search.md):

    tree        TreeSearchConfig          the library's jax.lax tree kernel (chance nodes,
                                          n-player values, Gumbel, risk, virtual loss, reuse)
    mctx        MctxConfig                DeepMind's mctx policies, kept as the reference
    graph       MCGSConfig                Monte-Carlo graph search, simultaneous games
    cpu         CPUSearchConfig           the C++ tree (node pool, worker threads), host-side
    one-ply     OnePlyConfig              every legal move valued by the network
    afterstate  AfterstatePlayerConfig    complete-move players, 0 / 1 / 2-ply expectimax
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional

import chex
import jax
import jax.numpy as jnp

from turbozero.networks.heads import check_value_format
from turbozero.networks.value_formats import (ScalarValue, ValueFormat, mover_to_seats,
                                              reports_wdl)
from turbozero.memory import check_search
from turbozero.search import checks


@dataclasses.dataclass(frozen=True)
class NetworkEvaluator:
    """A network seen by a search: `apply_fn(variables, obs) -> (policy_logits, value_out)`,
    with `value_format` saying what `value_out` means."""

    apply_fn: Callable[..., tuple[jax.Array, jax.Array]]
    value_format: ValueFormat = ScalarValue()

    def __post_init__(self) -> None:
        check_value_format(self.value_format)

    def __call__(self, variables: Any, observation: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(policy_logits [B, A], scalar value [B] in reward units for the player to move)."""
        logits, value_out = self.apply_fn(variables, observation)
        return logits, self.value_format.to_scalar(value_out)

    def evaluate(
        self, variables: Any, observation: jax.Array, mover: jax.Array, num_players: int
    ) -> tuple[jax.Array, jax.Array, Optional[jax.Array]]:
        """(policy_logits [B, A], values [B, num_players] in seat order, win/draw/loss
        float32[B, 3] for the player to move, or None): the last only for two players and a
        value format with a draw class (`wdl`), which the tree kernel averages at the root."""
        logits, value_out = self.apply_fn(variables, observation)
        values = self.value_format.to_player_values(value_out, mover, num_players)
        fmt = self.value_format
        wdl = fmt.wdl(value_out) if reports_wdl(fmt, num_players) else None
        return logits, values, wdl


@chex.dataclass(frozen=True)
class SearchResult:
    """What every search family returns for a batch of B roots.

    Turn-based games: `action` int32[B], `policy` float32[B, A]. Simultaneous games (one action
    per seat): `action` int32[B, P], `policy` float32[B, P, A].
    `root_value`: float32[B] the searched root value for the player to move (seat 0 in a
    simultaneous game); `root_values`: float32[B, P] the same per seat, in seat order.
    `root_wdl`: float32[B, 3] [P(win), P(draw), P(loss)] for the player to move, where the
    family and the value format give one (else None).
    `stats`: the family's own statistics, each an array with leading axis B (docs/search.md:
    e.g. the tree's `root_visits`, `max_depth`, `nodes_used`, `risk_value`).
    `plan`: int32[B, L] where the family chooses a whole turn of several actions (the
    complete-move players): the turn's actions in order, `plan[:, 0] == action`, padded with
    negative values; a caller may play them through without searching again mid-turn
    (`evaluation.play_outside_match` does). None for families that choose one action.
    """

    action: jax.Array
    policy: jax.Array
    root_value: jax.Array
    root_values: jax.Array
    root_wdl: Optional[jax.Array] = None
    stats: dict = dataclasses.field(default_factory=dict)
    plan: Optional[jax.Array] = None


def two_player_values(root_value: jax.Array, mover: jax.Array, num_players: int) -> jax.Array:
    """float32[B, 2] seat values of a zero-sum two-player game from the mover's value [B].
    ValueError for other player counts: a mover-relative scalar says nothing of a third seat."""
    if num_players != 2:
        raise ValueError(f"this search family values positions for the player to move only "
                         f"(two-player zero-sum); the game has {num_players} players: use the "
                         "tree kernel (TreeSearchConfig), which keeps one value per seat")
    return mover_to_seats(jnp.asarray(root_value, jnp.float32), mover, num_players)


class Family(NamedTuple):
    """A registered search family.

    run(env, evaluator, variables, states, key, config, risk_beta) -> SearchResult.
    jittable: `search` may be traced (False: host-side, e.g. the C++ path, called eagerly).
    risk_beta: the family takes per-seat entropic-risk betas float32[B, P].
    """

    name: str
    config_type: type
    run: Callable[..., SearchResult]
    jittable: bool = True
    risk_beta: bool = False


_FAMILIES: dict[str, Family] = {}


def register_family(name: str, config_type: type, run: Callable[..., SearchResult], *,
                    jittable: bool = True, risk_beta: bool = False) -> Family:
    """Register search family `name` for configs of `config_type` (whose `family` attribute
    must be `name`). Registering a name again replaces it (module reloads in notebooks)."""
    if not isinstance(config_type, type) or not dataclasses.is_dataclass(config_type):
        raise ValueError(f"family {name!r}: config_type must be a dataclass type, got "
                         f"{config_type!r}")
    if getattr(config_type, "family", None) != name:
        raise ValueError(f"family {name!r}: {config_type.__name__}.family must be {name!r}, "
                         f"got {getattr(config_type, 'family', None)!r}")
    family = Family(name, config_type, run, jittable, risk_beta)
    _FAMILIES[name] = family
    return family


def available_families() -> tuple[str, ...]:
    """The registered family names, sorted. The library's register when `turbozero.search` is
    imported (which importing this module does first)."""
    return tuple(sorted(_FAMILIES))


def family_of(config: Any) -> Family:
    """The registered family of a search config (ValueError naming the known ones if none)."""
    # a config's family registers when the config's module is imported, so a config that
    # exists has its family registered (the module registers the class it defines)
    name = getattr(type(config), "family", None)
    if name is None or name not in _FAMILIES:
        raise ValueError(f"not a search config: {config!r} (a search config is a dataclass "
                         f"naming a registered family; families: {', '.join(sorted(_FAMILIES))})")
    family = _FAMILIES[name]
    if not isinstance(config, family.config_type):
        raise ValueError(f"{type(config).__name__} names family {name!r}, which is registered "
                         f"for {family.config_type.__name__}")
    return family


def search(env: Any, evaluator: NetworkEvaluator, variables: Any, states: Any, key: jax.Array,
           config: Any, risk_beta: Optional[jax.Array] = None) -> SearchResult:
    """Search from a batch of states (leading axis B) with the family `config` names.

    Pure and jittable for every family but the host-side ones (`Family.jittable`; close over
    `env`, `evaluator` and `config`, which are static). `risk_beta` (float32[B, P], each seat's
    entropic-risk beta) is taken by the families that have a risk term (the tree kernel and
    the C++ path); the others raise ValueError for it rather than ignore it. Trees larger than
    the device's memory (the config's `tree_shapes`, turbozero/memory.py) are a ValueError
    naming the settings, raised before the family runs (docs/search.md, "What search checks").
    """
    family = family_of(config)
    if not family.jittable and any(isinstance(leaf, jax.core.Tracer)
                                   for leaf in jax.tree_util.tree_leaves((states, key))):
        raise ValueError(f"the {family.name!r} search family ({type(config).__name__}) runs "
                         "on the host and cannot be traced: call search() outside jax.jit / "
                         "vmap (its network calls are compiled inside it)")
    if risk_beta is not None and not family.risk_beta:
        raise ValueError(f"per-seat risk betas need a family with a risk term (tree, cpu); "
                         f"the {family.name!r} family ({type(config).__name__}) has none")
    # at trace time, on shapes: a batch of states, an evaluator of the env's width
    # (turbozero/search/checks.py); the host-side families check their evaluator's outputs
    # themselves, and the graph family its two-player network (mcgs._as_logits)
    batch = checks.check_batch(env, states)
    if family.jittable and isinstance(evaluator, NetworkEvaluator) and not env.is_simultaneous:
        checks.check_evaluator(env, evaluator, variables, states, batch)
    # the trees the search will hold, from the config's own shapes, against the memory they
    # must fit: one line naming the settings instead of XLA's out-of-memory traceback
    # (turbozero/memory.py; at trace time for the jittable families, remembered per shapes)
    fmt = getattr(evaluator, "value_format", None)
    apply_fn = getattr(evaluator, "apply_fn", None)
    check_search(config, env, states,
                 with_wdl=reports_wdl(fmt, env.num_players),
                 network=None if apply_fn is None else (apply_fn, variables))
    if not (family.jittable and checks.evaluator_checks_enabled()):
        return family.run(env, evaluator, variables, states, key, config, risk_beta)
    # the debug switch: every network call checked on the host for non-finite outputs
    evaluator = checks.with_checked_outputs(evaluator, family.name)
    traced = any(isinstance(leaf, jax.core.Tracer)
                 for leaf in jax.tree_util.tree_leaves((variables, states, key)))
    if traced:  # the caller's compiled function raises; cli.main says its line
        return family.run(env, evaluator, variables, states, key, config, risk_beta)
    try:
        return jax.block_until_ready(
            family.run(env, evaluator, variables, states, key, config, risk_beta))
    except checks.NonFiniteEvaluation as err:
        raise ValueError(checks.evaluator_error_line(err) or str(err)) from None
    except jax.errors.JaxRuntimeError as err:
        line = checks.evaluator_error_line(err)
        if line is None:
            raise
        raise ValueError(line) from None


__all__ = ["Family", "NetworkEvaluator", "SearchResult", "available_families",
           "family_of", "register_family", "search", "two_player_values"]
