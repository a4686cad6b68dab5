"""What a game plugs into the loop: its value head, network trunk and default settings.

The loop, search and losses are shared; a game only says which value format its head outputs
(`turbozero.networks.value_formats`) and which trunk reads its observation.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import flax.linen as nn
import jax

from envs.core import Env
from turbozero.games.chess.referees import (STOCKFISH_OPPONENT_INSTALL, material_policy,
                                      stockfish_match)
from turbozero.networks import MLPNet, ResNet, TwoPlayerNet
from turbozero.networks.value_formats import (
    FourWayValue,
    MoverRelativeValues,
    SeatValues,
    ValueFormat,
    WDLValue,
)


@dataclasses.dataclass(frozen=True)
class Opponent:
    """An evaluation opponent a game registers (beyond random and the algorithm's own greedy).

    Either `policy(env)` builds a jittable policy `(variables, states, key) -> actions`, played
    by `evaluation.play_match`; or `match(env, agent, variables, key, num_games, max_steps)`
    plays the whole evaluation itself (an outside program that cannot run under jit) and
    returns `evaluation.match_summary`. `module` / `install`: the optional package it needs.
    """

    name: str  # the `eval_opponents` / `--opponent` name
    description: str  # one line: what it is (shown next to its results)
    policy: Optional[Callable] = None
    match: Optional[Callable] = None
    module: Optional[str] = None  # the module it imports, if any
    install: str = ""  # the command that brings that module

    def __post_init__(self) -> None:
        if (self.policy is None) == (self.match is None):
            raise ValueError(f"opponent {self.name!r} needs exactly one of policy or match")


def _pyrat_greedy(env: Env) -> Callable:
    def policy(variables, states, key):
        del variables, key
        return jax.vmap(env.greedy_actions)(states)

    return policy


def _gomoku_extender(env: Env) -> Callable:
    from envs._src.gomoku.extender import line_extender

    return line_extender(env)


def _gnubg_match(env, agent, variables, key, num_games, max_steps):
    from turbozero.games.backgammon.gnubg_match import play_against_gnubg

    return play_against_gnubg(env, agent, variables, key, num_games, max_steps)


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

    @property
    def referees(self) -> tuple:
        """The registered opponents that need an optional package."""
        return tuple(o for o in self.opponents if o.module is not None)


GAMES: dict[str, GameSpec] = {
    "backgammon": GameSpec("backgammon", FourWayValue(), "mlp", "4-way conditional value head (equity)",
                           (Opponent("gnubg", "gnubg = GNU Backgammon at 0-ply (its neural net, "
                                     "no lookahead)", match=_gnubg_match, module="gnubg",
                                     install='pip install -e ".[backgammon]"'),),
                           move_text="envs._src.backgammon.moves_text:MOVE_TEXT"),
    "chess": GameSpec("chess", WDLValue(), "resnet", "WDL value head, docs/chess.md",
                      (Opponent("material", "material = 1-ply material-greedy (P1 N3 B3 R5 Q9, "
                                "mate first, ties at random)", policy=material_policy),
                       Opponent("stockfish", "stockfish = Stockfish at skill level 0, depth 1 "
                                "(its weakest)", match=stockfish_match, module="chess",
                                install=STOCKFISH_OPPONENT_INSTALL))),
    "pacosako": GameSpec("pacosako", WDLValue(), "resnet", "WDL value head"),
    "pyrat": GameSpec("pyrat", SeatValues(2), "two_player", "two policies, the cheese each will collect",
                      (Opponent("greedy", "greedy = shortest path to the nearest cheese "
                                "(envs.pyrat.greedy_actions)", policy=_pyrat_greedy),)),
    # the MuZero set-up is 3-player (the spec's); MuZero builds its own model
    # (turbozero.networks.muzero), the trunk serves AlphaZero on gomoku
    "gomoku": GameSpec("gomoku", MoverRelativeValues(3), "resnet",
                       "3 players, (me, next, prev) values, MuZero, docs/gomoku.md",
                       (Opponent("greedy", "greedy = line extender (wins, blocks, else extends "
                                 "its longest line)", policy=_gomoku_extender),)),
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
