"""A run's `TrainConfig` as JSON and back, and `--set KEY=VALUE` overrides checked against it.

Both are generic over dataclass fields, so a field added to `TrainConfig`, `MctxConfig`,
`MCGSConfig` or any nested config dataclass later needs no change here:

* a dataclass is a JSON object tagged with its class, `{"__dataclass__": "module:Class", ...}`
  (only classes of this project's packages are imported back);
* tuples are JSON arrays, and every JSON array reads back as a tuple: configs are frozen and
  hashable, so they hold tuples (a list given in a config is stored as a tuple);
* a field missing from the JSON takes its default (a run stored before the field existed);
  a stored field the class no longer has is an error naming it.

Overrides take the expected type from the field's annotation, or from the current value where
the annotation is `Any` (`network` is a dict, `search` a `MctxConfig` or an `MCGSConfig`):
dotted keys reach into nested configs and dicts, a JSON object merges into a dict or dataclass
instead of replacing it, and a tuple is written `a,b` or as a JSON array. A JSON object tagged
as stored (`{"__dataclass__": "module:Class", ...}`) gives a config of that class, so a field
typed `Any` can change class (`eval_search` from a tree search to
`turbozero.search.one_ply:OnePlyConfig`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import types
import typing
from typing import Any, Sequence

import envs
from turbozero.training import migration
from turbozero.training.algorithm_configs import AlgorithmConfig
from turbozero.training.algorithms import tree_config
from turbozero.training.config import TrainConfig

DATACLASS_TAG = "__dataclass__"
# stored class names are imported back only from these packages: a config file names code to
# import, and a run directory should not be able to import anything else
_OWN_PACKAGES = ("turbozero", "envs", "equity")
# ------------------------------------------------------------------------------- JSON
def to_json(value: Any, where: str = "config") -> Any:
    """`value` as plain JSON data; `where` names the field in error messages."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        out: dict[str, Any] = {DATACLASS_TAG: f"{cls.__module__}:{cls.__qualname__}"}
        for f in dataclasses.fields(value):
            out[f.name] = to_json(getattr(value, f.name), f"{where}.{f.name}")
        return out
    if isinstance(value, (tuple, list)):
        return [to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str) or k == DATACLASS_TAG]
        if bad:
            raise ValueError(f"{where}: cannot store the dict key {bad[0]!r} in JSON")
        return {k: to_json(v, f"{where}.{k}") for k, v in value.items()}
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float)):  # numpy scalars too
        return value.item() if hasattr(value, "item") else value
    raise ValueError(f"{where}: cannot store a {type(value).__name__} in a run's JSON config")


def _import_class(name: str, source: str = "stored config") -> type:
    # a class stored under the module it was in then is read where it is now (migration.py)
    module, _, qualname = migration.class_name(name).partition(":")
    if not qualname or module.split(".")[0] not in _OWN_PACKAGES:
        raise ValueError(f"{source} names the class {name!r}, which is not one of "
                         f"turbozero's ({', '.join(_OWN_PACKAGES)})")
    try:
        obj: Any = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"{source} names the class {name!r}, which does not exist") from err
    if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
        raise ValueError(f"{source} names {name!r}, which is not a config dataclass")
    return obj


def from_json(data: Any, where: str = "config") -> Any:
    """Inverse of `to_json`."""
    if isinstance(data, list):
        return tuple(from_json(v, f"{where}[{i}]") for i, v in enumerate(data))
    if isinstance(data, dict) and DATACLASS_TAG in data:
        cls = _import_class(data[DATACLASS_TAG])
        # fields of an earlier layout are read into today's (migration.py)
        names = {f.name for f in dataclasses.fields(cls) if f.init} | set(
            migration.stored_fields(cls))
        renamed = migration.renamed_fields(cls)
        kwargs = {renamed.get(k, k): v for k, v in data.items() if k != DATACLASS_TAG}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise ValueError(f"{where}: {cls.__name__} has no field {unknown[0]!r} (stored by "
                             "another version of turbozero?)")
        values = {k: from_json(v, f"{where}.{k}") for k, v in kwargs.items()}
        return cls(**migration.upgrade(cls, values, data))
    if isinstance(data, dict):
        return {k: from_json(v, f"{where}.{k}") for k, v in data.items()}
    return data


def config_to_json(config: Any) -> dict[str, Any]:
    return to_json(config)


def config_from_json(data: Any) -> Any:
    """A `TrainConfig` from `config_to_json`'s output."""
    config = from_json(data)
    if not isinstance(config, TrainConfig):
        raise ValueError(f"stored config is a {type(config).__name__}, not a TrainConfig")
    return config


# -------------------------------------------------------------------------- overrides
_MISSING = object()


def _type_hints(cls: type) -> dict[str, Any]:
    # the modules use `from __future__ import annotations`: annotations are strings until
    # resolved against the class's module
    return typing.get_type_hints(cls)


def _describe(hint: Any) -> str:
    """How an error names the expected type."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        parts = [_describe(a) for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(parts) + " or none"
    if origin is tuple or hint is tuple:
        return "a tuple (a,b or a JSON array)"
    if hint is bool:
        return "a bool (true or false)"
    if hint is int:
        return "an int"
    if hint is float:
        return "a float"
    if hint is str:
        return "a string"
    if hint is dict:
        return 'a JSON object ({"key": value, ...})'
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return f'a JSON object of {hint.__name__} fields ({{"field": value, ...}})'
    return getattr(hint, "__name__", str(hint))


def _expected(hint: Any, current: Any) -> Any:
    """The type to parse into: the annotation, or the current value's type where the annotation
    says nothing (`Any`, or a key of a dict)."""
    if hint is Any or hint is _MISSING:
        if current is _MISSING or current is None:
            return Any
        return type(current)
    return hint


class OverrideError(ValueError):
    """A `--set` value that does not fit its field."""

    def __init__(self, key: str, expected: str, got: Any):
        super().__init__(f"--set {key}: expected {expected}, got {got!r}")


def _first_member(want: Any, parse: Any, key: str, raw: Any) -> Any:
    """The value parsed as the first non-None member of the Union `want` that accepts it."""
    for arg in typing.get_args(want):
        if arg is type(None):
            continue
        try:
            return parse(arg)
        except OverrideError:
            pass
    raise OverrideError(key, _describe(want), raw)


def _from_json_value(value: Any, hint: Any, current: Any, key: str) -> Any:
    """A parsed JSON value checked against `hint` (or the current value's type)."""
    if isinstance(value, dict) and DATACLASS_TAG in value:
        return _tagged(value, hint, current, key)
    want = _expected(hint, current)
    origin = typing.get_origin(want)
    if want is Any:
        return migration.tuplify(value)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in typing.get_args(want):
            return None
        return _first_member(want, lambda arg: _from_json_value(value, arg, current, key),
                             key, value)
    if origin is typing.Literal:
        if value not in typing.get_args(want):
            raise OverrideError(key, _describe(want), value)
        return value
    if want is bool:
        if not isinstance(value, bool):
            raise OverrideError(key, _describe(want), value)
        return value
    if want is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise OverrideError(key, _describe(want), value)
        return value
    if want is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise OverrideError(key, _describe(want), value)
        return float(value)
    if want is str:
        if not isinstance(value, str):
            raise OverrideError(key, _describe(want), value)
        return value
    if want is tuple or origin is tuple:
        if not isinstance(value, list):
            raise OverrideError(key, _describe(want), value)
        return tuple(_from_json_value(v, _element_hint(want), _element(current, i), f"{key}[{i}]")
                     for i, v in enumerate(value))
    if want is dict or origin is dict:
        if not isinstance(value, dict):
            raise OverrideError(key, _describe(dict), value)
        merged = dict(current) if isinstance(current, dict) else {}
        for k, v in value.items():
            merged[k] = _from_json_value(v, Any, merged.get(k, _MISSING), f"{key}.{k}")
        return merged
    if isinstance(want, type) and dataclasses.is_dataclass(want):
        if not isinstance(value, dict):
            raise OverrideError(key, _describe(want), value)
        if isinstance(current, want):
            out = current
        else:
            try:
                out = want()
            except TypeError:
                raise ValueError(f"--set {key}: {want.__name__} has fields without defaults; "
                                 "give it whole in a run's config.json instead") from None
        for k, v in value.items():
            out = _replace_field(
                out, k, lambda old, h, k=k, v=v: _from_json_value(v, h, old, f"{key}.{k}"), key)
        return out
    if not isinstance(value, want):
        raise OverrideError(key, _describe(want), value)
    return value


def _tagged(value: dict, hint: Any, current: Any, key: str) -> Any:
    """A config object of the class the JSON object names, as stored run configs name it
    (`{"__dataclass__": "turbozero.search.one_ply:OnePlyConfig", ...}`): how a field typed `Any`
    (`search`, `eval_search`) takes a config of another class than its current one. The other
    keys set fields as any JSON object does a config's (of the current value when it is of that
    class, else of the class's defaults)."""
    cls = _import_class(str(value[DATACLASS_TAG]), f"--set {key}")
    if hint is not Any and hint is not _MISSING and isinstance(hint, type) \
            and not issubclass(cls, hint):
        raise OverrideError(key, _describe(hint), value[DATACLASS_TAG])
    fields = {k: v for k, v in value.items() if k != DATACLASS_TAG}
    return _from_json_value(fields, cls, current, key)


def _element_hint(hint: Any) -> Any:
    """`tuple[int, ...]` -> int; a bare `tuple` says nothing about its elements."""
    args = typing.get_args(hint)
    if len(args) == 2 and args[1] is Ellipsis:
        return args[0]
    return Any


def _element(current: Any, i: int) -> Any:
    """An example element of the current tuple for element `i`: the same position, else the
    first (tuples in configs are homogeneous: sizes, names)."""
    if isinstance(current, tuple) and current:
        return current[i] if i < len(current) else current[0]
    return _MISSING


def _from_text(text: str, hint: Any, current: Any, key: str) -> Any:
    """A `--set` value as typed on the command line, parsed into the expected type."""
    if text.strip()[:1] == "{":
        tagged = _json_or_none(text, None)
        if isinstance(tagged, dict) and DATACLASS_TAG in tagged:  # checked against the field's
            return _tagged(tagged, hint, current, key)           # annotation, not its value
    want = _expected(hint, current)
    origin = typing.get_origin(want)
    if origin in (typing.Union, types.UnionType):
        if text.strip().lower() in ("none", "null") and type(None) in typing.get_args(want):
            return None
        return _first_member(want, lambda arg: _from_text(text, arg, current, key), key, text)
    if origin is typing.Literal or want is str:
        value = text
        if text[:1] == '"':  # a JSON string, quotes and escapes included
            value = _json_or_none(text, text)
        return _from_json_value(value, want, current, key)
    if want is bool:
        words = {"true": True, "false": False, "1": True, "0": False, "yes": True, "no": False}
        if text.strip().lower() not in words:
            raise OverrideError(key, _describe(want), text)
        return words[text.strip().lower()]
    if want is int:
        try:
            return int(text.strip())
        except ValueError:
            raise OverrideError(key, _describe(want), text) from None
    if want is float:
        try:
            return float(text.strip())
        except ValueError:
            raise OverrideError(key, _describe(want), text) from None
    if want is tuple or origin is tuple:
        if text.strip()[:1] == "[":
            parsed = _json_or_none(text, _MISSING)
            if parsed is _MISSING:
                raise OverrideError(key, _describe(want), text)
            return _from_json_value(parsed, want, current, key)
        items = [t.strip() for t in text.split(",")] if text.strip() else []
        return tuple(_from_text(t, _element_hint(want), _element(current, i), f"{key}[{i}]")
                     for i, t in enumerate(items))
    if want is Any:
        # nothing to check against (a new key of a dict): JSON if it parses, else the text
        return migration.tuplify(_json_or_none(text, text))
    parsed = _json_or_none(text, _MISSING)
    if parsed is _MISSING:
        raise OverrideError(key, _describe(want), text)
    return _from_json_value(parsed, want, current, key)


def _json_or_none(text: str, default: Any) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return default


def _replace_field(obj: Any, name: str, make, key: str) -> Any:
    """`obj` (a config dataclass) with field `name` set to `make(old_value, hint)`."""
    hints = _type_hints(type(obj))
    names = [f.name for f in dataclasses.fields(obj) if f.init]
    if name not in names:
        raise ValueError(f"--set {key}: {type(obj).__name__} has no field {name!r}; "
                         f"its fields: {', '.join(names)}")
    return dataclasses.replace(obj, **{name: make(getattr(obj, name), hints.get(name, Any))})


def _set_path(current: Any, hint: Any, path: list[str], text: str, key: str) -> Any:
    """`current` with the value at the dotted `path` below it set from `text`."""
    if not path:
        return _from_text(text, hint, current, key)
    name, rest = path[0], path[1:]
    if dataclasses.is_dataclass(current) and not isinstance(current, type):
        if rest and name == "eval_search" and isinstance(current, AlgorithmConfig) \
                and current.eval_search is None:
            # None stands for the derived evaluation player (the self-play search without
            # noise): `eval_search.num_simulations=1` edits it
            value = current.evaluation_player()
            return _replace_field(current, name,
                                  lambda old, h: _set_path(value, h, rest, text, key), key)
        if name == SIMULATIONS and name not in {f.name for f in dataclasses.fields(current)}:
            nested = _simulations_path(current)
            if nested:  # MuZeroConfig.search.num_simulations, reached as search.num_simulations
                return _set_path(current, hint, nested + path, text, key)
        return _replace_field(current, name,
                              lambda old, h: _set_path(old, h, rest, text, key), key)
    if isinstance(current, dict):
        return {**current, name: _set_path(current.get(name, _MISSING), Any, rest, text, key)}
    if _is_pairs(current):  # env_config: ((key, value), ...) given to envs.make
        as_dict = dict(current)
        as_dict[name] = _set_path(as_dict.get(name, _MISSING), Any, rest, text, key)
        return tuple(as_dict.items())
    head = key[: len(key) - len(".".join(path)) - 1]
    kind = type(current).__name__
    article = "an" if kind[:1] in "aeiou" else "a"
    raise ValueError(f"--set {key}: {head} is {article} {kind}, it has no field {name!r}")


# the one key that sets the simulations per move of every game's search (docs/training.md):
# where a search config nests the tree search that has them (MuZero's MuZeroConfig.search),
# `search.num_simulations` sets the nested one, the config `algorithms.tree_config` finds
SIMULATIONS = "num_simulations"


def _simulations_path(search: Any) -> list[str]:
    """The fields from `search` down to the config holding num_simulations (`tree_config`'s
    walk through `.search`); [] when `search` holds it itself or nothing does."""
    try:
        target = tree_config(search)
    except ValueError:
        return []
    path, config = [], search
    while config is not target:
        path.append("search")
        config = config.search
    return path


def _is_pairs(value: Any) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in value)


def env_options(game: str) -> dict[str, Any] | None:
    """{option: annotation} of the keyword arguments `envs.make(game, ...)` takes (what
    `TrainConfig.env_config` may hold), read from the env class's signature; None when the
    class takes any keyword (**kwargs) or the game is unknown (envs.make names that)."""
    if game.startswith("pgx/"):
        from envs.pgx_adapter import PgxAdapter as cls  # pgx's games load pgx only on use
        skip = 1  # the pgx id, given by the name
    else:
        if game not in envs.available_envs():
            return None
        cls, skip = envs.env_class(game), 0
    params = list(inspect.signature(cls).parameters.values())[skip:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    try:
        hints = typing.get_type_hints(cls.__init__)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: check names only
        hints = {}
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name: hints.get(p.name, Any) for p in params if p.kind in kinds}


def check_env_config(game: str, env_config: Any, what: str = "env_config") -> None:
    """A ValueError naming the first key of `env_config` that the game's env does not take,
    with the keys it takes."""
    options = env_options(game)
    if options is None:
        return
    for name in dict(env_config):
        if name not in options:
            valid = ", ".join(options) if options else "none (it takes no options)"
            raise ValueError(f"{what}: {game} has no option {name!r}; its options: {valid}")


def _simple(hint: Any) -> Any:
    """An env option's annotation where `--set` can parse against it (int, float, bool, str,
    optional or not); Any (parse as JSON, else text) for the rest."""
    plain = (int, float, bool, str)
    args = typing.get_args(hint)
    if hint in plain or (typing.get_origin(hint) in (typing.Union, types.UnionType)
                         and all(a in plain or a is type(None) for a in args)):
        return hint
    return Any


def _set_env_config(game: str, current: Any, path: list[str], text: str, key: str) -> tuple:
    """env_config (the (key, value) pairs given to envs.make) with `--set env_config...` applied:
    `env_config.size=9`, or a JSON object merged into it (`env_config={"size": 9}`); every key
    checked against the env's options, a value against the option's annotation where it is a
    plain type, else against its current value."""
    options = env_options(game)
    merged = dict(current)

    def parse(name: str, raw: Any, where: str, from_text: bool) -> Any:
        if options is not None and name not in options:
            check_env_config(game, {name: None}, f"--set {where}")
        hint = _simple(options[name]) if options is not None else Any
        old = merged.get(name, _MISSING)
        if hint is Any and old is not _MISSING and old is not None:
            hint = type(old)
        if from_text:
            return _set_path(old, hint, [], raw, where)
        return _from_json_value(raw, hint, old, where)

    if path:
        name, rest = path[0], path[1:]
        if rest:
            raise ValueError(f"--set {key}: env_config.{name} is one option, it has no "
                             f"field {rest[0]!r}")
        merged[name] = parse(name, text, key, True)
    else:
        value = _json_or_none(text, _MISSING) if text.strip()[:1] in "{[" else _MISSING
        if isinstance(value, list) and _is_pairs(migration.tuplify(value)):
            # pairs as a run stores them, [["size", 9], ...]: an array replaces, as for any
            # tuple field; an object merges
            value, merged = dict(migration.tuplify(value)), {}
        if not isinstance(value, dict):
            raise OverrideError(key, 'a JSON object of env options ({"option": value, ...}) '
                                "or a [[option, value], ...] array", text)
        for name, raw in value.items():
            merged[name] = parse(name, raw, f"{key}.{name}", False)
    return tuple(merged.items())


def parse_overrides(config: Any, pairs: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings into new values of `config`'s top-level fields, each checked against
    the field's type; later pairs build on earlier ones (`search.a=1 search.b=2` sets both)."""
    hints = _type_hints(type(config))
    names = [f.name for f in dataclasses.fields(config) if f.init]
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {pair!r}")
        top, *path = key.split(".")
        legacy_search = top == "search" and top not in names
        if top not in names and migration.legacy_key(top, path):
            # the keys of earlier versions: search.x is algorithm.search.x (docs/training.md)
            top, path = migration.legacy_key(top, path)
        renamed = migration.renamed_fields(type(config))
        if top in renamed:
            raise ValueError(f"--set {key}: {type(config).__name__}.{top} is now "
                             f"{renamed[top]} (same meaning)")
        if top not in names:
            raise ValueError(f"--set {key}: {type(config).__name__} has no field {top!r}; "
                             f"its fields: {', '.join(names)}")
        if top == "game":
            raise ValueError(f"--set {key}: the game is not a setting: it is the GAME argument "
                             "(turbozero train GAME), and a run keeps the game it was made with")
        current = out.get(top, getattr(config, top))
        if top == "env_config":
            out[top] = _set_env_config(config.game, current, path, text, key)
            continue
        out[top] = _set_path(current, hints.get(top, Any), path, text, key)
        if legacy_search:
            out[top] = migration.follow_search(out[top])
    return out


# ------------------------------------------------------------------------- run dirs
def with_overrides(config: Any, overrides: dict[str, Any]) -> Any:
    """`config` with top-level fields replaced (an `eval_search` of None stays derived from
    whatever self-play search the result has)."""
    return dataclasses.replace(config, **dict(overrides))
