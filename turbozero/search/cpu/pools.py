"""The C++ path's pools as the memory bound counts them: the device-side state pool (env
states the host trees refer to by slot) and the bytes of the C++ node pools. Apart from the
self-play (selfplay.py) so that the search config (tree.py) can count its own pools without
importing the self-play that imports it."""

from __future__ import annotations

import functools
from typing import Any, Callable

import jax
import jax.numpy as jnp

from turbozero.search.cpu._ext import require_extension

# the node pools' defaults (CPUSelfPlayConfig's, and a direct search's, which runs one)
NODES_PER_BLOCK = 16384
MAX_BLOCKS = 64


def node_pool_bytes(num_games: int, nodes_per_block: int, max_blocks: int,
                    slots_per_game: int, max_children: int) -> int:
    """Bytes the C++ node pools of `num_games` game trees hold at their fullest
    (docs/cpu_search.md, "Node pool"): each tree has two pools (`advance` copies the kept
    subtree into the second), each allocating blocks of `nodes_per_block` nodes of the
    extension's `NODE_BYTES` on demand, up to `max_blocks`, and keeping them. A tree's nodes
    are its root and the children of its expanded nodes, each of which holds one of its
    `slots_per_game` state slots: at most 1 + slots_per_game x max_children (the most legal
    actions), and a block holds at least nodes_per_block - max_children + 1 of them (a run of
    children never spans two blocks)."""
    node = require_extension().NODE_BYTES
    used = 1 + int(slots_per_game) * int(max_children)
    per_block = max(int(nodes_per_block) - int(max_children) + 1, 1)
    blocks = min(int(max_blocks), -(-used // per_block))
    return int(num_games) * 2 * blocks * int(nodes_per_block) * int(node)


def make_state_pool(env, num_slots: int):
    """A pytree of `num_slots` states (observation left out: computed on demand)."""
    return _pool_builder(env, num_slots)()


@functools.lru_cache(maxsize=32)
def _pool_builder(env, num_slots: int) -> Callable[[], Any]:
    """One jitted function per env and pool size: built eagerly, the pool was an init and a
    `jnp.zeros` per state field on every call (dozens of eager ops per call, which
    benchmarks/tools/timing.py refused in a timed call)."""
    one = jax.eval_shape(env.init_state, jax.random.PRNGKey(0))
    return jax.jit(lambda: jax.tree_util.tree_map(
        lambda x: jnp.zeros((num_slots,) + x.shape, x.dtype), one))
