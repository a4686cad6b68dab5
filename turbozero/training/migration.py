"""Run configs stored by earlier versions, read into today's layout: the one module that knows
an old layout (issue 44, item 5; docs/training.md, "Earlier versions").

A run directory stores its whole `TrainConfig` as JSON (`run_config.to_json`); every run ever
written must still evaluate and resume (tests/data/ttt_run is one, written before the algorithm
was explicit). What changed, and how it is read:

* classes whose module moved, or whose name changed: the stored name is read at its new place
  (`MOVED_MODULES`, `MOVED_CLASSES`; `SearchConfig` was `MctxConfig`'s name before issue 33);
* fields renamed in place (`RENAMED_FIELDS`: the step limit's one name, issue 35): the stored
  name is read into the new field, and a `--set` of the old name is told the new one;
* env options renamed (each env class's `renamed_options`: a game's former name of its step cap, now
  `max_episode_steps` as the protocol's): the stored `env_config` key is read as the new one;
* `TrainConfig.search`, `eval_search` and `temperature_schedule`, the fields before
  `TrainConfig.algorithm`: read into the algorithm whose search it is (`upgrade`,
  `algorithm_with`); a config stored with no algorithm searched with mctx, the default then
  (today's default is the library's kernel);
* `temperature` (and `temperature_moves`) of the search configs (`TreeSearchConfig`,
  `MctxConfig`, `MCGSConfig`, `CPUSearchConfig`, `CPUSelfPlayConfig`), from before acting
  belonged to acting alone (issue 44, item 3): read and dropped (`ACTING_FIELDS`). Self-play
  already acted by the run's schedule (the collector acted again on the policy) and evaluation
  at temperature 0 (`for_evaluation()`), so nothing the run played changes; the one exception
  kept is the C++ self-play whose own settings contradicted the schedule (it kept acting by
  them, with a warning): its algorithm's `acting` becomes them (`_cpu_acting`);
* the `--set` keys of those fields (`search.x` is `algorithm.search.x`, `temperature_schedule.x`
  is `algorithm.acting.x`; README commands use them): `legacy_key`;
* run directories made before configs were stored: the preset and overrides of their
  `cli.json` (`config_from_cli_json`, called by `turbozero.runs` with the presets' builder);
* checkpoints whose replay kept the trajectory fields (the action played, the root values per
  seat, the write counter) in every algorithm's replay, from before issue 44 (item 4) declared
  them MuZero's alone: the marker's shapes of those leaves are not compared when today's state
  has none (`stored_state_shapes`), and the restore reads the leaves today's state names
  (orbax's restore into a target that lacks some stored leaves; tests/data/ttt_run resumes so).

Nothing else in the library converts an old layout: the config classes take only today's
fields and names (a keyword of an old name is Python's TypeError).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any, Callable, Optional

import envs

from turbozero.search.acting import TemperatureSchedule
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.cpu.tree import CPUSearchConfig
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.mcgs import MCGSConfig
from turbozero.search.mctx_policies import MctxConfig
from turbozero.training.algorithm_configs import (AlgorithmConfig, AlphaZero,
                                                  algorithm_for_search)
from turbozero.training.config import TrainConfig

# modules whose classes moved (old module -> module now): read through this, with no
# re-exporting shim module left at the old place
MOVED_MODULES = {
    "turbozero.training.trainer": "turbozero.training.updates",  # issue 35, item 4
}
# a game's own modules moved from `turbozero.<game>_<name>` into its package
# `turbozero.games.<game>.<name>` (issue 35); a rule, so that this module names no game
_GAME_MODULE = re.compile(r"turbozero\.([a-z0-9]+)_(\w+)")
# single classes that moved (old "module:Class" -> new)
MOVED_CLASSES = {
    # TrainConfig had its own module from issue 35; runs before name the loop's
    "turbozero.training.loop:TrainConfig": "turbozero.training.config:TrainConfig",
    # mctx's config before it was named for its family (issue 33)
    "turbozero.search.mctx_policies:SearchConfig": "turbozero.search.mctx_policies:MctxConfig",
}
# fields renamed in place (class -> {old name: new name}): the step limit has one name, steps
# (docs/architecture.md, "Glossary: one name per idea"; issue 35)
RENAMED_FIELDS = {
    TrainConfig: {"self_play_max_moves": "max_self_play_steps"},
    CPUSelfPlayConfig: {"max_moves": "max_steps"},
}
# TrainConfig's fields before `algorithm` (run directories store them), and the field of the
# algorithm config each became
LEGACY_FIELDS = {"search": "search", "eval_search": "eval_search",
                 "temperature_schedule": "acting"}
# what a config stored without `algorithm` searched with (the default before the kernel's)
DEFAULT_SEARCH_BEFORE_ALGORITHM = MctxConfig()
# the acting settings search configs had before acting was the algorithm's alone (read, dropped)
ACTING_FIELDS = {
    TreeSearchConfig: ("temperature", "temperature_moves"),
    MctxConfig: ("temperature",),
    MCGSConfig: ("temperature",),
    CPUSearchConfig: ("temperature",),
    CPUSelfPlayConfig: ("temperature", "temperature_moves"),
}
# CPUSelfPlayConfig's acting defaults then: settings other than these and other than the
# schedule's were followed instead of the schedule
_CPU_ACTING_DEFAULTS = {"temperature": 1.0, "temperature_moves": 30}

_UNSET: Any = object()
# loop-state leaves an earlier layout stored that today's may leave out: the trajectory fields
# of the position replay (`replay.trajectory_fields`), kept before issue 44 by every algorithm
DROPPED_STATE_LEAVES = (".buffer.action", ".buffer.search_values", ".buffer.written_at")


def stored_state_shapes(found: dict[str, Any], here: dict[str, Any]) -> dict[str, Any]:
    """The loop-state shapes a run directory's marker stored (`found`) as today's layout has
    them: without the leaves of an earlier layout that today's state (`here`) leaves out."""
    return {k: v for k, v in found.items() if k in here or k not in DROPPED_STATE_LEAVES}


def class_name(stored: str) -> str:
    """The "module:Class" a stored name stands for today."""
    stored = MOVED_CLASSES.get(stored, stored)
    module, sep, qualname = stored.partition(":")
    if module in MOVED_MODULES:
        module = MOVED_MODULES[module]
    elif _GAME_MODULE.fullmatch(module):
        module = _GAME_MODULE.sub(r"turbozero.games.\1.\2", module)
    return f"{module}{sep}{qualname}"


def renamed_fields(cls: type) -> dict[str, str]:
    """{old name: new name} of the fields of `cls` renamed since a run stored them."""
    return RENAMED_FIELDS.get(cls, {})


def env_config(game: Any, pairs: Any) -> tuple:
    """A stored `env_config` ((option, value) pairs) of `game` with today's option names."""
    try:  # the env class lists its own former option names (`Env.renamed_options`)
        renamed = dict(envs.env_class(game).renamed_options)
    except ValueError:  # a game not registered here: its options as stored
        renamed = {}
    return tuple((renamed.get(k, k), v) for k, v in pairs)


def stored_fields(cls: type) -> tuple[str, ...]:
    """Keys an old layout of `cls` stored that are no longer its fields (read by `upgrade`)."""
    return tuple(LEGACY_FIELDS) if cls is TrainConfig else ACTING_FIELDS.get(cls, ())


def upgrade(cls: type, values: dict[str, Any], stored: Optional[dict] = None) -> dict[str, Any]:
    """The keyword arguments of `cls` from a stored object's decoded fields, in today's layout;
    `stored`: the object's JSON as stored (its nested objects not yet decoded)."""
    if cls in ACTING_FIELDS:
        return {k: v for k, v in values.items() if k not in ACTING_FIELDS[cls]}
    if issubclass(cls, AlgorithmConfig) and "acting" in {f.name for f in dataclasses.fields(cls)}:
        acting = _cpu_acting((stored or {}).get("search"), values.get("acting"))
        return values if acting is None else dict(values, acting=acting)
    if cls is not TrainConfig:
        return values
    values = dict(values)
    if "env_config" in values:
        values["env_config"] = env_config(values.get("game"), values["env_config"])
    legacy = {k: values.pop(k) for k in LEGACY_FIELDS if k in values}
    acting = _cpu_acting((stored or {}).get("search"), legacy.get("temperature_schedule"))
    if acting is not None:
        legacy["temperature_schedule"] = acting
    if "algorithm" in values:
        # a layout that stored the algorithm beside its search: the stored search is the one
        # the run trained with (a `--set search=...` wrote it there)
        if legacy:
            values["algorithm"] = algorithm_with(values["algorithm"], **legacy)
        return values
    legacy.setdefault("search", DEFAULT_SEARCH_BEFORE_ALGORITHM)
    values["algorithm"] = algorithm_with(None, **legacy)
    return values


def _cpu_acting(search: Any, acting: Any) -> Optional[TemperatureSchedule]:
    """The acting of a stored C++ self-play (`search`, its stored JSON) whose own temperature
    settings contradicted the schedule (`acting`; None: the default), which it then followed
    instead; None when the schedule stands."""
    if not (isinstance(search, dict) and class_name(str(search.get("__dataclass__", "")))
            == "turbozero.search.cpu.selfplay:CPUSelfPlayConfig"):
        return None
    acting = TemperatureSchedule() if acting is None else acting
    schedule = {"temperature": float(acting.temperature),
                "temperature_moves": 2**31 - 1 if acting.moves is None else int(acting.moves)}
    own = {k: search.get(k, d) for k, d in _CPU_ACTING_DEFAULTS.items()}
    if all(own[k] in (_CPU_ACTING_DEFAULTS[k], schedule[k]) for k in own):
        return None
    return TemperatureSchedule(temperature=own["temperature"], moves=own["temperature_moves"])


def algorithm_with(base: Optional[Any] = None, search: Any = _UNSET, eval_search: Any = _UNSET,
                   temperature_schedule: Any = _UNSET) -> Any:
    """`base` (an algorithm config; None: `AlphaZero()`) with the fields of the layout before
    `TrainConfig.algorithm` applied: `search`, `eval_search` and `temperature_schedule` (its
    `acting`). A search of another algorithm gives that algorithm's config, keeping `acting`
    (not the evaluation player, which is the other algorithm's)."""
    base = AlphaZero() if base is None else base
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


def legacy_key(top: str, path: list[str]) -> Optional[tuple[str, list[str]]]:
    """`--set` key `top.path...` of a field before `TrainConfig.algorithm`, as today's
    (`("algorithm", ["search", ...])`); None for a key of today."""
    if top not in LEGACY_FIELDS:
        return None
    return "algorithm", [LEGACY_FIELDS[top]] + path


def follow_search(algorithm: Any) -> Any:
    """An algorithm config whose search was set to another algorithm's (`--set search={...}`
    of another class) turned into that algorithm's config, as the layout before the algorithm
    read it."""
    if isinstance(algorithm, AlgorithmConfig) and not type(algorithm).trains_with(algorithm.search):
        try:
            return algorithm_with(algorithm, search=algorithm.search)
        except ValueError:
            return algorithm  # TrainConfig names what is wrong
    return algorithm


def config_from_cli_json(made: dict[str, Any], get_preset: Callable[..., Any]) -> Any:
    """The config of a run directory made before configs were stored: the preset and overrides
    `turbozero train` recorded in its cli.json, built by `get_preset` (`turbozero.presets`,
    given by `turbozero.runs`: presets sit above training, which imports none)."""
    overrides = {k: tuplify(v) for k, v in made.get("overrides", {}).items()}
    legacy = {k: overrides.pop(k) for k in LEGACY_FIELDS if k in overrides}
    if "env_config" in overrides:
        overrides["env_config"] = env_config(made["game"], overrides["env_config"])
    config = get_preset(made["game"], made["preset"], **overrides)
    if legacy:
        config = dataclasses.replace(config, algorithm=algorithm_with(config.algorithm, **legacy))
    return config


def tuplify(value: Any) -> Any:
    """JSON arrays as tuples, all the way down (configs hold tuples)."""
    if isinstance(value, list):
        return tuple(tuplify(v) for v in value)
    if isinstance(value, dict):
        return {k: tuplify(v) for k, v in value.items()}
    return value


__all__ = ["DROPPED_STATE_LEAVES", "MOVED_CLASSES", "MOVED_MODULES",
           "RENAMED_FIELDS", "algorithm_with", "class_name", "config_from_cli_json", "env_config",
           "follow_search", "legacy_key", "renamed_fields", "stored_fields", "stored_state_shapes", "tuplify", "upgrade"]
