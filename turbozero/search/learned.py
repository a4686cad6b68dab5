"""A learned model for the tree kernel: MuZero's representation, dynamics and prediction
(docs/search.md, "Models"; docs/training.md, "Algorithms"), and the `learned` search family:
`search(env, NetworkEvaluator(net.apply, MoverRelativeValues(P)), variables, states, key,
LearnedModelSearch(TreeSearchConfig(...)))` searches the evaluator's model with the kernel.

Implements the kernel's model interface (`turbozero.search.model`):

    model.root(params, states)                   -> (LatentNode [B], ModelOutput)
    model.step(params, key, LatentNode, action)  -> (LatentNode, reward float32[M, P], ModelOutput)

The root is the real position: its observation goes through the representation network, and its
legal actions and terminal flag are the env's. Below the root the search runs on hidden states
only: every action is legal (the network's prior is what steers away from illegal ones, as in
MuZero), no node is terminal, and players move in fixed rotation, `(p + 1) mod P`, which is why
the algorithm asks for an env with `fixed_turn_order`. The network's value and reward vectors
are mover-relative ((me, next, ...), `MoverRelativeValues`); the kernel wants seat order, so
the value is rotated by the node's player and the reward by the player who moved.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from envs.core import State
from turbozero.networks.value_formats import MoverRelativeValues
from turbozero.search.api import SearchResult, register_family
from turbozero.search.kernel import TreeSearchConfig, init_tree, tree_search
from turbozero.search.model import ModelOutput


class LatentNode(NamedTuple):
    """The embedding of a node of a learned-model tree (leading axis M)."""

    hidden: jax.Array  # float32[M, *hidden] the model's hidden state
    player: jax.Array  # int32[M] the player to move


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: jit may close over it
class LearnedModel:
    """apply_fn: `MuZeroNet.apply` (methods "represent", "dynamics", "predict" are called by
    name); value_format: the mover-relative value order of its value and reward heads."""

    apply_fn: Callable[..., Any]
    num_actions: int
    value_format: MoverRelativeValues

    def __post_init__(self) -> None:
        if not isinstance(self.value_format, MoverRelativeValues):
            raise ValueError("a learned model's heads are mover-relative: value_format must be "
                             f"MoverRelativeValues, got {self.value_format!r}")

    @property
    def num_players(self) -> int:
        return self.value_format.num_players

    @property
    def max_children(self) -> int:
        return self.num_actions

    def _predict(self, params, node: LatentNode, legal: jax.Array,
                 terminal: jax.Array) -> ModelOutput:
        logits, value = self.apply_fn(params, node.hidden, method="predict")
        seats = self.value_format.to_player_values(value, node.player, self.num_players)
        seats = jnp.where(terminal[:, None], 0.0, seats).astype(jnp.float32)
        return ModelOutput(legal=legal, prior_logits=logits.astype(jnp.float32), value=seats,
                           player=node.player, terminal=terminal)

    def root(self, params, states: State) -> tuple[LatentNode, ModelOutput]:
        """The real positions `states` (with their observations) as roots."""
        if states.observation is None:
            raise ValueError("a learned model's root needs the states' observations "
                             "(env.observe them first)")
        hidden = self.apply_fn(params, states.observation, method="represent")
        node = LatentNode(hidden=hidden, player=states.current_player.astype(jnp.int32))
        terminal = states.terminated | states.truncated
        return node, self._predict(params, node, states.legal_action_mask, terminal)

    def step(self, params, key, node: LatentNode, action: jax.Array):
        del key  # the learned dynamics are deterministic
        hidden, reward = self.apply_fn(params, node.hidden, action, method="dynamics")
        reward = self.value_format.to_player_values(reward, node.player, self.num_players)
        child = LatentNode(hidden=hidden, player=(node.player + 1) % self.num_players)
        m = action.shape[0]
        out = self._predict(params, child, jnp.ones((m, self.num_actions), jnp.bool_),
                            jnp.zeros((m,), jnp.bool_))
        return child, reward.astype(jnp.float32), out


@dataclasses.dataclass(frozen=True)
class LearnedModelSearch:
    """The `learned` family's config: the tree kernel's `search` settings on the evaluator's
    learned model (`LearnedModel`: its `apply_fn` has the methods "represent", "dynamics" and
    "predict", its value format is `MoverRelativeValues`). The env gives the roots' legal
    actions and terminal flags and the number of actions; below the root the model alone."""

    search: TreeSearchConfig = TreeSearchConfig()
    family: ClassVar[str] = "learned"

    def __post_init__(self) -> None:
        if not isinstance(self.search, TreeSearchConfig):
            raise ValueError(f"LearnedModelSearch.search must be a TreeSearchConfig, got "
                             f"{type(self.search).__name__}")

    def for_evaluation(self) -> "LearnedModelSearch":
        """The kernel's search made deterministic (`search.for_evaluation()`)."""
        return dataclasses.replace(self, search=self.search.for_evaluation())

    def tree_shapes(self, env, states: State, with_wdl: bool = False, *,
                    network: Any = None) -> Any:
        """The tree a search of the batch `states` (arrays or shape structs) holds, as shape
        structs: `jax.eval_shape` of the kernel's own `init_tree` on the learned model, so the
        embeddings are the network's hidden states as its representation makes them and
        nothing is allocated (the memory bound's count, turbozero/memory.py).
        network: `(apply_fn, variables)`, the MuZero network (its variables may be shape
        structs). `with_wdl`: unused (the model's heads have no draw class)."""
        del with_wdl
        if network is None:
            raise ValueError("a learned model's tree holds the network's hidden states: give "
                             "tree_shapes the network, (apply_fn, variables)")
        apply_fn, variables = network
        model = LearnedModel(apply_fn, env.num_actions, MoverRelativeValues(env.num_players))

        def build(v, st):
            if st.observation is None:  # states from the fast path (`env.transition`)
                st = st.replace(observation=jax.vmap(env.observe)(st))
            return init_tree(model, v, st, self.search)
        return jax.eval_shape(build, variables, states)


def _run(env, evaluator, variables, states, key, config, risk_beta=None) -> SearchResult:
    del risk_beta  # refused by `turbozero.search.search`: the model has no risk term here
    model = LearnedModel(evaluator.apply_fn, env.num_actions, evaluator.value_format)
    result, _ = tree_search(model, variables, states, key, config.search)
    return result


register_family("learned", LearnedModelSearch, _run)
