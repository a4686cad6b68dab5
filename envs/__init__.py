"""Game environments: pure functions over pytrees under one protocol (see `envs.core`)."""

from __future__ import annotations

import importlib

from envs.core import Env, GraphSearchEnv, State, require_protocol

# name -> "module:class". Modules are imported on first use, so importing `envs` stays cheap.
_REGISTRY: dict[str, str] = {
    "backgammon": "envs.backgammon:Backgammon",
    "chess": "envs.chess:Chess",
    "pyrat": "envs.pyrat:PyRat",
    "pacosako": "envs.pacosako:PacoSako",
    "gomoku": "envs.gomoku:Gomoku",
}


def available_envs() -> tuple[str, ...]:
    """Names accepted by `make`."""
    return tuple(sorted(_REGISTRY))


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
    module_name, class_name = _REGISTRY[name].split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return cls(**config)


__all__ = ["Env", "GraphSearchEnv", "State", "available_envs", "make", "require_protocol"]
