"""The algorithm a run trains with, named explicitly: `TrainConfig.algorithm`.

    TrainConfig(game, algorithm=AlphaZero(search=TreeSearchConfig(num_simulations=64),
                                          acting=TemperatureSchedule(1.0, moves=30)))
    TrainConfig(game, algorithm=GraphSearch(search=MCGSConfig(num_simulations=32)))
    TrainConfig(game, algorithm=TD(search=TDConfig(td_lambda=0.7)))

Which game each suits is the game's business: its presets (`turbozero.presets`) name theirs, and
docs/training.md, "Algorithms", lists what each needs of an env.

Each class is a frozen config dataclass (stored in a run's JSON like every config): the
self-play `search`, how self-play picks its move (`acting`, defined here and nowhere else in a
training run), and the evaluation player (`eval_search`; None: the self-play search without
root noise at temperature 0). `build` makes the runtime `training.algorithms.Algorithm` the
Trainer calls; which runtime class runs is still found by the search config's type
(`training.algorithms.ALGORITHMS`: e.g. `CPUSelfPlayConfig` gives AlphaZero on the C++ tree),
and the algorithm checks that the search is one of its own.

Before this module the type of `TrainConfig.search` chose the algorithm implicitly. Those
keywords (`search`, `eval_search`, `temperature_schedule`) are still accepted and converted
(`algorithm_with`), so stored run directories and scripts keep working (docs/training.md,
"Algorithms").
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any, ClassVar, Optional

from turbozero.search.acting import TemperatureSchedule
from turbozero.search.mctx_policies import MctxConfig
from turbozero.training.algorithms import algorithm_class, build_algorithm, evaluation_search

_UNSET: Any = object()


def _runtime_class(search: Any) -> type:
    return algorithm_class(search)


class _AlgorithmConfig:
    """What every algorithm config does; subclasses name their runtime base class."""

    search: Any
    eval_search: Any
    # the runtime class (in training/) this algorithm's searches must build, "module:Class"
    runtime_base: ClassVar[str]

    @classmethod
    def _base(cls) -> type:
        module, _, name = cls.runtime_base.partition(":")
        return getattr(importlib.import_module(module), name)

    @classmethod
    def trains_with(cls, search: Any) -> bool:
        """Whether `search` is a self-play search of this algorithm."""
        try:
            return issubclass(_runtime_class(search), cls._base())
        except ValueError:
            return False

    def check(self) -> None:
        """ValueError unless `search` is one of this algorithm's, naming the one it is."""
        runtime = _runtime_class(self.search)  # ValueError for a config no algorithm takes
        if not issubclass(runtime, self._base()):
            owner = next((c.__name__ for c in ALGORITHM_CONFIGS if c.trains_with(self.search)),
                         None)
            hint = f"; use {owner}(search=...)" if owner else ""
            raise ValueError(f"{type(self).__name__} does not train with a "
                             f"{type(self.search).__name__} search{hint}")

    def runtime(self) -> type:
        """The runtime `Algorithm` class that runs this config."""
        return _runtime_class(self.search)

    def build_network(self, spec: Any, env: Any, network_config: dict) -> Any:
        """The flax module the algorithm trains (`Algorithm.build_network`)."""
        return self.runtime().build_network(spec, env, network_config)

    def build(self, env: Any, apply_fn: Any, value_format: Any) -> Any:
        """The runtime algorithm for `env`, checked against it (ValueError if unsuitable)."""
        return build_algorithm(env, apply_fn, value_format, self.search, self.eval_search)

    def derived_field(self, name: str) -> Any:
        """What a field left None stands for (`--set eval_search.x=...` edits it)."""
        if name == "eval_search":
            return evaluation_search(self.search)
        return None


def _check_acting(acting: Any) -> None:
    if not isinstance(acting, TemperatureSchedule):
        raise ValueError(f"acting must be a TemperatureSchedule, got {type(acting).__name__}")


@dataclasses.dataclass(frozen=True)
class _SearchAndActing(_AlgorithmConfig):
    """The fields of an algorithm that acts by a temperature schedule on its policy target."""

    search: Any = None  # each algorithm sets its own default
    acting: TemperatureSchedule = TemperatureSchedule()
    eval_search: Any = None

    def __post_init__(self) -> None:
        _check_acting(self.acting)


@dataclasses.dataclass(frozen=True)
class AlphaZero(_SearchAndActing):
    """Tree search over the true dynamics of a turn-based game; policy target = the search's
    visit distribution, value target = the game's return.

    search: `TreeSearchConfig` (the library's kernel), `MctxConfig` (mctx) or
    `CPUSelfPlayConfig` (the C++ tree, self-play outside jit). acting: self-play plays
    `acting.temperature` on the policy target for the first `acting.moves` moves, then its
    argmax. eval_search: None, any of the searches above, `OnePlyConfig` or
    `AfterstatePlayerConfig` (the value head alone)."""

    search: Any = MctxConfig()
    runtime_base: ClassVar[str] = "turbozero.training.algorithms:AlphaZeroAlgorithm"


@dataclasses.dataclass(frozen=True)
class GraphSearch(_SearchAndActing):
    """Monte-Carlo graph search (decoupled PUCT per player) for simultaneous-move games; one
    policy target per player, one value per seat. search: an `MCGSConfig`; acting and
    eval_search as `AlphaZero`'s."""

    search: Any = dataclasses.field(default_factory=lambda: _default("mcgs"))
    runtime_base: ClassVar[str] = "turbozero.training.algorithms:GraphSearchAlgorithm"


@dataclasses.dataclass(frozen=True)
class MuZero(_SearchAndActing):
    """A learned model searched by the kernel (`turbozero.training.muzero`). search: a
    `MuZeroConfig` (the kernel's settings, unroll and loss weights); acting and eval_search as
    `AlphaZero`'s."""

    search: Any = dataclasses.field(default_factory=lambda: _default("muzero"))
    runtime_base: ClassVar[str] = "turbozero.training.muzero:MuZeroAlgorithm"


@dataclasses.dataclass(frozen=True)
class TD(_AlgorithmConfig):
    """Afterstate TD(lambda) with complete-move self-play (`turbozero.training.td`). search: a
    `TDConfig`, whose `exploration` is how self-play acts (a uniformly random complete move
    with that probability, else its player's best): TD has no temperature schedule.
    eval_search: None (the self-play player) or an `AfterstatePlayerConfig`."""

    search: Any = dataclasses.field(default_factory=lambda: _default("td"))
    eval_search: Any = None
    acting: ClassVar[None] = None  # acting is TDConfig.exploration (docstring)
    runtime_base: ClassVar[str] = "turbozero.training.td:AfterstateTD"


def _default(which: str) -> Any:
    """The default search of an algorithm whose module is imported only when needed."""
    # each algorithm's module on use: a run loads only the algorithm it trains with
    if which == "mcgs":
        from turbozero.search.mcgs import MCGSConfig  # on use, as above

        return MCGSConfig()
    if which == "muzero":
        from turbozero.training.muzero import MuZeroConfig  # on use, as above

        return MuZeroConfig()
    from turbozero.training.td import TDConfig  # on use, as above

    return TDConfig()


# the algorithm configs a search config is converted into (`algorithm_with`), in this order
ALGORITHM_CONFIGS: list[type] = [AlphaZero, GraphSearch, MuZero, TD]


def register_algorithm_config(config_type: type) -> None:
    """Let `algorithm_with` convert a search of a new algorithm (a class like those above)."""
    if not (isinstance(config_type, type) and issubclass(config_type, _AlgorithmConfig)
            and dataclasses.is_dataclass(config_type)):
        raise ValueError("an algorithm config must be a dataclass subclassing "
                         f"algorithm_configs._AlgorithmConfig, got {config_type!r}")
    if config_type not in ALGORITHM_CONFIGS:
        ALGORITHM_CONFIGS.append(config_type)


def is_algorithm_config(value: Any) -> bool:
    return isinstance(value, _AlgorithmConfig)


def algorithm_for_search(search: Any) -> type:
    """The algorithm config class whose algorithm trains with `search` (ValueError if none)."""
    _runtime_class(search)  # names the known search configs when none takes it
    for cls in ALGORITHM_CONFIGS:
        if cls.trains_with(search):
            return cls
    raise ValueError(f"no algorithm config trains with a {type(search).__name__} search")


def algorithm_with(base: Optional[Any] = None, search: Any = _UNSET, eval_search: Any = _UNSET,
                   temperature_schedule: Any = _UNSET) -> Any:
    """`base` (an algorithm config; None: `AlphaZero()`) with the pre-`algorithm` keywords of
    `TrainConfig` applied: `search`, `eval_search` and `temperature_schedule` (its `acting`).
    A search of another algorithm gives that algorithm's config, keeping the rest."""
    if base is None or base is _UNSET:
        base = AlphaZero()
    if not is_algorithm_config(base):
        raise ValueError(algorithm_error(base))
    new_search = base.search if search is _UNSET else search
    cls = algorithm_for_search(new_search)
    changes: dict[str, Any] = {"search": new_search}
    if eval_search is not _UNSET:
        changes["eval_search"] = eval_search
    if temperature_schedule is not _UNSET:
        if cls.acting is None:
            if temperature_schedule != TemperatureSchedule():
                raise ValueError(f"{cls.__name__} has no temperature schedule (its self-play "
                                 f"acting is its search's), got {temperature_schedule!r}")
        else:
            changes["acting"] = temperature_schedule
    if type(base) is cls:
        return dataclasses.replace(base, **changes)
    carried = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)
               if f.name in {g.name for g in dataclasses.fields(cls)} and f.name not in changes}
    carried.pop("eval_search", None)  # another algorithm's evaluation player does not carry
    return cls(**carried, **changes)


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


__all__ = ["ALGORITHM_CONFIGS", "AlphaZero", "GraphSearch", "MuZero", "TD", "algorithm_for_search",
           "algorithm_with", "is_algorithm_config", "register_algorithm_config"]
