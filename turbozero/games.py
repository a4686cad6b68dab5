"""What a game plugs into the loop: its value head, network trunk and default settings.

The loop, search and losses are shared; a game only says which value format its head outputs
(`turbozero.networks.value_formats`) and which trunk reads its observation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import flax.linen as nn

from envs.core import Env
from turbozero.networks import MLPNet, ResNet, TwoPlayerNet
from turbozero.networks.value_formats import (
    FourWayValue,
    SeatValues,
    ValueFormat,
    WDLValue,
)


@dataclasses.dataclass(frozen=True)
class Referee:
    """An outside program a game can be evaluated against, from an optional package."""

    name: str  # the `eval_opponents` / `--opponent` name
    module: str  # the module it imports
    install: str  # the command that brings it


@dataclasses.dataclass(frozen=True)
class GameSpec:
    name: str
    value_format: ValueFormat  # what the value head outputs (turbozero.networks.value_formats)
    trunk: str  # "mlp" (flat), "resnet" (boards, channels-last), "two_player" (simultaneous)
    notes: str = ""
    referees: tuple = ()  # Referee opponents beyond random and greedy


GAMES: dict[str, GameSpec] = {
    "backgammon": GameSpec("backgammon", FourWayValue(), "mlp", "4-way conditional value head (equity)",
                           (Referee("gnubg", "gnubg", 'pip install -e ".[backgammon]"'),)),
    "chess": GameSpec("chess", WDLValue(), "resnet", "WDL value head, alphazero-chess.md §3.4"),
    "pacosako": GameSpec("pacosako", WDLValue(), "resnet", "WDL value head"),
    "pyrat": GameSpec("pyrat", SeatValues(2), "two_player", "two policies, the cheese each will collect"),
    "pgx/tic_tac_toe": GameSpec("pgx/tic_tac_toe", WDLValue(), "mlp", "small test game"),
    "pgx/connect_four": GameSpec("pgx/connect_four", WDLValue(), "mlp", "small test game"),
}


def game_spec(name: str) -> GameSpec:
    if name not in GAMES:
        raise ValueError(f"no training set-up for game {name!r}; known: {', '.join(sorted(GAMES))}")
    return GAMES[name]


def build_network(spec: GameSpec, env: Env, network_config: dict[str, Any]) -> nn.Module:
    """The trunk of `spec` with policy logits over `env.num_actions` and the game's value head."""
    cfg = dict(network_config)
    if spec.trunk == "mlp":
        sizes = tuple(cfg.pop("hidden_sizes", (128, 128)))
        if cfg:
            raise ValueError(f"unknown MLP network options: {sorted(cfg)}")
        return MLPNet(env.num_actions, spec.value_format, hidden_sizes=sizes)
    if spec.trunk == "resnet":
        allowed = {"num_filters", "num_blocks", "value_hidden"}
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
