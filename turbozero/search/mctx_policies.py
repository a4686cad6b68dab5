"""The mctx family: DeepMind's mctx policies over any turn-based two-player game of the library,
kept as the reference the tree kernel is checked against (`turbozero.search.search` with an
`MctxConfig`).

The search runs on the true dynamics: a tree node's embedding is the environment `State` itself,
so `recurrent_fn` is the environment's `step` plus one network call. Conventions (docs/search.md):

* Values and rewards are in the game's reward units from the point of view of the player to move
  at the node (4-way head: money equity in points, via `equity`).
* discount = -1 when the player to move changes, +1 when the same player moves again (a turn of
  several actions), 0 after a terminal state.
* Illegal actions are masked inside the tree through the prior logits (mctx masks only the root).
* Stochastic games (`env.is_stochastic`) use `stochastic_muzero_policy`: decision node -> afterstate
  (`env.step_deterministic`) -> chance outcome (`env.step_chance`) with the env's true chance
  probabilities.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Literal, Optional

import chex
import jax
import jax.numpy as jnp
import mctx

from envs.core import Env, State
from envs.sampling import uniform_legal_action
from turbozero.search.acting import act
from turbozero.search.api import (
    NetworkEvaluator, SearchResult, register_family, two_player_values)
from turbozero.search.fpu import FPU_BASE, first_play_urgency
from turbozero.search.noise import mix_legal_noise
from turbozero.validation import check_int, check_real

MctxPolicy = Literal["muzero", "gumbel"]  # which mctx policy searches deterministic games


@dataclasses.dataclass(frozen=True)
class DynamicFPU:
    """Selection Q with dynamic first-play urgency, in the game's value units (no normalisation).

    A visited child has its mean value; an unvisited one `Q_parent - fpu_base * (1 - P)`
    (`turbozero.search.fpu.first_play_urgency`; default `FPU_BASE`, as the tree kernel's), so
    high-prior moves are tried first and a child that proves good keeps its visits only while
    its value beats the parent's by more than the exploration term of the others.

    Why not mctx's default (`qtransform_by_parent_and_siblings`): it min-max normalises over the
    parent and its visited children and completes unvisited children with the minimum, so the
    first child visited scores 1 and every unvisited one 0; with few simulations the search
    then spends every simulation on one child. Measurements: docs/search.md, "Selection Q".
    """

    fpu_base: float = FPU_BASE

    def __post_init__(self) -> None:
        check_real("fpu_base", self.fpu_base, minimum=0)

    def __call__(self, tree: mctx.Tree, node_index: jax.Array) -> jax.Array:
        q = tree.qvalues(node_index)
        visited = tree.children_visits[node_index] > 0
        prior = jax.nn.softmax(tree.children_prior_logits[node_index])
        fpu = first_play_urgency(tree.node_values[node_index], prior, self.fpu_base)
        return jnp.where(visited, q, fpu)


@dataclasses.dataclass(frozen=True)
class MinMaxQ:
    """mctx's own selection Q: min-max normalised over the parent and its children, unvisited
    children completed by the minimum (`mctx.qtransform_by_parent_and_siblings`)."""

    def __call__(self, tree: mctx.Tree, node_index: jax.Array) -> jax.Array:
        return mctx.qtransform_by_parent_and_siblings(tree, node_index)


@dataclasses.dataclass(frozen=True)
class MctxConfig:
    """Settings of the mctx family (hashable, so they may be closed over by `jit`): mctx's
    `muzero_policy` / `gumbel_muzero_policy`, or `stochastic_muzero_policy` for games with
    chance events, on the env's true dynamics."""

    family: ClassVar[str] = "mctx"

    num_simulations: int = 32
    algorithm: MctxPolicy = "muzero"  # tree policy for deterministic games; stochastic is automatic
    max_depth: Optional[int] = None
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    max_num_considered_actions: int = 16  # gumbel only
    # selection Q of PUCT searches (muzero / stochastic): DynamicFPU (docs/search.md) or MinMaxQ
    # (mctx's). fpu_base FPU_BASE = 0 (unvisited = the parent's value) by default: with 8-64
    # simulations and flat priors a positive fpu_base keeps every simulation on the first
    # child, as MinMaxQ does (measured in docs/search.md, "Selection Q").
    q_transform: Any = DynamicFPU()

    def for_evaluation(self) -> "MctxConfig":
        """This search made deterministic for evaluation: no root noise."""
        return dataclasses.replace(self, dirichlet_fraction=0.0)

    def tree_shapes(self, env: Env, states: State, with_wdl: bool = False) -> Any:
        """The tree mctx allocates for a search of the batch `states` (arrays or shape
        structs) on `env`, as shape structs: `jax.eval_shape` of mctx's own allocation
        (`instantiate_tree_from_root`) fed the root this family gives each policy, so nothing
        is allocated or compiled (the memory bound's count, turbozero/memory.py).
        mctx's trees are dense: per node six arrays over every action id (children's index,
        prior logit, value, visits, reward, discount: B x (num_simulations + 1) x
        num_actions x 4 bytes each), over num_actions + num_chance_outcomes in a stochastic
        game, whose nodes keep a state and an afterstate. `with_wdl`: unused (mctx keeps
        one value per node)."""
        del with_wdl
        _check_env(env)
        # mctx's allocation is not public API: tests/training/test_memory_bound.py checks the
        # shapes against the trees of real searches of all three policies
        from mctx._src.base import StochasticRecurrentState
        from mctx._src.search import instantiate_tree_from_root

        def build(st):
            b, a = st.current_player.shape[0], env.num_actions
            logits = jnp.zeros((b, a), jnp.float32)
            value = jnp.zeros((b,), jnp.float32)
            embedding = st.replace(observation=None)  # as `make_root` keeps a node
            extra = None
            if env.is_stochastic:  # what `mctx.stochastic_muzero_policy` makes of the root
                decision_fn, _ = make_stochastic_fns(env, _zero_evaluator(a))
                out, after = decision_fn(None, None, jnp.zeros((b,), jnp.int32), embedding)
                c = out.chance_logits.shape[-1]
                logits = jnp.zeros((b, a + c), jnp.float32)
                embedding = StochasticRecurrentState(
                    state_embedding=embedding, afterstate_embedding=after,
                    is_decision_node=jnp.ones((b,), bool))
            elif self.algorithm == "gumbel":  # the root's Gumbel draws ride in the tree
                extra = mctx.GumbelMuZeroExtraData(root_gumbel=logits)
            root = mctx.RootFnOutput(prior_logits=logits, value=value, embedding=embedding)
            return instantiate_tree_from_root(root, self.num_simulations,
                                              ~st.legal_action_mask, extra)
        return jax.eval_shape(build, states)

    def tree_settings(self, batch: str, env: Env) -> str:
        """The settings the memory bound names for the trees (`batch`: the games searched)."""
        return (f"{batch} x num_simulations={self.num_simulations} nodes x the game's "
                f"{env.num_actions} action ids (mctx's nodes are dense)")

    def __post_init__(self) -> None:
        check_int("num_simulations", self.num_simulations, minimum=1)
        check_int("max_depth", self.max_depth, minimum=1, optional=True)
        check_int("max_num_considered_actions", self.max_num_considered_actions, minimum=1)
        check_real("pb_c_init", self.pb_c_init, above=0)
        check_real("pb_c_base", self.pb_c_base, above=0)
        if self.algorithm not in ("muzero", "gumbel"):
            raise ValueError(f"algorithm must be 'muzero' or 'gumbel', got {self.algorithm!r}")
        if not isinstance(self.q_transform, (DynamicFPU, MinMaxQ)):
            raise ValueError("q_transform must be DynamicFPU(...) or MinMaxQ(), got "
                             f"{self.q_transform!r}")
        check_real("dirichlet_alpha", self.dirichlet_alpha, above=0)
        check_real("dirichlet_fraction", self.dirichlet_fraction, minimum=0, maximum=1)


def _zero_evaluator(num_actions: int) -> Callable:
    """An evaluator of zeros (logits [B, num_actions], value [B]): for shapes only."""

    def evaluate(variables, obs):
        del variables
        b = jax.tree_util.tree_leaves(obs)[0].shape[0]
        return jnp.zeros((b, num_actions), jnp.float32), jnp.zeros((b,), jnp.float32)
    return evaluate


def _masked_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


def _batched_keys(key: jax.Array, n: int) -> jax.Array:
    return jax.random.split(key, n)


def _mover_reward(state: State, mover: jax.Array) -> jax.Array:
    return jnp.take_along_axis(state.rewards, mover[:, None], axis=1)[:, 0]


def _discount(next_state: State, mover: jax.Array) -> jax.Array:
    same = next_state.current_player == mover
    d = jnp.where(same, 1.0, -1.0)
    return jnp.where(next_state.terminated | next_state.truncated, 0.0, d)


def _evaluate(
    evaluator: NetworkEvaluator, variables, state: State, observation: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    obs = state.observation if observation is None else observation
    logits, value = evaluator(variables, obs)
    done = state.terminated | state.truncated
    return _masked_logits(logits, state.legal_action_mask), jnp.where(done, 0.0, value)


def noised_prior_logits(
    key: jax.Array, logits: jax.Array, legal: jax.Array, alpha: float, fraction: float
) -> jax.Array:
    """Root prior logits of `(1 - fraction) * softmax(logits) + fraction * Dir(alpha)` over the
    legal actions (`turbozero.search.noise.mix_legal_noise`, docs/search.md, root noise);
    illegal actions keep the float minimum."""
    prior = jax.nn.softmax(_masked_logits(logits, legal), axis=-1)
    mixed = mix_legal_noise(key, prior, legal, alpha, fraction)
    return _masked_logits(jnp.log(jnp.maximum(mixed, jnp.finfo(mixed.dtype).tiny)), legal)


def make_root(
    evaluator: NetworkEvaluator, variables, states: State,
    noise: Optional[tuple[jax.Array, float, float]] = None,
) -> mctx.RootFnOutput:
    """The root of a search; `noise = (key, alpha, fraction)` mixes Dirichlet noise into the
    prior over the legal actions only."""
    logits, value = _evaluate(evaluator, variables, states)
    if noise is not None and noise[2] > 0:
        key, alpha, fraction = noise
        logits = noised_prior_logits(key, logits, states.legal_action_mask, alpha, fraction)
    # the tree stores states without their observation (recomputed when a node is evaluated):
    # trees over large observations shrink several-fold (docs/envs.md, observations on demand)
    return mctx.RootFnOutput(prior_logits=logits, value=value,
                             embedding=states.replace(observation=None))


def make_recurrent_fn(env: Env, evaluator: NetworkEvaluator) -> Callable:
    """mctx `recurrent_fn` stepping the real environment (deterministic games)."""

    def recurrent_fn(variables, key, action, state):
        keys = _batched_keys(key, action.shape[0])
        # the fast path: the observation is computed once, for the network, and not stored
        next_state = jax.vmap(env.transition)(state, action, keys)
        mover = state.current_player
        logits, value = _evaluate(evaluator, variables, next_state,
                                  jax.vmap(env.observe)(next_state))
        out = mctx.RecurrentFnOutput(
            reward=_mover_reward(next_state, mover),
            discount=_discount(next_state, mover),
            prior_logits=logits,
            value=value,
        )
        return out, next_state

    return recurrent_fn


@chex.dataclass(frozen=True)
class _Afterstate:
    state: State  # result of step_deterministic (maybe a chance state)
    mover: jax.Array  # int32[B] the player who made the decision


def make_stochastic_fns(env: Env, evaluator: NetworkEvaluator) -> tuple[Callable, Callable]:
    """mctx decision / chance recurrent functions over the true chance dynamics."""

    # step_deterministic / step_chance results are observed explicitly, not trusted to carry
    # a fresh `observation` field.
    observe = jax.vmap(env.observe)

    def afterstate_value(variables, after: State, mover: jax.Array) -> jax.Array:
        _, value = evaluator(variables, observe(after))
        sign = jnp.where(after.current_player == mover, 1.0, -1.0)
        done = after.terminated | after.truncated
        # A finished game's value is exact: the mover's reward of the last transition.
        return jnp.where(done, _mover_reward(after, mover), sign * value)

    def decision_recurrent_fn(variables, key, action, state):
        del key
        after = jax.vmap(env.step_deterministic)(state, action)
        mover = state.current_player
        probs = jax.vmap(env.chance_outcome_probs)(after)
        chance_logits = jnp.log(jnp.maximum(probs, jnp.finfo(probs.dtype).tiny))
        out = mctx.DecisionRecurrentFnOutput(
            chance_logits=chance_logits, afterstate_value=afterstate_value(variables, after, mover)
        )
        return out, _Afterstate(state=after, mover=mover)

    def chance_recurrent_fn(variables, key, outcome, afterstate: _Afterstate):
        del key
        next_state = jax.vmap(env.step_chance)(afterstate.state, outcome)
        logits, value = _evaluate(evaluator, variables, next_state, observe(next_state))
        # decision-node embeddings hold no observation (as the root's, `make_root`)
        next_state = next_state.replace(observation=None)
        out = mctx.ChanceRecurrentFnOutput(
            action_logits=logits,
            value=value,
            reward=_mover_reward(afterstate.state, afterstate.mover),
            discount=_discount(next_state, afterstate.mover),
        )
        return out, next_state

    return decision_recurrent_fn, chance_recurrent_fn


def _check_env(env: Env) -> None:
    if env.is_simultaneous:
        raise ValueError(
            f"{env.id} is a simultaneous-move game: use turbozero.search.mcgs, not mctx"
        )
    if env.num_players != 2:
        raise ValueError(f"{env.id} has {env.num_players} players: mctx's values are for the "
                         "player to move of a two-player zero-sum game; use the tree kernel "
                         "(TreeSearchConfig), which keeps one value per seat")


def mctx_search(
    env: Env,
    evaluator: NetworkEvaluator,
    variables: Any,
    states: State,
    key: jax.Array,
    config: MctxConfig,
    risk_beta: Optional[jax.Array] = None,
) -> SearchResult:
    """The mctx family (`turbozero.search.search` with an `MctxConfig`): a batch of decision
    states (leading axis B) searched by mctx on the env's true dynamics. Pure and jittable
    (close over `env`, `evaluator` and `config`). Two-player games; no risk term."""
    del risk_beta  # refused by `turbozero.search.search`: mctx has no risk term
    _check_env(env)
    if states.observation is None:  # states from the fast path (`env.transition`)
        states = states.replace(observation=jax.vmap(env.observe)(states))
    k_noise, key = jax.random.split(key)
    # Gumbel roots explore through their Gumbel draws; PUCT roots get the Dirichlet noise here,
    # over the legal actions, and mctx is given a zero fraction (its own noise covers all actions).
    noise = None if config.algorithm == "gumbel" and not env.is_stochastic else (
        k_noise, config.dirichlet_alpha, config.dirichlet_fraction)
    root = make_root(evaluator, variables, states, noise)
    invalid = ~states.legal_action_mask
    common = dict(
        params=variables,
        rng_key=key,
        root=root,
        num_simulations=config.num_simulations,
        invalid_actions=invalid,
        max_depth=config.max_depth,
    )
    if env.is_stochastic:
        decision_fn, chance_fn = make_stochastic_fns(env, evaluator)
        out = mctx.stochastic_muzero_policy(
            decision_recurrent_fn=decision_fn,
            chance_recurrent_fn=chance_fn,
            dirichlet_fraction=0.0,
            qtransform=config.q_transform,
            pb_c_init=config.pb_c_init,
            pb_c_base=config.pb_c_base,
            **common,
        )
    elif config.algorithm == "gumbel":
        out = mctx.gumbel_muzero_policy(
            recurrent_fn=make_recurrent_fn(env, evaluator),
            max_num_considered_actions=config.max_num_considered_actions,
            **common,
        )
    else:
        out = mctx.muzero_policy(
            recurrent_fn=make_recurrent_fn(env, evaluator),
            dirichlet_fraction=0.0,
            qtransform=config.q_transform,
            pb_c_init=config.pb_c_init,
            pb_c_base=config.pb_c_base,
            **common,
        )
    weights = jnp.where(states.legal_action_mask, out.action_weights, 0.0)
    weights = weights / jnp.maximum(weights.sum(-1, keepdims=True), 1e-12)
    root_value = out.search_tree.node_values[:, mctx.Tree.ROOT_INDEX]
    summary = out.search_tree.summary()
    action = out.action  # Gumbel: the sequential-halving winner
    if env.is_stochastic or config.algorithm != "gumbel":
        # PUCT roots recommend as every family does (`turbozero.search.acting.act` at tau = 0:
        # the most visited, ties at random), not by mctx's own draw at its temperature, which
        # is discarded; its key is apart from mctx's, so the search itself is unchanged
        action = act(jax.random.fold_in(key, 1), summary.visit_counts.astype(jnp.float32),
                     states.legal_action_mask, 0.0)
    return SearchResult(
        action=action, policy=weights, root_value=root_value,
        root_values=two_player_values(root_value, states.current_player, env.num_players),
        stats={"root_visits": jnp.where(states.legal_action_mask, summary.visit_counts, 0)})


def random_actions(states: State, key: jax.Array) -> jax.Array:
    """Uniformly random legal actions for a batch of states (works on batched masks: [B, A], or
    [B, P, A] with one action per player). `envs.sampling.uniform_legal_action` draws one
    uniform number per game; a masked `jax.random.categorical` drew one Gumbel variate per
    action, ~200x slower over thousands of action ids (docs/benchmarks.md)."""
    mask = states.legal_action_mask
    flat = mask.reshape((-1, mask.shape[-1]))
    keys = jax.random.split(key, flat.shape[0])
    actions = jax.vmap(uniform_legal_action)(keys, flat)
    return actions.reshape(mask.shape[:-1]).astype(jnp.int32)


register_family("mctx", MctxConfig, mctx_search)
