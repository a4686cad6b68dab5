"""Game environments: pure functions over pytrees under one protocol (see `envs.core`)."""

from __future__ import annotations

import importlib
from typing import Union

from envs.core import Env, GraphSearchEnv, State, require_protocol

# name -> "module:class" (imported on first use, so importing `envs` stays cheap) for the
# library's games; `register` adds others (a game written outside the library, directly or
# through `turbozero.games.register_game`) as a class or "module:class"
_REGISTRY: dict[str, Union[str, type]] = {
    "backgammon": "envs.backgammon:Backgammon",
    "chess": "envs.chess:Chess",
    "pyrat": "envs.pyrat:PyRat",
    "pacosako": "envs.pacosako:PacoSako",
    "gomoku": "envs.gomoku:Gomoku",
}


def available_envs() -> tuple[str, ...]:
    """Names accepted by `make`."""
    return tuple(sorted(_REGISTRY))


def register(name: str, env: Union[str, type]) -> None:
    """Make `make(name, **config)` build `env`: an `Env` subclass, or "module:Class" imported
    on first use. Registering the same target again is a no-op; another target under a taken
    name is a ValueError (docs/envs.md, "Training a game of your own")."""
    if not isinstance(name, str) or not name or name.startswith("pgx/") or name != name.strip():
        raise ValueError(f"a game name must be a non-empty string without surrounding spaces, "
                         f"not starting with 'pgx/'; got {name!r}")
    if isinstance(env, str):
        if env.count(":") != 1 or not all(env.split(":")):
            raise ValueError(f"env must be an Env subclass or 'module:Class', got {env!r}")
    elif not (isinstance(env, type) and issubclass(env, Env)):
        raise ValueError(f"env must be an Env subclass or 'module:Class', got {env!r}")
    if _REGISTRY.get(name, env) != env:
        raise ValueError(f"the game name {name!r} is taken by {_REGISTRY[name]!r}")
    _REGISTRY[name] = env


def make(name: str, **config) -> Env:
    """Build the environment `name` with its configuration (keyword arguments of its class).

    `"pgx/<id>"` wraps a deterministic pgx game (e.g. `"pgx/tic_tac_toe"`).
    """
    if not isinstance(name, str):  # None.startswith was an AttributeError
        raise ValueError(f"a game name must be a string, got {name!r}; available: "
                         f"{', '.join(available_envs())}")
    if name.startswith("pgx/"):
        # pgx (0.1 s) only for a pgx game: `import envs` stays cheap
        from envs.pgx_adapter import PgxAdapter

        return PgxAdapter(name[len("pgx/") :], **config)
    if name not in _REGISTRY:
        raise ValueError(f"unknown game {name!r}; available: {', '.join(available_envs())}")
    return env_class(name)(**config)


def env_class(name: str) -> type:
    """The env class registered as `name` (its module imported on first use)."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown game {name!r}; available: {', '.join(available_envs())}")
    cls = _REGISTRY[name]
    if isinstance(cls, str):
        module_name, class_name = cls.split(":")
        cls = getattr(importlib.import_module(module_name), class_name)
    return cls


__all__ = ["Env", "GraphSearchEnv", "State", "available_envs", "env_class", "make",
           "register", "require_protocol"]
