"""The `cpu` search family: `turbozero.search.search(..., config=CPUSearchConfig(...))` searches
each root of a batch with the C++ tree (docs/cpu_search.md, "The `cpu` search family").

Host-side, not jittable: the C++ coordinator (`turbozero.search.cpu.selfplay`) plays one move
of one game per root, its game g starting from root g (`make_pool_evaluator`'s given roots),
with one worker thread; every round of leaves, one per root, goes through one jitted JAX call
(step the parent state, observe, run the network), as in `cpu_self_play`. Root noise is drawn
by the C++ tree (`dirichlet_alpha`, `dirichlet_fraction`, seeded from the key), and the move is
recommended from the root visits by `turbozero.search.acting.act` at tau = 0 (the most
visited, ties at random). With one leaf per step and no noise the root visits equal the
tree kernel's (`CPUSearchConfig.from_tree`, tests/search/test_cpu_family.py).
"""

from __future__ import annotations

import collections
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.networks.value_formats import mover_to_seats
from turbozero.search.acting import ARGMAX, act
from turbozero.search.api import SearchResult
from turbozero.search.cpu.selfplay import (
    CPUSelfPlayConfig, _wdl_head, build_coordinator, check_env, make_pool_evaluator,
    run_coordinator)
from turbozero.search.cpu.tree import CPUSearchConfig

# pool evaluators by (env, evaluator), so that a search with the same network does not compile
# again (their batch sizes compile once each); a few, the most recently used kept
_POOL_EVALUATORS: collections.OrderedDict = collections.OrderedDict()
_MAX_POOL_EVALUATORS = 8


def _pool_evaluator(env, evaluator):
    # the key seeds new games (unused here: the games start from the given roots) and the
    # transitions of stochastic games (refused by the CPU path): a fixed one is the same search
    try:
        cache_key = (env, evaluator)
        hash(cache_key)
    except TypeError:  # an unhashable evaluator: compiled per search
        return make_pool_evaluator(env, evaluator, jax.random.PRNGKey(0))
    if cache_key in _POOL_EVALUATORS:
        _POOL_EVALUATORS.move_to_end(cache_key)
    else:
        _POOL_EVALUATORS[cache_key] = make_pool_evaluator(env, evaluator, jax.random.PRNGKey(0))
        while len(_POOL_EVALUATORS) > _MAX_POOL_EVALUATORS:
            _POOL_EVALUATORS.popitem(last=False)
    return _POOL_EVALUATORS[cache_key]


def play_config(config: CPUSearchConfig, num_games: int, seed: int = 0) -> CPUSelfPlayConfig:
    """The self-play of one move a search of `num_games` roots runs (`cpu_search`); the memory
    bound counts its pools (`CPUSearchConfig.tree_shapes`, `host_bytes`, the same slots)."""
    return CPUSelfPlayConfig(
        search=config, num_workers=1, num_games=num_games,
        num_simulations=config.num_simulations, leaves_per_step=config.leaves_per_step,
        max_steps=1,
        # no subtree is kept: the root and one state per simulation
        slots_per_game=config._slots(),
        batch_tiers=(num_games * config.leaves_per_step,), seed=seed)


def _refuse_tracers(**arrays) -> None:
    for name, value in arrays.items():
        if any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(value)):
            raise ValueError(
                "the 'cpu' search family runs on the host (the C++ tree) and cannot be traced "
                f"(`{name}` is a JAX tracer): call turbozero.search.search with a "
                "CPUSearchConfig outside jax.jit / vmap (or use TreeSearchConfig, the same "
                "search in JAX: CPUSearchConfig.from_tree)")


def cpu_search(env, evaluator, variables, states, key: jax.Array, config: CPUSearchConfig,
               risk_beta: Optional[jax.Array] = None) -> SearchResult:
    """Search a batch of B root states with the C++ tree (module docstring).

    evaluator: `evaluator(variables, obs) -> (logits, value for the player to move)`, e.g. a
    `NetworkEvaluator` (with a WDL value format in a two-player game the result carries the
    root's `root_wdl`). risk_beta: float32[B, P] each seat's entropic-risk beta (selection at a
    node uses its mover's; None: `config.risk_beta`). Deterministic turn-based games of one or
    two players; a ValueError for another env or inside `jax.jit`.

    Returns a `SearchResult`: action int32[B], policy float32[B, A] (the root visit
    distribution), root_value float32[B] for the mover, root_values float32[B, P], root_wdl
    float32[B, 3] or None, stats `root_visits` int32[B, A] and `risk_value` float32[B] (the
    root's LogSumExp soft value at its mover's beta, the kernel's `risk_value`). A terminal
    root is not searched: zero visits, policy and values (its outcome as `root_wdl`), and an
    action drawn among its mask.
    """
    _refuse_tracers(states=states, key=key, variables=variables, risk_beta=risk_beta)
    if not isinstance(config, CPUSearchConfig):
        raise ValueError(f"the cpu family takes a CPUSearchConfig, got {config!r}")
    check_env(env)
    states = jax.device_get(states)
    legal = np.asarray(states.legal_action_mask, bool)
    b, num_actions = legal.shape
    num_players = int(env.num_players)
    mover = np.asarray(states.current_player, np.int32).reshape(b)
    terminal = np.asarray(states.terminated | states.truncated, bool).reshape(b)
    betas = None
    if risk_beta is not None:
        betas = np.asarray(risk_beta, np.float64)
        if betas.shape != (b, num_players):
            raise ValueError(f"risk_beta must be float32[{b}, {num_players}] (one beta per root "
                             f"and seat), got shape {betas.shape}")
    live = np.flatnonzero(~terminal)
    seed, k_act = _seed_and_key(key)

    visits = np.zeros((b, num_actions), np.int32)
    root_value = np.zeros(b, np.float32)
    soft_value = np.zeros(b, np.float32)
    wdl_head = _wdl_head(evaluator, env)
    root_wdl = None
    if wdl_head is not None:  # a terminal root's WDL is its outcome, as the kernel's
        reward = np.asarray(states.rewards, np.float32).reshape(b, -1)[np.arange(b), mover]
        root_wdl = np.stack([reward > 0, reward == 0, reward < 0], -1).astype(np.float32)
    if live.size:
        seed = int(seed)
        # one move of one game per live root, one worker (each tree's search is then the one
        # `SearchTree` runs alone), all its leaves in one batch of the one compiled size
        play = play_config(config, int(live.size), seed)
        seat_betas = None
        if betas is not None:  # a one-player game's one seat: both C++ seats
            seat_betas = betas[live] if num_players == 2 else np.repeat(betas[live], 2, axis=1)
        coord = build_coordinator(env, play, seat_betas, ARGMAX)
        roots = jax.tree_util.tree_map(lambda x: jnp.asarray(np.asarray(x)[live]),
                                       states.replace(observation=None))
        run_coordinator(coord, env, _pool_evaluator(env, evaluator), variables, play, roots)
        for i, record in zip(live, coord.records()):
            move = record["moves"][0]
            visits[i, move["actions"]] = move["visits"]
            root_value[i] = move["root_value"]
            soft_value[i] = move["soft_value"]
            w = move["root_wdl"]
            if root_wdl is not None and w["count"]:
                root_wdl[i] = (w["win"], w["draw"], w["loss"])

    weights = visits.astype(np.float32)
    policy = weights / np.maximum(weights.sum(-1, keepdims=True), 1.0)
    action = _act(k_act, weights, legal, 0.0)
    root_values = mover_to_seats(root_value, mover, num_players)
    return SearchResult(
        action=jnp.asarray(action, jnp.int32),
        policy=jnp.asarray(policy),
        root_value=jnp.asarray(root_value),
        root_values=jnp.asarray(root_values, jnp.float32),
        root_wdl=None if root_wdl is None else jnp.asarray(root_wdl),
        stats={"root_visits": jnp.asarray(visits), "risk_value": jnp.asarray(soft_value)},
    )


# jitted: run eagerly, the key split, the seed draw and the acting rule were 47 eager ops per
# search (benchmarks/tools/timing.py refused them in a timed call)
@jax.jit
def _seed_and_key(key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(the C++ coordinator's seed, int32, and the acting key) from a search's key."""
    k_seed, k_act = jax.random.split(key)
    return jax.random.randint(k_seed, (), 0, np.iinfo(np.int32).max), k_act


_act = jax.jit(act, static_argnums=3)


__all__ = ["cpu_search", "play_config"]
