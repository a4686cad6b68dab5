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
from turbozero.search.node_table import (
    NodeColumns, check_exact, pack_nodes, strip_nodes, unpack_nodes)
from turbozero.search.api import SearchResult, register_family
from turbozero.search.roots import GumbelRoot, PUCTRoot, RootExtra
from turbozero.search.selection import (
    MctxPUCT, NodeStats, SpecPUCT, gathered_stats, masked_argmax, node_stats)
from turbozero.search.tree import (
    NO_ACTION, ROOT_INDEX, UNVISITED, Tree, compact_children, empty_tree)
from turbozero.search.words import row_form
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

    def tree_shapes(self, env, states: Any, with_wdl: bool = False) -> Tree:
        """The tree a search of the batch `states` (arrays or shape structs) on `env`'s true
        dynamics holds, as shape structs (`jax.eval_shape`: nothing allocated): the memory
        bound's count (turbozero/memory.py). `with_wdl`: the evaluator's value
        format has a draw class (the win/draw/loss sums are kept)."""
        model = EnvModel(env, _ShapesOnly())

        def build(st):
            embedding = st.replace(observation=None)  # as `env.transition` keeps a node
            return empty_tree(st.current_player.shape[0], self.num_nodes,
                              self.children_bound(model), env.num_players, embedding,
                              with_wdl=with_wdl, with_chance=bool(env.is_stochastic))
        return jax.eval_shape(build, states)


class _ShapesOnly:
    """An evaluator that is never called: `TreeSearchConfig.tree_shapes` builds an EnvModel
    for its child bound only."""

    evaluate = None


class _Loop(NamedTuple):
    tree: Tree
    key: jax.Array
    # int32[B, N, K, 3] during the search loop: the tree's children_action, children_index
    # and children_prior (its bits) side by side (`_pack_children`); the tree holds None there
    children: Optional[jax.Array] = None
    trips: Optional[jax.Array] = None  # int32[] while-loop trips of the walks and backups
    # float32[B, N, F] during the search loop: the tree's per-node statistics side by side
    # (`turbozero.search.node_table`); the tree holds None there
    table: Optional[jax.Array] = None


# One walk in every tree of the batch, during a level loop: int32[B, 6], one column each, so that
# a level updates its walk with one elementwise kernel: as six [B] arrays, XLA's CPU backend
# ran one kernel each, 6 of the 20 of a walk level (compiled loop of the suite's backgammon
# search, 16 games x 32 simulations, `benchmarks/tools/kernel_counts.py --words`, at 2c4d0f1).
NODE, SLOT, ACTION, NEW, DONE, DEPTH = range(6)
# NODE: current node; SLOT: slot chosen at it (valid when NEW); ACTION: that slot's action id;
# NEW: 1 when the walk ends by creating a child of NODE at SLOT; DONE: 1 when the walk has
# ended; DEPTH: the float32 bits of NODE's depth (the new node's is one more)


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
    reward: jax.Array, k: int,
) -> Tree:
    """Expand nodes `node` (int32[M], out of range = skip) of trees `b` (int32[M]) of a tree
    holding its own arrays (the root's expansion, `init_tree`)."""
    legal = out.legal & ~out.terminal[:, None]
    actions, prior = compact_children(legal, out.prior_logits, k)  # [M, K]
    emb = jax.tree_util.tree_map(
        lambda dst, src: dst.at[b, node].set(src, mode="drop"), tree.embedding, embedding)
    if tree.raw_wdl is not None:
        tree = tree._replace(
            raw_wdl=tree.raw_wdl.at[b, node].set(_seat_wdl(out, reward), mode="drop"))
    if tree.chance is not None:
        tree = tree._replace(chance=tree.chance.at[b, node].set(out.chance, mode="drop"))
    return tree._replace(
        raw_value=tree.raw_value.at[b, node].set(_leaf_value(out), mode="drop"),
        reward=tree.reward.at[b, node].set(reward, mode="drop"),
        player=tree.player.at[b, node].set(out.player, mode="drop"),
        terminal=tree.terminal.at[b, node].set(out.terminal, mode="drop"),
        embedding=emb,
        children_action=tree.children_action.at[b, node].set(actions, mode="drop"),
        children_prior=tree.children_prior.at[b, node].set(prior, mode="drop"),
        children_index=tree.children_index.at[b, node].set(UNVISITED, mode="drop"),
    )


def _expand_packed(
    table: jax.Array, children: jax.Array, embedding: Any, cols: NodeColumns, b: jax.Array,
    node: jax.Array, child_emb: Any, out: ModelOutput, reward: jax.Array, k: int,
    alloc: Optional[jax.Array] = None,
) -> tuple[jax.Array, jax.Array, Any]:
    """`_write_nodes` inside the search loop: the expansion's columns of the packed node table
    (`reward` to the end, one scatter), the packed child rows (one scatter) and the packed
    embeddings (one scatter). `alloc` (float32[M, 5]): the allocation's columns `visits ..
    depth` too, in the same scatter (the walk left them unwritten, `_select_leaves`). Returns
    (table, children, embedding)."""
    legal = out.legal & ~out.terminal[:, None]
    actions, prior = compact_children(legal, out.prior_logits, k)  # [M, K]
    f32 = jnp.float32
    parts = [reward, _leaf_value(out)]
    if cols.with_wdl:
        parts.append(_seat_wdl(out, reward))
    parts += [out.player.astype(f32)[:, None], out.terminal.astype(f32)[:, None]]
    if cols.with_chance:
        parts.append(out.chance.astype(f32)[:, None])
    first = cols.reward if alloc is None else cols.visits  # visits .. depth, then reward ..
    parts = parts if alloc is None else [alloc] + parts
    table = table.at[b, node, first:].set(jnp.concatenate(parts, axis=-1), mode="drop")
    rows = _pack_children(actions, jnp.full_like(actions, UNVISITED), prior)
    emb = jax.tree_util.tree_map(
        lambda dst, src: dst.at[b, node].set(src, mode="drop"), embedding, child_emb)
    return table, children.at[b, node].set(rows, mode="drop"), emb


# the columns of `_Walks.paths`
LEAF, PARENT, PATH_ACTION, PATH_NEW, LEAF_DEPTH = range(5)


class _Walks(NamedTuple):
    """The carry of `_select_leaves`' walks (one per leaf of a step)."""

    table: jax.Array  # float32[B, N, F] the packed node table (`node_table`)
    children: jax.Array  # int32[B, N, K, 3] the packed child rows (`_pack_children`)
    next_node: jax.Array  # int32[B]
    # int32[B, L, 5] per leaf: its node, its parent, the action into it (0 unless new), 1 when
    # new, and the float32 bits of a new node's depth; one array, so a walk's end writes it
    # with one update, not four
    paths: jax.Array
    trips: jax.Array  # int32[]

    @property
    def leaves(self) -> jax.Array:
        return self.paths[..., LEAF]

    @property
    def parents(self) -> jax.Array:
        return self.paths[..., PARENT]

    @property
    def actions(self) -> jax.Array:
        return self.paths[..., PATH_ACTION]

    @property
    def new(self) -> jax.Array:
        return self.paths[..., PATH_NEW] != 0

    def allocation(self) -> jax.Array:
        """float32[B, L, 5] the new nodes' columns `visits .. depth` (no visit, no virtual
        loss, parent, action, depth), where `_select_leaves` left them to the expansion."""
        f32 = jnp.float32
        zero = jnp.zeros(self.paths.shape[:-1], f32)
        return jnp.stack([zero, zero, self.parents.astype(f32), self.actions.astype(f32),
                          jax.lax.bitcast_convert_type(self.paths[..., LEAF_DEPTH], f32)],
                         axis=-1)


def _select_leaves(
    table: jax.Array, children: jax.Array, next_node: jax.Array, cols: NodeColumns,
    active: jax.Array, extra: RootExtra, config: TreeSearchConfig,
    risk: Optional[jax.Array] = None,
) -> _Walks:
    """Select L leaves in every tree of the batch, one after the other, on the packed node
    table float32[B, N, F] (`node_table`, columns `cols`) and child rows int32[B, N, K, 3]
    (`_pack_children`).

    Returns the walks' end (`_Walks`): the table with the new nodes allocated and virtual loss
    on the paths (with one leaf a step, L = 1, the new node's columns are left to the
    expansion: `_Walks.allocation`), the child rows with the new nodes linked, and per leaf
    its node, parent, action and whether it is new, with the walks' loop trips. A walk ends
    at a terminal node, at a node whose evaluation is pending (allocated earlier in this step:
    the leaf is evaluated once and backed up once per walk), or by allocating the child of an
    unexpanded slot. `active`: bool[L] (the last step of a search may select fewer); `risk`:
    float32[B, P] the risk beta of each seat in each game (None: the selection's own beta).

    A level of a walk reads the node's row of the table (one gather), its child row (one
    gather) and the five numbers of each child selection needs (one gather): on a GPU each
    gather is a kernel launch, and launches are what a cheap model's search costs.

    Written on the batch, not vmapped over trees: a vmapped `while_loop` whose condition
    differs per tree selects every carried array between old and new on every iteration, and
    on CPU those copies and selects cost more than the walk itself (docs/benchmarks.md,
    "The tree kernel against its model floor"). Here a finished walk keeps its node by
    one `where` on its int32[B, 6] carry and adds no virtual loss."""
    sel, root = config.selection, config.root
    n_sims = config.num_simulations
    b, n = table.shape[0], table.shape[1]
    rows = jnp.arange(b)
    f32 = jnp.float32

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

    slot_of = jax.vmap(scores_of, in_axes=(0, 0, 0, 0, 0, None if not cols.with_chance else 0,
                                           None if risk is None else 0))
    # With one leaf per step the virtual loss a walk adds is never read (a walk reads the
    # children of the nodes on its path, which it has not entered yet) and the backup takes it
    # back: the tree ends the step with the virtual loss it started with. So L = 1 adds none.
    with_vl = active.shape[0] > 1
    unroll = default_unroll(config.walk_unroll)
    # the five columns of a child that selection reads, by the node's mover
    child_cols = jnp.array([cols.visits, cols.virtual_loss, cols.value_sum, cols.value_sq_sum,
                            cols.reward], jnp.int32)
    mover_shift = jnp.array([0, 0, 1, 1, 1], jnp.int32)
    # How a level reads its children's five numbers (the same numbers either way). On CPU a
    # gather of whole child rows then a column pick kept the searches measured at the speed of
    # the arrays-per-field kernel, where a gather of five scattered numbers per child made the
    # widest one 0.81x (docs/benchmarks.md, "Per-node statistics packed in one table"); on
    # the H200 the five-number gather is what was measured, and reads 4x less of the table.
    rows_then_columns = jax.default_backend() == "cpu"

    def mover_column(x: jax.Array, start: int, mover: jax.Array) -> jax.Array:
        """x[..., start + mover] (x: [B, ..., F], mover: int32[B], a player) by selects over
        the players: elementwise, fused into its consumer, where the gather by the mover
        (`take_along_axis`) had its index array built by a kernel of its own in every walk
        level (the compiled loop at 2c4d0f1, as for the walk's carry above)."""
        m = mover.reshape(mover.shape + (1,) * (x.ndim - 2))
        out = x[..., start]
        for q in range(1, cols.num_players):
            out = jnp.where(m == q, x[..., start + q], out)
        return out

    def walk(j, w: _Walks) -> _Walks:
        kids_all = w.children

        def cond(c):
            return jnp.any(c[0][:, DONE] == 0)

        def body(c):
            d, tab = c
            node = d[:, NODE]
            finished = d[:, DONE] != 0
            if with_vl:  # a finished walk adds none
                tab = tab.at[rows, node, cols.virtual_loss].add((~finished).astype(f32))
            row = tab[rows, node]  # [B, F]
            mover = row[:, cols.player].astype(jnp.int32)
            # the one read of the [B, N, K] child arrays: the packed rows, then [B, K] arrays
            kid_rows = kids_all[rows, node]  # [B, K, 3]
            acts, kids, prior = _unpack_children(kid_rows)
            safe = jnp.where(kids != UNVISITED, kids, 0)
            if rows_then_columns:  # CPU: whole rows (contiguous), then the five columns
                whole = tab[rows[:, None], safe]  # [B, K, F]
                got = [whole[..., cols.visits], whole[..., cols.virtual_loss]] + [
                    mover_column(whole, c, mover)
                    for c in (cols.value_sum, cols.value_sq_sum, cols.reward)]
            else:  # accelerators: the five numbers of each child, nothing more
                which = child_cols[None] + mover_shift[None] * mover[:, None]  # [B, 5]
                five = tab[rows[:, None, None], safe[:, :, None], which[:, None, :]]  # [B, K, 5]
                got = [five[..., i] for i in range(5)]
            node_vs = mover_column(row, cols.value_sum, mover)
            parent_visits = row[:, cols.visits].astype(jnp.int32)
            stats = gathered_stats(
                kids, acts, prior, got[0].astype(jnp.int32), got[1].astype(jnp.int32),
                got[2], got[3], got[4], parent_visits, node_vs, config.discount)
            raw = mover_column(row, cols.raw_value, mover)
            chance = row[:, cols.chance] != 0 if cols.with_chance else None
            slot = slot_of(stats, mover, node == ROOT_INDEX, extra, raw, chance, risk)
            # a node's legal actions fill its slots from slot 0 on (`compact_children`), so
            # it has one exactly when slot 0 is valid
            stop = (row[:, cols.terminal] != 0) | (parent_visits == 0) | ~stats.valid[:, 0]
            # the chosen slot's action and child node, read together from the packed row
            picked = jnp.take_along_axis(kid_rows, slot[:, None, None], 1)[:, 0]  # [B, 3]
            child, action = picked[:, 1], picked[:, 0]
            new = ~stop & (child == UNVISITED)
            done = stop | new
            level = jnp.stack([jnp.where(done, node, child), slot, action,
                               new.astype(jnp.int32), done.astype(jnp.int32),
                               jax.lax.bitcast_convert_type(row[:, cols.depth], jnp.int32)],
                              axis=-1)
            # a finished walk keeps its node, slot and flags
            return jnp.where(finished[:, None], d, level), tab

        zero = jnp.zeros((b,), jnp.int32)
        start = jnp.stack([jnp.full((b,), ROOT_INDEX, jnp.int32), zero, zero, zero,
                           jnp.broadcast_to(~active[j], (b,)).astype(jnp.int32),
                           jax.lax.bitcast_convert_type(jnp.zeros((b,), f32), jnp.int32)],
                          axis=-1)  # [B, 6]
        (d, tab), walk_trips = batch_while(cond, body, (start, w.table), unroll)
        new = (d[:, NEW] != 0) & active[j]
        idx = jnp.where(new, w.next_node, n)  # out of range: nothing written
        parent, action = d[:, NODE], jnp.where(new, d[:, ACTION], 0)
        depth = jax.lax.bitcast_convert_type(d[:, DEPTH], f32) + 1.0  # the new node's
        if with_vl:
            # the new node: no visit yet (evaluation pending), this walk's virtual loss, its
            # parent, action and depth (columns visits .. depth, one scatter); the later walks
            # of the step read them. With one leaf a step none does, and the expansion writes
            # them in its own scatter (`_expand_packed`'s `alloc`): one scatter fewer a step.
            alloc = jnp.stack([jnp.zeros((b,), f32), jnp.ones((b,), f32),
                               parent.astype(f32), d[:, ACTION].astype(f32), depth], axis=-1)
            tab = tab.at[rows, idx, cols.visits:cols.depth + 1].set(alloc, mode="drop")
        # the slot's child index: the node just allocated
        kids_all = kids_all.at[rows, jnp.where(new, parent, n), d[:, SLOT], 1].set(
            idx, mode="drop")
        path = jnp.stack([jnp.where(new, idx, parent), parent, action, new.astype(jnp.int32),
                          jax.lax.bitcast_convert_type(depth, jnp.int32)], axis=-1)  # [B, 5]
        return _Walks(table=tab, children=kids_all, next_node=w.next_node + new.astype(jnp.int32),
                      paths=w.paths.at[:, j].set(path), trips=w.trips + walk_trips)

    n_leaves = active.shape[0]
    init = _Walks(table=table, children=children, next_node=next_node,
                  paths=jnp.zeros((b, n_leaves, 5), jnp.int32), trips=jnp.zeros((), jnp.int32))
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
    tree = _write_nodes(tree, rows, root, embedding, out, jnp.zeros_like(out.value),
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


def _simulate(model, params, tree: Tree, key: jax.Array, extra: RootExtra,
              config: TreeSearchConfig, risk: Optional[jax.Array] = None) -> _Loop:
    num_l = config.leaves_per_step
    steps = -(-config.num_simulations // num_l)
    b = tree.batch_size
    check_exact(tree.num_nodes, model.num_actions)
    rows = jnp.broadcast_to(jnp.arange(b)[:, None], (b, num_l))  # [B, L]
    # Inside the loop the nodes' embeddings are one array (the leaves of a state side by side,
    # bit for bit: `turbozero.search.words`): one gather of the parents and one scatter of the
    # children per step instead of one per leaf. Words on accelerators (fewer kernels), the
    # byte row on CPU (measured faster there).
    words_layout, to_words, from_words = row_form()
    layout = words_layout(tree.embedding, 2)
    if layout is not None:
        tree = tree._replace(embedding=to_words(tree.embedding, 2))

    k = tree.max_children
    children = _pack_children(tree.children_action, tree.children_index, tree.children_prior)
    cols = NodeColumns.of(tree)
    table = pack_nodes(tree)
    unroll = default_unroll(config.walk_unroll)

    def step(i, loop: _Loop) -> _Loop:
        key, k_step = jax.random.split(loop.key)
        active = i * num_l + jnp.arange(num_l) < config.num_simulations  # [L]
        embedding = loop.tree.embedding
        w = _select_leaves(loop.table, loop.children, loop.tree.next_node, cols, active, extra,
                           config, risk)  # [B, L] each
        parent_emb = jax.tree_util.tree_map(
            lambda x: x[rows, w.parents].reshape((b * num_l,) + x.shape[2:]), embedding)
        if layout is not None:
            parent_emb = from_words(parent_emb, layout)
        child_emb, reward, out = model.step(params, k_step, parent_emb, w.actions.reshape(-1))
        if layout is not None:
            child_emb = to_words(child_emb, 1)
        write = jnp.where(w.new, w.leaves, table.shape[1]).reshape(-1)  # out of range: skipped
        table_, children, embedding = _expand_packed(
            w.table, w.children, embedding, cols, rows.reshape(-1), write, child_emb, out,
            reward, k, alloc=None if num_l > 1 else w.allocation().reshape(b * num_l, -1))
        table_, backup_trips = backup(table_, cols, w.leaves, active, config.discount,
                                      virtual_loss=num_l > 1, unroll=unroll)
        return _Loop(tree=loop.tree._replace(embedding=embedding, next_node=w.next_node),
                     key=key, children=children, table=table_,
                     trips=loop.trips + w.trips + backup_trips)

    loop = jax.lax.fori_loop(0, steps, step, _Loop(
        tree=strip_nodes(tree)._replace(children_action=None, children_index=None,
                                        children_prior=None),
        key=key, children=children, table=table, trips=jnp.zeros((), jnp.int32)))
    action, index, prior = _unpack_children(loop.children)
    tree = unpack_nodes(loop.tree, loop.table, cols)._replace(
        children_action=action, children_index=index, children_prior=prior)
    if layout is not None:
        tree = tree._replace(embedding=from_words(tree.embedding, layout))
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
