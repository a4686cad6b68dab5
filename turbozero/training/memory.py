"""Sizes bounded by memory before anything is built: the Trainer's loop state
(docs/training.md, "Refusals").

The Trainer knows the shapes of its whole loop state before it allocates any of it
(`jax.eval_shape` of the state's build: replay, games in progress, network and optimizer), and
an evaluation holds `eval_games` games of the same per-game size. When one copy of that state is
larger than the memory of the device it lives on, the run cannot start: it used to hang for
minutes (`num_envs=10**9`) or end in a page of XLA out-of-memory traceback naming no setting.
It is refused in one line naming the settings and the bytes instead.

The estimate counts what the state holds and what the searches hold: self-play's search of the
`num_envs` games and the evaluation's of `eval_games`. Every search config of the library
states its own (`tree_shapes(env, states, with_wdl)`, counted by turbozero/memory.py, which a
direct search call uses too): the tree kernel's trees (`empty_tree`), mctx's dense trees
(`instantiate_tree_from_root`), the graph search's node tables (`_init_graph`), the learned
model's trees of hidden states (`init_tree` on the network's representation, which needs
`network=(apply_fn, variables)`), the 1-ply search's batch of results, the complete-move
players' listings at each ply level and their observations (afterstate TD's self-play player,
`TDConfig`, and its expected targets' replies; TD's replay is part of the state), and the C++
path's device-side state pool (`make_state_pool`). The C++ trees live in host memory
(`host_bytes(env, states)`: the extension's NODE_BYTES times the nodes its two pools per game
can hold, `cpu.selfplay.node_pool_bytes`); they are counted with the rest when the device is
the CPU, else checked against the host's memory on their own. It does not count XLA's
temporaries (a search's batch of network activations, the update's gradients, the copy a loop
may make of its carry), so a state that fits may still not run: the bound catches the absurd,
not the tight (docs/training.md lists the measured ratios). A warm start from stored functions
(turbozero/stored_functions.py) is checked too, on the stored export's result shapes.
"""

from __future__ import annotations

from typing import Any

from turbozero import memory as shared
# the generic part (bytes of shapes, the memory to fit, the refusal's wording) is the one a
# direct search call uses too (turbozero/memory.py)
from turbozero.memory import (
    check_host_trees, device_memory, gib, refusal_tail, search_host_bytes, search_tree_bytes,
    tree_bytes, tree_settings, with_batch)


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
    if host and not shared.on_host(device):
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
        if eval_host and not shared.on_host(device):
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
                         f"{gib(limit)} of {where}: lower {said[worst]}{refusal_tail()}")
    if evaluation > limit:
        trees = (f" (search trees of {eval_settings}: {gib(eval_tree)})" if eval_tree else "")
        raise ValueError(f"an evaluation of eval_games={config.eval_games} games needs about "
                         f"{gib(evaluation)} for its games{trees or ' alone'}, more than the "
                         f"{gib(limit)} of {where}: lower eval_games (or --games)"
                         + (" or the evaluation search's settings named there" if eval_tree else ""))
