"""What a game plugs into the loop, as types: its `GameSpec` (value head, network trunk,
evaluation opponents) and `build_network`, the trunk a spec names. Each game's spec is in its
own package (`turbozero/games/<game>/__init__.py`), collected in `turbozero.games.GAMES`."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import flax.linen as nn

from envs.core import Env
from turbozero.networks import MLPNet, ResNet, TwoPlayerNet
from turbozero.networks.value_formats import ValueFormat


@dataclasses.dataclass(frozen=True)
class Opponent:
    """An evaluation opponent a game registers (beyond random and the algorithm's own greedy).

    Either `policy(env)` builds a jittable policy `(variables, states, key) -> actions`, played
    by `evaluation.play_match`; or `match(env, agent, variables, key, num_games, max_steps)`
    plays the whole evaluation itself (an outside program that cannot run under jit) and
    returns `evaluation.match_summary`. `module` / `install`: the optional package it needs.
    `duplicate`: its `match` plays duplicate games by default (pairs of games with the same
    chance, seats swapped) and takes `duplicate=False` for independent games.
    """

    name: str  # the `eval_opponents` / `--opponent` name
    description: str  # one line: what it is (shown next to its results)
    policy: Optional[Callable] = None
    match: Optional[Callable] = None
    module: Optional[str] = None  # the module it imports, if any
    install: str = ""  # the command that brings that module
    duplicate: bool = False  # its match plays duplicate pairs by default (`duplicate=` kwarg)

    def __post_init__(self) -> None:
        if (self.policy is None) == (self.match is None):
            raise ValueError(f"opponent {self.name!r} needs exactly one of policy or match")
        if self.duplicate and self.match is None:
            raise ValueError(f"opponent {self.name!r}: duplicate games need a match")


@dataclasses.dataclass(frozen=True)
class GameSpec:
    name: str
    value_format: ValueFormat  # what the value head outputs (turbozero.networks.value_formats)
    trunk: str  # "mlp" (flat), "resnet" (boards, channels-last), "two_player" (simultaneous)
    notes: str = ""
    opponents: tuple = ()  # Opponent objects beyond random and the algorithm's greedy
    # "module:attribute" of the game's complete-move text for `turbozero play` (a person
    # against a run's agent; turbozero.play.MoveText); "" where the game has none
    move_text: str = ""
    # "module:attribute" of the game's error-rate analysis for `turbozero error-rate`
    # (`report(run_dir, positions=, seed=, judge_plies=, plies=, as_json=, cache=, progress=)`
    # -> text); "" where the game has none
    error_rate: str = ""

    @property
    def referees(self) -> tuple:
        """The registered opponents that need an optional package."""
        return tuple(o for o in self.opponents if o.module is not None)


def build_network(spec: GameSpec, env: Env, network_config: dict[str, Any]) -> nn.Module:
    """The trunk of `spec` with policy logits over `env.num_actions` and the game's value head."""
    cfg = dict(network_config)
    if spec.trunk == "mlp":
        sizes = cfg.pop("hidden_sizes", (128, 128))
        # a string or a number is not a tuple of widths (tuple("64") was ("6", "4")); a list,
        # as JSON gives it, is one (MLPNet checks the widths)
        sizes = tuple(sizes) if isinstance(sizes, list) else sizes
        split = cfg.pop("phase_split", None)
        if cfg:
            raise ValueError(f"unknown MLP network options: {sorted(cfg)}")
        # the env says which observation unit holds the phase (None: its observation has none)
        unit = getattr(env, "phase_unit", None)
        if split is not None and unit is None:
            raise ValueError(f"network phase_split={split!r} needs an observation with a phase "
                             f"unit, and {type(env).__name__}'s (env.phase_unit) has none: "
                             f"choose an observation encoding with one (the game's page in "
                             f"docs/) or drop phase_split")
        return MLPNet(env.num_actions, spec.value_format, hidden_sizes=sizes,
                      phase_split=split, phase_unit=unit if split is not None else None)
    if spec.trunk == "resnet":
        allowed = {"num_filters", "num_blocks", "value_hidden", "compute_dtype"}
        if set(cfg) - allowed:
            raise ValueError(f"unknown ResNet network options: {sorted(set(cfg) - allowed)}")
        return ResNet(env.num_actions, spec.value_format, **cfg)
    if spec.trunk == "two_player":
        allowed = {"num_filters", "num_layers", "hidden", "gather_planes", "opponent_view"}
        if set(cfg) - allowed:
            raise ValueError(f"unknown two-player network options: {sorted(set(cfg) - allowed)}")
        # the env may say which planes locate the players (envs.pyrat.PLAYER_PLANES)
        cfg.setdefault("gather_planes", getattr(env, "player_planes", None))
        if cfg["gather_planes"] is not None:
            cfg["gather_planes"] = tuple(int(p) for p in cfg["gather_planes"])
        # ... and how player 2's view relates to player 1's (one set of weights for both)
        cfg.setdefault("opponent_view", getattr(env, "opponent_view", None))
        if cfg["opponent_view"] is not None:
            cfg["opponent_view"] = tuple(tuple(int(i) for i in p) for p in cfg["opponent_view"])
        return TwoPlayerNet(num_actions=env.num_actions, **cfg)
    raise ValueError(f"unknown trunk {spec.trunk!r}")
