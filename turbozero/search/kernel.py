"""The batched tree-search kernel: search loop and public entry (docs/search.md, "The tree
kernel").

One step of the loop selects L = `leaves_per_step` leaves in every tree (virtual loss on their
paths steers the later ones of the step away from the earlier ones), evaluates all B * L of
them with one `model.step` call, writes the new nodes and backs the values up. Selection and
backup touch one `[K]` row per node on a path, so the work per simulation is O(depth * K), not
O(N * K): the tree is never read or written as a whole inside the loop.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple, Optional, Union

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.search.acting import act, random_argmax
from turbozero.search.backup import backup
from turbozero.search.loops import batch_while, default_unroll
from turbozero.search.model import EnvModel, ModelOutput
from turbozero.search.api import SearchResult, register_family
from turbozero.search.roots import GumbelRoot, PUCTRoot, RootExtra
from turbozero.search.selection import (
    MctxPUCT, NodeStats, SpecPUCT, masked_argmax, node_stats, row_stats)
from turbozero.search.tree import (
    NO_ACTION, ROOT_INDEX, UNVISITED, Tree, compact_children, empty_tree)
from turbozero.validation import check_int, check_real

Selection = Union[SpecPUCT, MctxPUCT]
RootPolicy = Union[PUCTRoot, GumbelRoot]


@dataclasses.dataclass(frozen=True)
class TreeSearchConfig:
    """Static settings of the tree kernel, the `tree` family (hashable: close over it in `jit`).

    num_simulations: evaluations per search (the root's is extra).
    leaves_per_step: L leaves per tree per step, evaluated together (virtual loss between
        them); 1 is the sequential search. num_simulations need not be a multiple of L: the
        last step selects fewer leaves.
    selection: `SpecPUCT(...)` (docs/search.md) or `MctxPUCT(...)` (mctx's).
    root: `PUCTRoot(dirichlet_alpha, dirichlet_fraction)` or `GumbelRoot(...)`.
    max_children: K, child slots per node; None takes the model's bound
        (`env.max_legal_actions`, else `env.num_actions`). Below the game's true bound a node
        with more legal actions keeps the K of highest prior (`tree.compact_children`).
    extra_nodes: node capacity beyond `num_simulations + 1`, for a subtree carried by
        `reuse_subtree` (its nodes are kept only while they fit).
    discount: gamma of `Q(s, a) = r + gamma * V(s')` in selection and backup (1 for games
        searched on their true rules; a learned model may discount, docs/search.md).
    walk_unroll: levels the selection walk and the backup take per loop trip; None takes the
        backend's measured default (`turbozero.search.loops.default_unroll`: 1 on CPU, more on
        a GPU, where every trip is a round trip to the host). Results do not depend on it.
    """

    num_simulations: int = 32
    leaves_per_step: int = 1
    selection: Any = SpecPUCT()
    root: Any = PUCTRoot()
    max_children: Optional[int] = None
    extra_nodes: int = 0
    discount: float = 1.0
    walk_unroll: Optional[int] = None
    family: ClassVar[str] = "tree"

    def for_evaluation(self) -> "TreeSearchConfig":
        """This search made deterministic for evaluation (docs/training.md, "Algorithms"): its
        root without noise (`root.for_evaluation()`)."""
        return dataclasses.replace(self, root=self.root.for_evaluation())

    def __post_init__(self) -> None:
        check_int("num_simulations", self.num_simulations, minimum=1)
        check_int("leaves_per_step", self.leaves_per_step, minimum=1)
        if self.leaves_per_step > self.num_simulations:
            raise ValueError(f"leaves_per_step ({self.leaves_per_step}) must not exceed "
                             f"num_simulations ({self.num_simulations})")
        if not isinstance(self.selection, (SpecPUCT, MctxPUCT)):
            raise ValueError("selection must be SpecPUCT(...) or MctxPUCT(...), got "
                             f"{self.selection!r}")
        if not isinstance(self.root, (PUCTRoot, GumbelRoot)):
            raise ValueError(f"root must be PUCTRoot(...) or GumbelRoot(...), got {self.root!r}")
        check_int("max_children", self.max_children, minimum=1, optional=True)
        check_int("extra_nodes", self.extra_nodes, minimum=0)
        check_real("discount", self.discount, above=0, maximum=1)
        check_int("walk_unroll", self.walk_unroll, minimum=1, optional=True)

    @property
    def num_nodes(self) -> int:
        return self.num_simulations + 1 + self.extra_nodes

    def children_bound(self, model) -> int:
        return int(self.max_children if self.max_children is not None else model.max_children)


class _Loop(NamedTuple):
    tree: Tree
    key: jax.Array
    # int32[B, N, K, 3] during the search loop: the tree's children_action, children_index
    # and children_prior (its bits) side by side (`_pack_children`); the tree holds None there
    children: Optional[jax.Array] = None
    trips: Optional[jax.Array] = None  # int32[] while-loop trips of the walks and backups


class _Descent(NamedTuple):
    """One walk in every tree of the batch."""

    node: jax.Array  # int32[B] current node
    slot: jax.Array  # int32[B] slot chosen at `node` (valid when `new`)
    action: jax.Array  # int32[B] action id of that slot
    new: jax.Array  # bool[B] the walk ends by creating a child of `node` at `slot`
    done: jax.Array  # bool[B]
    virtual_loss: Optional[jax.Array]  # int32[B, N] the trees' virtual loss with this walk's
    # added (None with one leaf per step: none is added)


def _leaf_value(out: ModelOutput) -> jax.Array:
    return jnp.where(out.terminal[:, None], 0.0, out.value)


def _seat_wdl(out: ModelOutput, reward: jax.Array) -> jax.Array:
    """float32[M, 3] [P(seat 0 wins), P(draw), P(seat 1 wins)] of M evaluated nodes. A terminal
    node's own evaluation is its outcome, read from the reward of the transition into it for
    its mover (> 0 won, 0 drawn, < 0 lost): games that pay their result when they end."""
    r = jnp.take_along_axis(reward, out.player[:, None], 1)[:, 0]  # [M]
    outcome = jnp.stack([r > 0, r == 0, r < 0], axis=-1).astype(jnp.float32)
    wdl = jnp.where(out.terminal[:, None], outcome, out.wdl)  # mover's [W, D, L]
    return jnp.where((out.player == 0)[:, None], wdl, wdl[:, ::-1])


def _mover_wdl(seat_wdl: jax.Array, player: jax.Array) -> jax.Array:
    """float32[B, 3] [W, D, L] for `player` (int32[B]) from seat-ordered probabilities."""
    return jnp.where((player == 0)[:, None], seat_wdl, seat_wdl[:, ::-1])


def _pack_children(action: jax.Array, index: jax.Array, prior: jax.Array) -> jax.Array:
    """int32[..., K, 3]: a child row's action ids, child nodes and priors (their float32 bits)
    side by side, so that selection reads one row per node and expansion writes one.

    On CPU, XLA splits every gather from or scatter into an array of more than 512 KB over
    two threads (its cost model counts the whole operand as read); at batch 64 each [B, N, K]
    array is 1 MB, and the handoffs cost far more than the reads. Packed, a selection step
    makes one such gather instead of three (docs/benchmarks.md, "The tree kernel against
    its model floor")."""
    return jnp.stack([action, index, jax.lax.bitcast_convert_type(prior, jnp.int32)], axis=-1)


def _unpack_children(packed: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(action, index, prior) of `_pack_children`, bit for bit."""
    return (packed[..., 0], packed[..., 1],
            jax.lax.bitcast_convert_type(packed[..., 2], jnp.float32))


def _write_nodes(
    tree: Tree, b: jax.Array, node: jax.Array, embedding: Any, out: ModelOutput,
    reward: jax.Array, k: int, children: Optional[jax.Array] = None,
) -> tuple[Tree, Optional[jax.Array]]:
    """Expand nodes `node` (int32[M], out of range = skip) of trees `b` (int32[M]). The child
    rows go to the tree's arrays, or to the packed `children` when given (`_Loop.children`);
    returns (tree, children)."""
    legal = out.legal & ~out.terminal[:, None]
    actions, prior = compact_children(legal, out.prior_logits, k)  # [M, K]
    emb = jax.tree_util.tree_map(
        lambda dst, src: dst.at[b, node].set(src, mode="drop"), tree.embedding, embedding)
    if tree.raw_wdl is not None:
        tree = tree._replace(
            raw_wdl=tree.raw_wdl.at[b, node].set(_seat_wdl(out, reward), mode="drop"))
    if tree.chance is not None:
        tree = tree._replace(chance=tree.chance.at[b, node].set(out.chance, mode="drop"))
    tree = tree._replace(
        raw_value=tree.raw_value.at[b, node].set(_leaf_value(out), mode="drop"),
        reward=tree.reward.at[b, node].set(reward, mode="drop"),
        player=tree.player.at[b, node].set(out.player, mode="drop"),
        terminal=tree.terminal.at[b, node].set(out.terminal, mode="drop"),
        embedding=emb,
    )
    if children is not None:
        rows = _pack_children(actions, jnp.full_like(actions, UNVISITED), prior)
        return tree, children.at[b, node].set(rows, mode="drop")
    return tree._replace(
        children_action=tree.children_action.at[b, node].set(actions, mode="drop"),
        children_prior=tree.children_prior.at[b, node].set(prior, mode="drop"),
        children_index=tree.children_index.at[b, node].set(UNVISITED, mode="drop"),
    ), None


def _select_leaves(
    tree: Tree, children: jax.Array, active: jax.Array, extra: RootExtra,
    config: TreeSearchConfig, risk: Optional[jax.Array] = None,
) -> tuple[Tree, jax.Array, jax.Array, jax.Array, jax.Array, jax.Array,
           jax.Array]:
    """Select L leaves in every tree of the batch (embedding-less; its child rows are the
    packed `children`, int32[B, N, K, 3], `_pack_children`), one after the other.

    Returns (tree with the new nodes allocated and virtual loss on the paths, children with
    the new nodes linked, leaf int32[B, L], parent int32[B, L], action int32[B, L], new
    bool[B, L], the walks' loop trips int32[]). A walk ends at a terminal node, at a node
    whose evaluation is pending (allocated earlier in this step: the leaf is evaluated once and
    backed up once per walk), or by allocating the child of an unexpanded slot. `active`:
    bool[L] (the last step of a search may select fewer); `risk`: float32[B, P] the risk beta
    of each seat in each game (None: the selection's own beta).

    Written on the batch, not vmapped over trees: a vmapped `while_loop` whose condition
    differs per tree selects every carried array between old and new on every iteration, and
    on CPU those copies and selects cost more than the walk itself (docs/benchmarks.md,
    "The tree kernel against its model floor"). Here a finished walk keeps its node by
    one `where` on int32[B] and adds no virtual loss; the arrays a walk only reads stay out of
    the loop's carry."""
    sel, root = config.selection, config.root
    n_sims = config.num_simulations
    b, n = tree.batch_size, tree.num_nodes
    rows = jnp.arange(b)

    def scores_of(stats: NodeStats, mover, at_root, extra1, raw, chance, beta_p):
        """float32[K] selection scores at one node of one tree (vmapped below)."""
        beta = None if beta_p is None else beta_p[mover]
        scores = jnp.where(
            at_root, root.scores(sel, stats, extra1, raw, n_sims, beta), sel.scores(stats, beta))
        if chance is not None:
            # an outcome by probability, the least visited relative to it first: mctx's
            # stochastic MuZero rule `argmax(p / (N + 1))` (deterministic), with the
            # selections in flight counted as visits so the L leaves of a step spread
            by_prob = stats.prior / (stats.visits + stats.virtual_loss + 1).astype(jnp.float32)
            scores = jnp.where(chance, by_prob, scores)
        return masked_argmax(scores, stats.valid)

    stats_of = jax.vmap(row_stats, in_axes=(0, 0, 0, 0, 0, None))
    slot_of = jax.vmap(scores_of, in_axes=(0, 0, 0, 0, 0, None if tree.chance is None else 0,
                                           None if risk is None else 0))
    # With one leaf per step the virtual loss a walk adds is never read (a walk reads the
    # children of the nodes on its path, which it has not entered yet) and the backup takes it
    # back: the tree ends the step with the virtual loss it started with. So L = 1 adds none.
    with_vl = active.shape[0] > 1

    unroll = default_unroll(config.walk_unroll)

    def walk(j, carry):
        t, kids_all, leaves, parents, actions, news, trips = carry

        def cond(d: _Descent):
            return jnp.any(~d.done)

        def body(d: _Descent) -> _Descent:
            node = d.node
            tv = t
            if with_vl:  # a finished walk adds none
                vl = d.virtual_loss.at[rows, node].add((~d.done).astype(jnp.int32))
                tv = t._replace(virtual_loss=vl)
            # the one read of the [B, N, K] child arrays: the packed rows, then [B, K] arrays
            acts, kids, prior = _unpack_children(kids_all[rows, node])
            stats = stats_of(tv, node, kids, acts, prior, config.discount)
            mover = tv.player[rows, node]
            raw = tv.raw_value[rows, node, mover]
            chance = None if tv.chance is None else tv.chance[rows, node]
            slot = slot_of(stats, mover, node == ROOT_INDEX, extra, raw, chance, risk)
            # a node's legal actions fill its slots from slot 0 on (`compact_children`), so
            # it has one exactly when slot 0 is valid
            stop = tv.terminal[rows, node] | (tv.node_visits[rows, node] == 0) | ~stats.valid[:, 0]
            child = jnp.take_along_axis(kids, slot[:, None], 1)[:, 0]
            action = jnp.take_along_axis(acts, slot[:, None], 1)[:, 0]
            new = ~stop & (child == UNVISITED)
            done = stop | new
            # a finished walk keeps its node, slot and flags
            return _Descent(node=jnp.where(d.done | done, node, child),
                            slot=jnp.where(d.done, d.slot, slot),
                            action=jnp.where(d.done, d.action, action),
                            new=jnp.where(d.done, d.new, new), done=d.done | done,
                            virtual_loss=vl if with_vl else None)

        start = _Descent(node=jnp.full((b,), ROOT_INDEX, jnp.int32),
                         slot=jnp.zeros((b,), jnp.int32), action=jnp.zeros((b,), jnp.int32),
                         new=jnp.zeros((b,), jnp.bool_),
                         done=jnp.broadcast_to(~active[j], (b,)),
                         virtual_loss=t.virtual_loss if with_vl else None)
        d, walk_trips = batch_while(cond, body, start, unroll)
        new = d.new & active[j]
        idx = jnp.where(new, t.next_node, n)  # out of range: nothing written
        action = d.action
        t = t._replace(
            virtual_loss=(d.virtual_loss.at[rows, idx].add(1, mode="drop") if with_vl
                          else t.virtual_loss),
            parent=t.parent.at[rows, idx].set(d.node, mode="drop"),
            action=t.action.at[rows, idx].set(action, mode="drop"),
            depth=t.depth.at[rows, idx].set(t.depth[rows, d.node] + 1, mode="drop"),
            node_visits=t.node_visits.at[rows, idx].set(0, mode="drop"),
            next_node=t.next_node + new.astype(jnp.int32),
        )
        # the slot's child index: the node just allocated
        kids_all = kids_all.at[rows, jnp.where(new, d.node, n), d.slot, 1].set(idx, mode="drop")
        leaf = jnp.where(new, idx, d.node)
        return (t, kids_all, leaves.at[:, j].set(leaf), parents.at[:, j].set(d.node),
                actions.at[:, j].set(jnp.where(new, action, 0)), news.at[:, j].set(new),
                trips + walk_trips)

    n_leaves = active.shape[0]
    zeros = jnp.zeros((b, n_leaves), jnp.int32)
    init = (tree, children, zeros, zeros, zeros, jnp.zeros((b, n_leaves), jnp.bool_),
            jnp.zeros((), jnp.int32))
    return jax.lax.fori_loop(0, n_leaves, walk, init)


def _without_embedding(tree: Tree) -> Tree:
    return tree._replace(embedding=None)


def init_tree(model, params, root_input: Any, config: TreeSearchConfig) -> Tree:
    """A tree holding only the evaluated root of every game (one visit)."""
    embedding, out = model.root(params, root_input)
    b = out.value.shape[0]
    tree = empty_tree(b, config.num_nodes, config.children_bound(model), model.num_players,
                      embedding, with_wdl=out.wdl is not None,
                      with_chance=out.chance is not None)
    rows = jnp.arange(b)
    root = jnp.full((b,), ROOT_INDEX, jnp.int32)
    tree, _ = _write_nodes(tree, rows, root, embedding, out, jnp.zeros_like(out.value),
                           tree.max_children)
    value = _leaf_value(out)
    if tree.wdl_sum is not None:
        tree = tree._replace(wdl_sum=tree.wdl_sum.at[:, ROOT_INDEX].set(
            tree.raw_wdl[:, ROOT_INDEX]))
    return tree._replace(
        node_visits=tree.node_visits.at[:, ROOT_INDEX].set(1),
        value_sum=tree.value_sum.at[:, ROOT_INDEX].set(value),
        value_sq_sum=tree.value_sq_sum.at[:, ROOT_INDEX].set(value * value),
        next_node=jnp.ones((b,), jnp.int32),
    )


class _Bytes(NamedTuple):
    """Where each leaf of an embedding lies in its packed byte row (`_to_bytes`)."""

    treedef: Any
    shapes: tuple  # per leaf, the shape after the leading axes
    dtypes: tuple
    sizes: tuple  # bytes per node


def _byte_layout(embedding: Any, lead: int) -> Optional[_Bytes]:
    """The packing of an embedding whose leaves have `lead` leading axes, or None where packing
    does not pay (one leaf) or does not apply (a leaf that is not a number or a bool)."""
    leaves, treedef = jax.tree_util.tree_flatten(embedding)
    if len(leaves) < 2 or not all(
            jnp.issubdtype(x.dtype, jnp.number) or x.dtype == jnp.bool_ for x in leaves):
        return None
    shapes = tuple(x.shape[lead:] for x in leaves)
    sizes = tuple(int(np.prod(sh, dtype=np.int64)) * x.dtype.itemsize
                  for sh, x in zip(shapes, leaves))
    return _Bytes(treedef, shapes, tuple(x.dtype for x in leaves), sizes)


def _to_bytes(embedding: Any, lead: int) -> jax.Array:
    """uint8[..., S]: the leaves of one node side by side, bit for bit (bools as 0/1)."""
    parts = []
    for x in jax.tree_util.tree_leaves(embedding):
        if x.dtype == jnp.bool_:
            x = x.astype(jnp.uint8)
        elif x.dtype.itemsize > 1 or x.dtype != jnp.uint8:
            x = jax.lax.bitcast_convert_type(x, jnp.uint8)
        parts.append(x.reshape(x.shape[:lead] + (-1,)))
    return jnp.concatenate(parts, axis=-1)


def _from_bytes(packed: jax.Array, layout: _Bytes) -> Any:
    """The embedding `_to_bytes` packed (leading axes: those of `packed` but the last)."""
    lead, leaves, start = packed.shape[:-1], [], 0
    for shape, dtype, size in zip(layout.shapes, layout.dtypes, layout.sizes):
        x = packed[..., start:start + size]
        start += size
        if dtype == jnp.bool_:
            x = (x != 0).reshape(lead + shape)
        elif dtype.itemsize > 1:
            x = jax.lax.bitcast_convert_type(x.reshape(lead + shape + (dtype.itemsize,)), dtype)
        else:
            x = jax.lax.bitcast_convert_type(x.reshape(lead + shape), dtype)
        leaves.append(x)
    return jax.tree_util.tree_unflatten(layout.treedef, leaves)


def _simulate(model, params, tree: Tree, key: jax.Array, extra: RootExtra,
              config: TreeSearchConfig, risk: Optional[jax.Array] = None) -> _Loop:
    num_l = config.leaves_per_step
    steps = -(-config.num_simulations // num_l)
    b = tree.batch_size
    rows = jnp.broadcast_to(jnp.arange(b)[:, None], (b, num_l))  # [B, L]
    # Inside the loop the nodes' embeddings are one byte array uint8[B, N, S] (the leaves of a
    # state side by side, bit for bit): one gather of the parents and one scatter of the
    # children per step instead of one per leaf (a state may have 20 leaves). On CPU each
    # gather or scatter on a large array is split over threads, and those handoffs cost more
    # than the copies (docs/benchmarks.md, "The tree kernel against its model floor").
    layout = _byte_layout(tree.embedding, 2)
    if layout is not None:
        tree = tree._replace(embedding=_to_bytes(tree.embedding, 2))

    k = tree.max_children
    children = _pack_children(tree.children_action, tree.children_index, tree.children_prior)
    tree = tree._replace(children_action=None, children_index=None, children_prior=None)

    def step(i, loop: _Loop) -> _Loop:
        key, k_step = jax.random.split(loop.key)
        active = i * num_l + jnp.arange(num_l) < config.num_simulations  # [L]
        embedding = loop.tree.embedding
        bare, children, leaves, parents, actions, new, walk_trips = _select_leaves(
            _without_embedding(loop.tree), loop.children, active, extra, config,
            risk)  # [B, L] each
        parent_emb = jax.tree_util.tree_map(
            lambda x: x[rows, parents].reshape((b * num_l,) + x.shape[2:]), embedding)
        if layout is not None:
            parent_emb = _from_bytes(parent_emb, layout)
        child_emb, reward, out = model.step(params, k_step, parent_emb, actions.reshape(-1))
        if layout is not None:
            child_emb = _to_bytes(child_emb, 1)
        write = jnp.where(new, leaves, bare.num_nodes).reshape(-1)  # out of range: skipped
        tree, children = _write_nodes(bare._replace(embedding=embedding), rows.reshape(-1),
                                      write, child_emb, out, reward, k, children)
        bare, backup_trips = backup(_without_embedding(tree), leaves, active, config.discount,
                                    virtual_loss=num_l > 1,
                                    unroll=default_unroll(config.walk_unroll))
        return _Loop(tree=bare._replace(embedding=tree.embedding), key=key, children=children,
                     trips=loop.trips + walk_trips + backup_trips)

    loop = jax.lax.fori_loop(0, steps, step, _Loop(tree=tree, key=key, children=children,
                                                   trips=jnp.zeros((), jnp.int32)))
    action, index, prior = _unpack_children(loop.children)
    tree = loop.tree._replace(children_action=action, children_index=index,
                              children_prior=prior)
    if layout is not None:
        tree = tree._replace(embedding=_from_bytes(tree.embedding, layout))
    return _Loop(tree=tree, key=loop.key, trips=loop.trips)


def _root_stats(tree: Tree, discount: float = 1.0):
    return jax.vmap(lambda t: node_stats(t, jnp.int32(ROOT_INDEX), discount))(
        _without_embedding(tree))


def _risk_value(stats, beta, bounds) -> jax.Array:
    """float32[B] (docs/search.md): max_q + log(sum_a exp(beta (Q_risk_a - max_q))) / beta over the
    visited root children; 0 where beta is 0 (the spec's stored soft value). beta: a float or
    float32[B] (the root mover's beta of each game)."""
    if isinstance(beta, float) and beta == 0.0:
        return jnp.zeros(stats.q_mean.shape[:1], jnp.float32)
    beta = jnp.broadcast_to(jnp.asarray(beta, jnp.float32), stats.q_mean.shape[:1])[:, None]
    safe = jnp.where(beta != 0.0, beta, 1.0)
    visited = stats.visits > 0
    q = jnp.clip(stats.q_mean + 0.5 * beta * stats.q_var, *bounds)
    max_q = jnp.max(jnp.where(visited, q, -jnp.inf), axis=-1, keepdims=True)
    max_q = jnp.where(jnp.isfinite(max_q), max_q, 0.0)
    s = jnp.sum(jnp.where(visited, jnp.exp(safe * (q - max_q)), 0.0), axis=-1)
    value = max_q[:, 0] + jnp.log(jnp.maximum(s, 1e-30)) / safe[:, 0]
    return jnp.where((s > 0) & (beta[:, 0] != 0.0), value, 0.0)


def _act(tree: Tree, extra: RootExtra, config: TreeSearchConfig, key: jax.Array):
    """(action int32[B], policy float32[B, K] over the root slots): the search's own choice,
    the move it recommends. Self-play acts on the policy instead (`TemperatureSchedule`, the
    one place a temperature lives: docs/training.md, "Algorithms")."""
    stats = _root_stats(tree, config.discount)
    valid = stats.valid
    if isinstance(config.root, GumbelRoot):
        raw = tree.raw_value[:, ROOT_INDEX]  # [B, P]
        raw_mover = jnp.take_along_axis(raw, tree.player[:, ROOT_INDEX, None], 1)[:, 0]
        sigma = jax.vmap(config.root.completed_q)(stats, raw_mover)  # [B, K]
        most = stats.visits.max(-1)
        score = jax.vmap(config.root.considered_score)(stats.visits, most, extra, sigma)
        slot = random_argmax(jax.random.fold_in(key, 1), score, valid)
        policy = jax.nn.softmax(jnp.where(valid, extra.logits + sigma, -jnp.inf), axis=-1)
        return slot, jnp.where(valid, policy, 0.0)
    visits = stats.visits.astype(jnp.float32)
    policy = visits / jnp.maximum(visits.sum(-1, keepdims=True), 1.0)
    # the most visited child with ties broken uniformly at random (`turbozero.search.acting.act`
    # at tau = 0): with few simulations ties are the rule, and always taking the lowest action
    # id made the evaluated agent finish and win fewer games (issue 18; docs/benchmarks.md,
    # "Paco Ŝako on the kernel")
    return act(key, visits, valid, 0.0), policy


def tree_search(
    model, params, root_input: Any, key: jax.Array, config: TreeSearchConfig,
    tree: Optional[Tree] = None,
    risk_beta: Optional[jax.Array] = None,
) -> tuple[SearchResult, Tree]:
    """Search `model` from a batch of roots; pure and jittable (model, config static).

    root_input: what `model.root` takes (for `EnvModel`, a batch of env states).
    tree: trees carried from the previous move (`turbozero.search.reuse.reuse_subtree`);
        each row's root must be the state of `root_input`; rows left empty (`next_node == 0`)
        start from `root_input`'s fresh evaluation. `config.num_simulations` more
        simulations are run on each.
    risk_beta: float32[B, P] the entropic-risk beta of each seat in each game (per-game
        asymmetric risk, docs/search.md); None takes `config.selection.risk_beta` for all.
        Used by `SpecPUCT` selection and the root's risk value.
    Returns (result, tree); the tree is for `reuse_subtree` and inspection. The result's
    `stats`: `root_visits` int32[B, A], `risk_value` float32[B] (the root's LogSumExp risk
    value, docs/search.md; 0 if beta is 0), `max_depth` int32[B] (root = 0), `nodes_used`
    int32[B], `loop_trips` int32[B] (the while-loop trips of the batch's selection walks and
    backups, the same for every game: the loops run on the whole batch; on a GPU each is a
    round trip to the host, docs/benchmarks.md).
    """
    k_noise, k_loop, k_act = jax.random.split(key, 3)
    fresh = init_tree(model, params, root_input, config)
    if tree is None:
        tree = fresh
    else:
        if tree.num_nodes != config.num_nodes:
            raise ValueError(f"a carried tree has {tree.num_nodes} nodes, the config needs "
                             f"{config.num_nodes} (num_simulations + 1 + extra_nodes)")
        carried = tree.next_node > 0  # [B] rows that `reuse_subtree` could keep

        def pick(c, f):
            return jnp.where(carried.reshape((-1,) + (1,) * (c.ndim - 1)), c, f)

        tree = jax.tree_util.tree_map(pick, tree, fresh)
    b = tree.batch_size
    valid = tree.children_action[:, ROOT_INDEX] != NO_ACTION  # [B, K]
    prior, extra = config.root.prepare(k_noise, tree.children_prior[:, ROOT_INDEX], valid,
                                       config.num_simulations)
    tree = tree._replace(children_prior=tree.children_prior.at[:, ROOT_INDEX].set(prior))
    if risk_beta is not None:
        risk_beta = jnp.asarray(risk_beta, jnp.float32)
        if risk_beta.shape != (b, model.num_players):
            raise ValueError(f"risk_beta must be float32[{b}, {model.num_players}] (one beta per "
                             f"game and seat), got shape {risk_beta.shape}")
    loop = _simulate(model, params, tree, k_loop, extra, config, risk_beta)
    tree = loop.tree

    slot, policy = _act(tree, extra, config, k_act)
    root_actions = tree.children_action[:, ROOT_INDEX]  # [B, K]
    action = jnp.take_along_axis(root_actions, slot[:, None], 1)[:, 0]
    stats = _root_stats(tree, config.discount)
    rows = jnp.broadcast_to(jnp.arange(b)[:, None], root_actions.shape)
    cols = jnp.where(valid, root_actions, model.num_actions)  # padding: dropped
    weights = jnp.zeros((b, model.num_actions), jnp.float32).at[rows, cols].set(
        policy, mode="drop")
    visits = jnp.zeros((b, model.num_actions), jnp.int32).at[rows, cols].set(
        stats.visits, mode="drop")
    root_values = tree.value_sum[:, ROOT_INDEX] / tree.node_visits[:, ROOT_INDEX, None]
    mover = tree.player[:, ROOT_INDEX]
    beta = getattr(config.selection, "risk_beta", 0.0)
    if risk_beta is not None:
        beta = jnp.take_along_axis(risk_beta, tree.player[:, ROOT_INDEX, None], 1)[:, 0]
    bounds = getattr(config.selection, "q_bounds", (-1.0, 1.0))
    used = jnp.arange(tree.num_nodes)[None] < tree.next_node[:, None]
    # the tree family's statistics (docs/search.md): the root's visits by action, the root's
    # LogSumExp risk value (0 when beta is 0), the deepest node (root = 0), nodes in use
    result = SearchResult(
        action=action.astype(jnp.int32),
        policy=weights,
        root_value=jnp.take_along_axis(root_values, mover[:, None], 1)[:, 0],
        root_values=root_values,
        root_wdl=None if tree.wdl_sum is None else _mover_wdl(
            tree.wdl_sum[:, ROOT_INDEX] / tree.node_visits[:, ROOT_INDEX, None], mover),
        stats={"root_visits": visits, "risk_value": _risk_value(stats, beta, bounds),
               "max_depth": jnp.max(jnp.where(used, tree.depth, 0), axis=1),
               "nodes_used": tree.next_node,
               "loop_trips": jnp.broadcast_to(loop.trips, (b,))},
    )
    return result, tree


def _check_roots(states, k: int) -> None:
    """ValueError if a concrete root has more legal actions than K or waits for a chance
    outcome (traced roots: unchecked; inside jit a node keeps its K highest-prior actions,
    `tree.compact_children`)."""
    legal = states.legal_action_mask
    if isinstance(legal, jax.core.Tracer):
        return
    is_chance = getattr(states, "is_chance", None)
    if is_chance is not None and np.any(np.asarray(is_chance)
                                        & ~np.asarray(states.terminated | states.truncated)):
        raise ValueError("a root state waits for a chance outcome: search decision states "
                         "(resolve the chance event first, env.step_chance)")
    live = ~np.asarray(states.terminated | states.truncated)  # terminal masks are all True
    counts = np.asarray(legal).reshape(live.size, -1).sum(-1)[live.reshape(-1)]
    if counts.size and counts.max() > k:
        raise ValueError(f"max_children is {k} but a root state has {int(counts.max())} legal "
                         "actions; raise TreeSearchConfig.max_children (or leave it None)")


def search_env(env, evaluator, variables, states, key: jax.Array,
               config: TreeSearchConfig, risk_beta: Optional[jax.Array] = None
               ) -> SearchResult:
    """`turbozero.search.search` on the kernel: the true dynamics of `env` (`EnvModel`).
    `risk_beta`: float32[B, P] per-seat betas (`tree_search`)."""
    model = EnvModel(env, evaluator)
    _check_roots(states, config.children_bound(model))
    result, _ = tree_search(model, variables, states, key, config, risk_beta=risk_beta)
    return result


register_family("tree", TreeSearchConfig, search_env, risk_beta=True)
