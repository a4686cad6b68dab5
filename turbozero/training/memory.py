"""Sizes bounded by memory before anything is built (docs/training.md, "Refusals").

The Trainer knows the shapes of its whole loop state before it allocates any of it
(`jax.eval_shape` of the state's build: replay, games in progress, network and optimizer), and
an evaluation holds `eval_games` games of the same per-game size. When one copy of that state is
larger than the memory of the device it lives on, the run cannot start: it used to hang for
minutes (`num_envs=10**9`) or end in a page of XLA out-of-memory traceback naming no setting.
It is refused in one line naming the settings and the bytes instead. The estimate counts what
the state holds and, for a search whose config can say it (`tree_shapes(env, states,
with_wdl)`: the tree kernel), the tree a search of all the games holds, from the tree's own
arrays' shapes (`jax.eval_shape` of its allocation: nodes x bytes per node, the env state kept
per node included), for self-play (`num_envs` games) and for evaluation (`eval_games`). It does
not count XLA's temporaries (a search's batch of network activations, the update's gradients),
nor the trees of searches that cannot say theirs (mctx, the graph search, MuZero's learned
model, the C++ path's node pool), so a state that fits may still not run: the bound catches the
absurd, not the tight. A warm start from stored functions (turbozero/stored_functions.py) is
checked too, on the stored export's result shapes.
"""

from __future__ import annotations

import os
import re
from typing import Any, Optional

import jax
import numpy as np

# the limit in bytes, or with a unit: "64GiB", "500MB"; none/off: no check
ENV_VAR = "TURBOZERO_MEMORY_LIMIT"
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def tree_bytes(tree: Any) -> int:
    """Bytes of the arrays (or shape structs) of a pytree."""
    return sum(int(np.prod(x.shape, dtype=np.int64)) * np.dtype(x.dtype).itemsize
               for x in jax.tree_util.tree_leaves(tree) if hasattr(x, "shape"))


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def parse_limit(text: str) -> Optional[int]:
    """TURBOZERO_MEMORY_LIMIT's value in bytes (None: off); ValueError naming it if unreadable."""
    t = text.strip().lower()
    if t in ("none", "off", "0"):
        return None
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*([a-z]*)", t)
    if m is None or m.group(2) not in _UNITS:
        raise ValueError(f"{ENV_VAR}={text!r}: give bytes or a size such as 64GiB or 500MB "
                         "(none: no check)")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def device_memory(device: Any = None) -> tuple[Optional[int], str]:
    """(bytes, what) of the memory a device's arrays live in: `TURBOZERO_MEMORY_LIMIT` when set,
    else the accelerator's own limit, else the host's physical memory (a CPU device); None when
    unknown or the check is off."""
    if ENV_VAR in os.environ:
        return parse_limit(os.environ[ENV_VAR]), f"{ENV_VAR}"
    device = jax.devices()[0] if device is None else device
    stats = None
    try:
        stats = device.memory_stats()
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        stats = None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]), f"the memory of {device.device_kind}"
    try:
        return (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
                "this machine's memory")
    except (ValueError, OSError, AttributeError):
        return None, "unknown"


def search_tree_bytes(search_config: Any, env: Any, states: Any, with_wdl: bool) -> int:
    """Bytes of the trees a search of the batch `states` holds (module docstring); 0 for a
    search whose config cannot say (no `tree_shapes`)."""
    shapes_of = getattr(search_config, "tree_shapes", None)
    if search_config is None or not callable(shapes_of):
        return 0
    return tree_bytes(shapes_of(env, states, with_wdl=with_wdl))


def _simulations(search_config: Any) -> Any:
    return getattr(search_config, "num_simulations", "?")


def check_loop_state(shapes: Any, config: Any, device: Any = None, *, env: Any = None,
                     with_wdl: bool = False, eval_search: Any = None) -> None:
    """ValueError (one line) when one copy of the loop state of `shapes` (`LoopState` of shape
    structs) with the self-play search's trees, or the evaluation's games with theirs, needs
    more than the device's memory (`device_memory`). `env`: the game, for the trees (None:
    trees not counted); `eval_search`: the evaluation's search config."""
    limit, where = device_memory(device)
    if limit is None:
        return
    search = config.algorithm.search
    states = shapes.collector.env_state if env is not None else None
    tree = search_tree_bytes(search, env, states, with_wdl) if env is not None else 0
    parts = {"replay": tree_bytes(shapes.buffer),
             "games in progress": tree_bytes(shapes.collector),
             "network and optimizer": tree_bytes(shapes.train_state),
             "search trees": tree}
    total = sum(parts.values()) + tree_bytes(shapes.key) + tree_bytes(shapes.iteration)
    num_envs = max(config.num_envs, 1)
    per_game = parts["games in progress"] // num_envs
    eval_tree = (search_tree_bytes(eval_search, env, states, with_wdl) // num_envs
                 if env is not None else 0)
    evaluation = (per_game + eval_tree) * config.eval_games
    if total > limit:
        said = {"replay": f"num_envs={config.num_envs} x replay_capacity="
                          f"{config.replay_capacity} positions",
                "games in progress": f"num_envs={config.num_envs}",
                "network and optimizer": "the network's sizes",
                "search trees": f"num_envs={config.num_envs} x num_simulations="
                                f"{_simulations(search)} nodes"}
        if not tree:
            del parts["search trees"]
        worst = max(parts, key=parts.get)
        detail = "; ".join(f"{name} {gib(n)}" for name, n in parts.items())
        raise ValueError(f"the run's state needs about {gib(total)} ({detail}), more than the "
                         f"{gib(limit)} of {where}: lower {said[worst]}, or set {ENV_VAR} if "
                         "the estimate is wrong (docs/training.md, \"Refusals\")")
    if evaluation > limit:
        trees = (f" (search trees of num_simulations={_simulations(eval_search)} nodes "
                 f"{gib(eval_tree * config.eval_games)})" if eval_tree else "")
        raise ValueError(f"an evaluation of eval_games={config.eval_games} games needs about "
                         f"{gib(evaluation)} for its games{trees or ' alone'}, more than the {gib(limit)} "
                         f"of {where}: lower eval_games (or --games)"
                         + (" or the evaluation's num_simulations" if eval_tree else ""))
