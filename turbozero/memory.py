"""Sizes bounded by memory before anything is built: the part the searches and the Trainer share
(docs/training.md, "Refusals"; docs/search.md, "What search checks").

Every search config of the library states what its search holds for a batch of games as shape
structs (`tree_shapes(env, states, with_wdl)`: `jax.eval_shape` of the search's own allocation,
or the shapes its listing protocol promises, so nothing is counted by hand and nothing is
allocated), and a host-side search the bytes of its host memory (`host_bytes(env, states)`).
This module turns those into bytes, finds the memory they must fit (the device's, the host's,
or `TURBOZERO_MEMORY_LIMIT`) and says a refusal in one line naming the settings. A direct
`turbozero.search.search` call is checked here (`check_search`, at trace time for the jittable
families); the Trainer checks its whole loop state with the same pieces
(turbozero/training/memory.py). XLA's temporaries are not counted (network activations, a
loop's copies), so the bound catches the absurd, not the tight (docs/training.md has the
measured ratios).
"""

from __future__ import annotations

import collections
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


def host_memory() -> tuple[Optional[int], str]:
    """(bytes, what) of the host's memory: `TURBOZERO_MEMORY_LIMIT` when set, else the
    physical memory; None when unknown or the check is off."""
    if ENV_VAR in os.environ:
        return parse_limit(os.environ[ENV_VAR]), f"{ENV_VAR}"
    return _physical_memory()


def on_host(device: Any) -> bool:
    """Whether `device` (None: the default one) keeps its arrays in host memory."""
    device = jax.devices()[0] if device is None else device
    return getattr(device, "platform", "cpu") == "cpu"


def _takes_network(search_config: Any) -> bool:
    shapes_of = getattr(search_config, "tree_shapes", None)
    return callable(shapes_of) and "network" in inspect.signature(shapes_of).parameters


def search_tree_bytes(search_config: Any, env: Any, states: Any, with_wdl: bool,
                      network: Any = None) -> int:
    """Bytes of the trees a search of the batch `states` holds on its device (the config's
    `tree_shapes`, module docstring); 0 for a config that cannot say. `network`: `(apply_fn,
    variables)`, for a config whose trees hold the network's outputs (a learned model)."""
    shapes_of = getattr(search_config, "tree_shapes", None)
    if search_config is None or not callable(shapes_of):
        return 0
    extra = {"network": network} if _takes_network(search_config) else {}
    return tree_bytes(shapes_of(env, states, with_wdl=with_wdl, **extra))


def search_host_bytes(search_config: Any, env: Any, states: Any) -> int:
    """Bytes of the trees a search of the batch `states` holds in host memory (the C++
    path's node pools: the config's `host_bytes`); 0 for one that holds none."""
    bytes_of = getattr(search_config, "host_bytes", None)
    return int(bytes_of(env, states)) if callable(bytes_of) else 0


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


def refusal_tail(doc: str = "docs/training.md, \"Refusals\"") -> str:
    return f", or set {ENV_VAR} if the estimate is wrong ({doc})"


def check_host_trees(host: int, settings: str, doc: str = "docs/training.md, \"Refusals\"") -> None:
    """ValueError (one line) when trees held in host memory (`host` bytes, sized by
    `settings`) need more than the host's memory (`host_memory`)."""
    limit, where = host_memory()
    if limit is not None and host > limit:
        raise ValueError(f"the search's trees in host memory (the C++ node pools) need about "
                         f"{gib(host)}, more than the {gib(limit)} of {where}: lower "
                         f"{settings}{refusal_tail(doc)}")


# ------------------------------------------------------------------- a direct search call
_SEARCH_DOC = "docs/search.md, \"What search checks\""


def _struct(x: Any) -> Any:
    return jax.ShapeDtypeStruct(tuple(x.shape), x.dtype) if hasattr(x, "shape") else x


def _shapes(tree: Any) -> Any:
    """Shape structs of a pytree of arrays or tracers (what `eval_shape` is given)."""
    return jax.tree_util.tree_map(_struct, tree)


def _key(tree: Any) -> tuple:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") else x
                          for x in leaves)


# bytes of searches already counted, by (config, env, shapes, with_wdl): a search called again
# eagerly with the same shapes costs a look-up, not an `eval_shape`; the most recent kept
_COUNTED: collections.OrderedDict = collections.OrderedDict()
_MAX_COUNTED = 64


def search_bytes(config: Any, env: Any, states: Any, with_wdl: bool,
                 network: Any = None) -> tuple[int, int]:
    """(device bytes, host bytes) a search of `config` on the batch `states` holds (its
    `tree_shapes` and `host_bytes`), remembered per config, env and shapes."""
    states = _shapes(states)
    if network is not None and not _takes_network(config):
        network = None  # a key per network only where the trees hold its outputs
    network = None if network is None else (network[0], _shapes(network[1]))
    try:
        key = (config, env, _key(states), bool(with_wdl),
               None if network is None else (network[0], _key(network[1])))
        hash(key)
    except TypeError:  # an unhashable config or env (a field holding a list): not remembered
        key = None
    if key is not None and key in _COUNTED:
        _COUNTED.move_to_end(key)
        return _COUNTED[key]
    counted = (search_tree_bytes(config, env, states, with_wdl, network),
               search_host_bytes(config, env, states))
    if key is not None:
        _COUNTED[key] = counted
        while len(_COUNTED) > _MAX_COUNTED:
            _COUNTED.popitem(last=False)
    return counted


def check_search(config: Any, env: Any, states: Any, *, with_wdl: bool = False,
                 network: Any = None, device: Any = None) -> None:
    """ValueError (one line) when the trees a search of `config` on the batch `states` holds
    need more than the device's memory (`device_memory`), or its host-side trees more than the
    host's: before anything of the search is built. `states` may be arrays, tracers or shape
    structs; `network`: `(apply_fn, variables)` for a config whose trees hold the network's
    outputs."""
    limit, where = device_memory(device)
    host_limit, _ = host_memory()
    if limit is None and host_limit is None:
        return
    try:
        tree, host = search_bytes(config, env, states, with_wdl, network)
    except (TypeError, IndexError, AttributeError):
        # a config that cannot state the trees for this env (one its family does not search,
        # which the family refuses in its own words when it runs): not counted here
        return
    batch = int(jax.tree_util.tree_leaves(_shapes(states))[0].shape[0])
    settings = tree_settings(config, f"batch={batch}", env)
    if host and not on_host(device):
        check_host_trees(host, settings, _SEARCH_DOC)
    else:
        tree += host  # the device is the host: one memory
    if limit is not None and tree > limit:
        raise ValueError(f"a search of {type(config).__name__} needs about {gib(tree)} for its "
                         f"trees, more than the {gib(limit)} of {where}: lower {settings}"
                         f"{refusal_tail(_SEARCH_DOC)}")


__all__ = ["ENV_VAR", "check_host_trees", "check_search", "device_memory", "gib",
           "host_memory", "on_host", "parse_limit", "search_bytes", "search_host_bytes",
           "search_tree_bytes", "tree_bytes", "tree_settings", "with_batch"]
