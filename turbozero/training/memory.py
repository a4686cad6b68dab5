"""Sizes bounded by memory before anything is built (docs/training.md, "Refusals").

The Trainer knows the shapes of its whole loop state before it allocates any of it
(`jax.eval_shape` of the state's build: replay, games in progress, network and optimizer), and
an evaluation holds `eval_games` games of the same per-game size. When one copy of that state is
larger than the memory of the device it lives on, the run cannot start: it used to hang for
minutes (`num_envs=10**9`) or end in a page of XLA out-of-memory traceback naming no setting.
It is refused in one line naming the settings and the bytes instead.

The estimate counts what the state holds and the trees the searches hold: self-play's search of
the `num_envs` games and the evaluation's of `eval_games`. Every search config of the library
states its own (`tree_shapes(env, states, with_wdl)`: shape structs from `jax.eval_shape` of
the search's own allocation, so nothing is counted by hand and nothing is allocated): the tree
kernel's trees (`empty_tree`), mctx's dense trees (`instantiate_tree_from_root`), the graph
search's node tables (`_init_graph`), the learned model's trees of hidden states (`init_tree` on
the network's representation, which needs `network=(apply_fn, variables)`), the 1-ply search's
batch of results, and the C++ path's device-side state pool (`make_state_pool`). The C++ trees
live in host memory (`host_bytes(env, states)`: the extension's NODE_BYTES times the nodes its
two pools per game can hold, `cpu.selfplay.node_pool_bytes`); they are counted with the rest
when the device is the CPU, else checked against the host's memory on their own. It does not
count XLA's temporaries (a search's batch of network activations, the update's gradients, the
copy a loop may make of its carry), so a state that fits may still not run: the bound catches
the absurd, not the tight (docs/training.md lists the measured ratios). A warm start from stored
functions (turbozero/stored_functions.py) is checked too, on the stored export's result shapes.
"""

from __future__ import annotations

import inspect
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
    return _physical_memory()


def _physical_memory() -> tuple[Optional[int], str]:
    try:
        return (os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),
                "this machine's memory")
    except (ValueError, OSError, AttributeError):
        return None, "unknown"


def search_tree_bytes(search_config: Any, env: Any, states: Any, with_wdl: bool,
                      network: Any = None) -> int:
    """Bytes of the trees a search of the batch `states` holds on its device (the config's
    `tree_shapes`, module docstring); 0 for a config that cannot say. `network`: `(apply_fn,
    variables)`, for a config whose trees hold the network's outputs (a learned model)."""
    shapes_of = getattr(search_config, "tree_shapes", None)
    if search_config is None or not callable(shapes_of):
        return 0
    extra = ({"network": network}
             if "network" in inspect.signature(shapes_of).parameters else {})
    return tree_bytes(shapes_of(env, states, with_wdl=with_wdl, **extra))


def search_host_bytes(search_config: Any, env: Any, states: Any) -> int:
    """Bytes of the trees a search of the batch `states` holds in host memory (the C++
    path's node pools: the config's `host_bytes`); 0 for one that holds none."""
    bytes_of = getattr(search_config, "host_bytes", None)
    return int(bytes_of(env, states)) if callable(bytes_of) else 0


def host_memory() -> tuple[Optional[int], str]:
    """(bytes, what) of the host's memory: `TURBOZERO_MEMORY_LIMIT` when set, else the
    physical memory; None when unknown or the check is off."""
    if ENV_VAR in os.environ:
        return parse_limit(os.environ[ENV_VAR]), f"{ENV_VAR}"
    return _physical_memory()


def _simulations(search_config: Any) -> Any:
    inner = getattr(search_config, "search", None)  # MuZeroConfig, LearnedModelSearch
    return getattr(search_config, "num_simulations",
                   getattr(inner, "num_simulations", "?"))


def tree_settings(search_config: Any, batch: str, env: Any) -> str:
    """The settings that size a search's trees, for a refusal (`batch`: e.g. num_envs=64):
    the config's own `tree_settings` where it has one, else batch x num_simulations."""
    said = getattr(search_config, "tree_settings", None)
    if callable(said):
        return said(batch, env)
    return f"{batch} x num_simulations={_simulations(search_config)} nodes"


def with_batch(states: Any, batch: int) -> Any:
    """Shape structs of `states` (arrays or shape structs, leading axis the games) for
    `batch` games."""
    return jax.tree_util.tree_map(
        lambda x: jax.ShapeDtypeStruct((batch,) + tuple(x.shape[1:]), x.dtype), states)


def _on_host(device: Any) -> bool:
    device = jax.devices()[0] if device is None else device
    return getattr(device, "platform", "cpu") == "cpu"


def _refusal_tail() -> str:
    return f", or set {ENV_VAR} if the estimate is wrong (docs/training.md, \"Refusals\")"


def check_host_trees(host: int, settings: str) -> None:
    """ValueError (one line) when trees held in host memory (`host` bytes, sized by
    `settings`) need more than the host's memory (`host_memory`)."""
    limit, where = host_memory()
    if limit is not None and host > limit:
        raise ValueError(f"the search's trees in host memory (the C++ node pools) need about "
                         f"{gib(host)}, more than the {gib(limit)} of {where}: lower "
                         f"{settings}{_refusal_tail()}")


def check_loop_state(shapes: Any, config: Any, device: Any = None, *, env: Any = None,
                     with_wdl: bool = False, eval_search: Any = None,
                     network: Any = None) -> None:
    """ValueError (one line) when one copy of the loop state of `shapes` (`LoopState` of shape
    structs) with the self-play search's trees, or the evaluation's games with theirs, needs
    more than the device's memory (`device_memory`), or trees in host memory more than the
    host's. `env`: the game, for the trees (None: trees not counted); `eval_search`: the
    evaluation's search config; `network`: `(apply_fn, variables)` for trees that hold the
    network's outputs (a learned model's)."""
    limit, where = device_memory(device)
    if limit is None:
        return
    search = config.algorithm.search
    num_envs = max(config.num_envs, 1)
    states = shapes.collector.env_state if env is not None else None
    tree = search_tree_bytes(search, env, states, with_wdl, network) if env is not None else 0
    host = search_host_bytes(search, env, states) if env is not None else 0
    settings = tree_settings(search, f"num_envs={config.num_envs}", env)
    if host and not _on_host(device):
        check_host_trees(host, settings)
    elif host:
        tree += host  # the device is the host: one memory
    parts = {"replay": tree_bytes(shapes.buffer),
             "games in progress": tree_bytes(shapes.collector),
             "network and optimizer": tree_bytes(shapes.train_state),
             "search trees": tree}
    total = sum(parts.values()) + tree_bytes(shapes.key) + tree_bytes(shapes.iteration)
    per_game = parts["games in progress"] // num_envs
    eval_tree = 0
    if env is not None and eval_search is not None and config.eval_games > 0:
        eval_states = with_batch(states, config.eval_games)
        eval_tree = search_tree_bytes(eval_search, env, eval_states, with_wdl, network)
        eval_host = search_host_bytes(eval_search, env, eval_states)
        eval_settings = tree_settings(eval_search, f"eval_games={config.eval_games}", env)
        if eval_host and not _on_host(device):
            check_host_trees(eval_host, eval_settings)
        else:
            eval_tree += eval_host
    evaluation = per_game * config.eval_games + eval_tree
    if total > limit:
        said = {"replay": f"num_envs={config.num_envs} x replay_capacity="
                          f"{config.replay_capacity} positions",
                "games in progress": f"num_envs={config.num_envs}",
                "network and optimizer": "the network's sizes",
                "search trees": settings}
        if not tree:
            del parts["search trees"]
        worst = max(parts, key=parts.get)
        detail = "; ".join(f"{name} {gib(n)}" for name, n in parts.items())
        raise ValueError(f"the run's state needs about {gib(total)} ({detail}), more than the "
                         f"{gib(limit)} of {where}: lower {said[worst]}{_refusal_tail()}")
    if evaluation > limit:
        trees = (f" (search trees of {eval_settings}: {gib(eval_tree)})" if eval_tree else "")
        raise ValueError(f"an evaluation of eval_games={config.eval_games} games needs about "
                         f"{gib(evaluation)} for its games{trees or ' alone'}, more than the "
                         f"{gib(limit)} of {where}: lower eval_games (or --games)"
                         + (" or the evaluation search's settings named there" if eval_tree else ""))
