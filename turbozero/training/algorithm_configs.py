"""The algorithm a run trains with, named explicitly: `TrainConfig.algorithm`, the one registry.

    TrainConfig(game, algorithm=AlphaZero(search=TreeSearchConfig(num_simulations=64),
                                          acting=TemperatureSchedule(1.0, moves=30)))
    TrainConfig(game, algorithm=GraphSearch(search=MCGSConfig(num_simulations=32)))
    TrainConfig(game, algorithm=TD(search=TDConfig(td_lambda=0.7)))

Which game each suits is the game's business: its presets (`turbozero.presets`) name theirs, and
docs/training.md, "Algorithms", lists what each needs of an env.

Each class is a frozen config dataclass (stored in a run's JSON like every config): the
self-play `search`, how self-play picks its move (`acting`, defined here and nowhere else in a
training run), and the evaluation player (`eval_search`; None: the self-play search made
deterministic, `search.for_evaluation()`). It names the searches it trains with (`searches`)
and builds its own runtime (`runtime()`, a `training.algorithms.Algorithm` class; `build`):
AlphaZero runs the C++ self-play (`CPUAlphaZero`) for a `CPUSelfPlayConfig` search. Nothing
looks an algorithm up by the type of its search; `ALGORITHM_CONFIGS` is only the list that
names the owner of a search in an error and converts a search into its algorithm
(`algorithm_for_search`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

from turbozero.games import build_network
from turbozero.search.acting import TemperatureSchedule
from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.search.api import family_of
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.learned import LearnedModelSearch
from turbozero.search.mcgs import MCGSConfig
from turbozero.search.mctx_policies import MctxConfig
from turbozero.search.one_ply import OnePlyConfig
from turbozero.training.algorithms import (AlphaZeroAlgorithm, GraphSearchAlgorithm,
                                           evaluation_search)
from turbozero.training.cpu_alphazero import CPUAlphaZero
from turbozero.training.muzero import MuZeroAlgorithm, MuZeroConfig, muzero_network
from turbozero.training.td import AfterstateTD, TDConfig


class AlgorithmConfig:
    """What every algorithm config does; a subclass names the searches it trains with
    (`searches`), the evaluation players it takes (`eval_searches`) and its runtime."""

    search: Any
    eval_search: Any
    acting: Any
    # the network's name in a run's identity when the algorithm builds its own (None: the
    # game's trunk)
    network_name: ClassVar[Any] = None
    # the self-play search configs this algorithm trains with, and the evaluation players
    # (besides None, the self-play search made deterministic) its network can be played by
    searches: ClassVar[tuple[type, ...]] = ()
    eval_searches: ClassVar[tuple[type, ...]] = ()

    @classmethod
    def trains_with(cls, search: Any) -> bool:
        """Whether `search` is a self-play search of this algorithm."""
        return isinstance(search, cls.searches)

    @classmethod
    def evaluates_with(cls, search: Any) -> bool:
        """Whether `search` is an evaluation player this algorithm's network can be played by
        (besides None, the self-play search made deterministic)."""
        return isinstance(search, cls.eval_searches)

    def check(self) -> None:
        """ValueError unless `search` is one of this algorithm's (naming the algorithm whose
        it is) and `eval_search` one its network can be played by."""
        if not self.trains_with(self.search):
            owner = algorithm_for_search(self.search).__name__  # ValueError for no one's
            raise ValueError(f"{type(self).__name__} does not train with a "
                             f"{type(self.search).__name__} search; use {owner}(search=...)")
        if self.eval_search is not None and not self.evaluates_with(self.eval_search):
            raise ValueError(f"eval_search is a {type(self.eval_search).__name__} but the "
                             f"self-play search a {type(self.search).__name__}: use one kind "
                             f"({', '.join(t.__name__ for t in self.eval_searches)})")

    def runtime(self) -> type:
        """The runtime `Algorithm` class that runs this config."""
        raise NotImplementedError

    def build_network(self, spec: Any, env: Any, network_config: dict) -> Any:
        """The flax module the algorithm trains: the game's trunk and value head
        (`turbozero.games.build_network`); MuZero builds its learned model."""
        return build_network(spec, env, network_config)

    def build(self, env: Any, apply_fn: Any, value_format: Any) -> Any:
        """The runtime algorithm for `env`, checked against it (ValueError if unsuitable)."""
        return self.runtime()(env, functools.partial(apply_fn, train=False), value_format,
                              self.search, self.eval_search, self.acting)

    def evaluation_player(self) -> Any:
        """The search evaluation plays: `eval_search`, or where it is None the self-play search
        made deterministic (what `--set algorithm.eval_search.x=...` edits)."""
        return evaluation_search(self.search) if self.eval_search is None else self.eval_search


@dataclasses.dataclass(frozen=True)
class _SearchAndActing(AlgorithmConfig):
    """The fields of an algorithm that acts by a temperature schedule on its policy target."""

    search: Any = None  # each algorithm sets its own default
    acting: TemperatureSchedule = TemperatureSchedule()
    eval_search: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.acting, TemperatureSchedule):
            raise ValueError("acting must be a TemperatureSchedule, got "
                             f"{type(self.acting).__name__}")


# the searches of the library's kernel, mctx and the 1-ply / complete-move players: what an
# AlphaZero network searches with (the C++ self-play is converted to the kernel for evaluation)
_ALPHAZERO_SEARCHES = (TreeSearchConfig, MctxConfig, OnePlyConfig, AfterstatePlayerConfig)


@dataclasses.dataclass(frozen=True)
class AlphaZero(_SearchAndActing):
    """Tree search over the true dynamics of a turn-based game; policy target = the search's
    visit distribution, value target = the game's return.

    search: `TreeSearchConfig` (the library's kernel, the default), `MctxConfig` (mctx) or
    `CPUSelfPlayConfig` (the C++ tree, self-play outside jit), or the config of any jittable
    search family registered outside the library (`register_family`; no algorithm names it).
    acting: self-play plays
    `acting.temperature` on the policy target for the first `acting.moves` moves, then its
    argmax. eval_search: None, any of the searches above, `OnePlyConfig` or
    `AfterstatePlayerConfig` (the value head alone)."""

    search: Any = TreeSearchConfig()
    searches: ClassVar[tuple[type, ...]] = _ALPHAZERO_SEARCHES + (CPUSelfPlayConfig,)
    eval_searches: ClassVar[tuple[type, ...]] = searches

    @classmethod
    def trains_with(cls, search: Any) -> bool:
        return isinstance(search, cls.searches) or _unclaimed_family(search)

    evaluates_with = trains_with  # the same searches play in evaluation

    def runtime(self) -> type:
        return CPUAlphaZero if isinstance(self.search, CPUSelfPlayConfig) else AlphaZeroAlgorithm


@dataclasses.dataclass(frozen=True)
class GraphSearch(_SearchAndActing):
    """Monte-Carlo graph search (decoupled PUCT per player) for simultaneous-move games; one
    policy target per player, one value per seat. search: an `MCGSConfig`; acting and
    eval_search as `AlphaZero`'s."""

    search: Any = MCGSConfig()
    searches: ClassVar[tuple[type, ...]] = (MCGSConfig,)
    eval_searches: ClassVar[tuple[type, ...]] = (MCGSConfig,)

    def runtime(self) -> type:
        return GraphSearchAlgorithm


@dataclasses.dataclass(frozen=True)
class MuZero(_SearchAndActing):
    """A learned model searched by the kernel (`turbozero.training.muzero`). search: a
    `MuZeroConfig` (the kernel's settings, unroll and loss weights); acting and eval_search as
    `AlphaZero`'s."""

    search: Any = MuZeroConfig()
    network_name: ClassVar[str] = "muzero"
    searches: ClassVar[tuple[type, ...]] = (MuZeroConfig,)
    eval_searches: ClassVar[tuple[type, ...]] = (MuZeroConfig,)

    def runtime(self) -> type:
        return MuZeroAlgorithm

    def build_network(self, spec: Any, env: Any, network_config: dict) -> Any:
        return muzero_network(env, network_config)


@dataclasses.dataclass(frozen=True)
class TD(AlgorithmConfig):
    """Afterstate TD(lambda) with complete-move self-play (`turbozero.training.td`). search: a
    `TDConfig`, whose `exploration` is how self-play acts (a uniformly random complete move
    with that probability, else its player's best): TD has no temperature schedule.
    eval_search: None (the self-play player) or an `AfterstatePlayerConfig`."""

    search: Any = TDConfig()
    eval_search: Any = None
    acting: ClassVar[None] = None  # acting is TDConfig.exploration (docstring)
    searches: ClassVar[tuple[type, ...]] = (TDConfig,)
    eval_searches: ClassVar[tuple[type, ...]] = (AfterstatePlayerConfig,)

    def runtime(self) -> type:
        return AfterstateTD

    def evaluation_player(self) -> Any:
        return self.search.player if self.eval_search is None else self.eval_search


# the algorithms: the owner of a search is named from these (`algorithm_for_search`), in order
ALGORITHM_CONFIGS: list[type] = [AlphaZero, GraphSearch, MuZero, TD]


def _unclaimed_family(search: Any) -> bool:
    """Whether `search` is the config of a registered, jittable search family that no
    algorithm names (a family added with `turbozero.search.register_family` alone): AlphaZero
    trains with it, its policy as the target, so that one registration is all a new family
    needs (tests/training/test_algorithm_configs.py, the toy family)."""
    try:
        family = family_of(search)
    except ValueError:
        return False
    named = any(isinstance(search, cls.searches + cls.eval_searches) for cls in ALGORITHM_CONFIGS)
    # the `learned` family searches MuZero's model, which MuZero reaches through MuZeroConfig
    return family.jittable and not named and not isinstance(search, LearnedModelSearch)


def register_algorithm_config(config_type: type) -> None:
    """Add an algorithm (a class like those above) to those a search's owner is found among."""
    if not (isinstance(config_type, type) and issubclass(config_type, AlgorithmConfig)
            and dataclasses.is_dataclass(config_type)):
        raise ValueError("an algorithm config must be a dataclass subclassing "
                         f"algorithm_configs.AlgorithmConfig, got {config_type!r}")
    if config_type not in ALGORITHM_CONFIGS:
        ALGORITHM_CONFIGS.append(config_type)


def algorithm_for_search(search: Any) -> type:
    """The algorithm config class whose algorithm trains with `search` (ValueError if none)."""
    for cls in ALGORITHM_CONFIGS:
        if cls.trains_with(search):
            return cls
    known = ", ".join(t.__name__ for cls in ALGORITHM_CONFIGS for t in cls.searches)
    raise ValueError(f"no algorithm trains with a {type(search).__name__} search; known search "
                     f"configs: {known}")


def algorithm_error(value: Any) -> str:
    """The message for a value that is not an algorithm config."""
    names = ", ".join(f"{c.__name__}(...)" for c in ALGORITHM_CONFIGS)
    hint = ""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            hint = (f"; a {type(value).__name__} is a search: write "
                    f"{algorithm_for_search(value).__name__}(search=...)")
        except ValueError:
            pass
    return f"algorithm must be one of {names}, got {type(value).__name__}{hint}"


__all__ = ["ALGORITHM_CONFIGS", "AlgorithmConfig", "AlphaZero", "GraphSearch", "MuZero", "TD",
           "algorithm_for_search", "register_algorithm_config"]
