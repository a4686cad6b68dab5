"""Monte-Carlo graph search for simultaneous two-player games, in `jax.lax` (PyRat, any game
with the `envs.core.GraphSearchEnv` members).

This is the MCGS design as a batched kernel; docs/mcgs.md maps every design field to
an array here. In short, per game (the batch is a vmap over games):

* a node table of fixed capacity C: the node's state (the env's `search_embedding`), its 64-bit
  key, `evaluated`, `terminal`, frozen `U[2]` and per-player priors over outcomes `prior[2, A]`,
  `Q[2]`, the outcome indexing (`n_out[2]`, `outcomes[2, A]`, `a2i[2, A]`) and the edge arrays
  `visits[A, A]`, `edge_r[A, A, 2]`, `child[A, A]` (NO_NODE = unexpanded), padded from
  `[n1, n2]`. A is the env's `num_actions` (PyRat 5), a static shape read when the search is
  traced;
* the transposition lookup reads the node table itself: the child's key is compared with the
  keys of all nodes in use at once (a vectorised compare of C keys, no probing loop), and a hit
  is confirmed on the exact fields of the matching node (`env.same_position`), never on the
  hash alone.

One simulation = one playout per game: a descent (decoupled PUCT with Option D marginal Q and the
FPU offset, `turbozero.search.fpu.first_play_urgency`; exploration scaled by
sqrt(max(N, exploration_floor)): the spec's sqrt(N) at 0, a first selection that follows the
priors at 1; an unexpanded edge is expanded by stepping the env and looking the child up; the
descent goes on through an already-evaluated child, i.e. a transposition) ending at a new leaf,
a terminal node or (option) a short-circuit; then ONE batched call of the evaluator on the
leaves of all games; then the backup: along the path from the deepest node up,
`visits[o1, o2] += 1` and Q recomputed idempotently from the node's edges.

The descent and the backup loop over the whole batch (`lax.while_loop` with one stop condition
for the batch, the per-game step vmapped inside), and a game that is done makes no write: its
step is masked, not undone. (A `while_loop` vmapped over games would select between the old and
the new carry of every game after every step, i.e. copy the whole graph of the batch at each
level of a descent; that copy was most of the search's time, docs/benchmarks.md.)

A full node table is never silently overwritten: a playout that needs a new node when the table
is full is dropped (no visit is counted) and `stats["dropped_playouts"]` counts it.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Literal, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from envs.core import Env, GraphSearchEnv, State, require_protocol
from turbozero.search.acting import act
from turbozero.search.api import SearchResult, register_family
from turbozero.search.fpu import first_play_urgency
from turbozero.search.loops import batch_while, default_unroll
from turbozero.search.noise import mix_legal_noise
from turbozero.validation import check_int, check_real

EvalFn = Callable[[Any, Any], tuple[jax.Array, jax.Array, jax.Array, jax.Array]]
# Per-player arrays are padded to A = env.num_actions (outcomes, priors, edges): a static shape
# taken from the env when the search is traced, so one module serves games of any action count.
NO_NODE = -1  # node index sentinel: an unexpanded edge, an empty table slot, no leaf


@dataclasses.dataclass(frozen=True)
class MCGSConfig:
    """Static settings of the search (hashable, closed over by `jit`).

    num_simulations: playouts per search (the first one evaluates the root).
    capacity: node table size (default num_simulations + 1, which is never full: a playout
        creates at most one node). Must be >= 2.
    c_puct: exploration constant of the spec's PUCT score.
    fpu_offset: unvisited actions get the parent's Q minus this (selection only): the shared
        `first_play_urgency` with this as its base and the prior term off (docs/mcgs.md).
    transpositions: False turns the graph into a plain tree (every expansion a new node); used
        to measure what transpositions save.
    short_circuit: the spec's open question 3: when an edge's child already has
        N(child) = 1 + its total visits >= short_circuit_factor * (edge visits + 1), count the
        visit on the edge without descending (off by default).
    evaluator_input: "observation" (float planes [B, H, W, C]) or "state" (the env states).
    dirichlet_alpha: concentration of the root noise, drawn over each player's valid outcomes
        (`turbozero.search.noise.mix_legal_noise`).
    dirichlet_fraction: share of the root prior replaced by that noise once the root is
        evaluated. 0 by default: the MCGS spec has no root noise, and 0 keeps the search
        noiseless, as the reference test checks it; self-play presets may turn it on.
    exploration_floor: the PUCT exploration term scales with sqrt(max(N, exploration_floor)),
        N the node's edge visits. 0.0 is the spec's sqrt(N): the term is 0 at a fresh node, all
        outcomes tie at the FPU value and outcome 0 is taken for both players. 1.0 (lc0's
        sqrt(max(N, 1))) makes the first selection follow the priors. Which learns better is
        measured per game (docs/learning.md, PyRat: the spec's 0.0).
    walk_unroll: levels the descent and the backup take per loop trip; None takes 1 (on a GPU
        every trip is a round trip to the host, but a descent step also steps the env, and 4
        levels a trip measured 0.89-0.95x as fast on an H200: docs/benchmarks.md, "Trips and
        kernels per simulation"). Results do not depend on it.
    """

    num_simulations: int = 64
    capacity: Optional[int] = None
    c_puct: float = 1.25
    fpu_offset: float = 0.1
    transpositions: bool = True
    short_circuit: bool = False
    short_circuit_factor: float = 4.0
    evaluator_input: Literal["observation", "state"] = "observation"
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.0
    exploration_floor: float = 1.0
    walk_unroll: Optional[int] = None
    family: ClassVar[str] = "graph"

    def for_evaluation(self) -> "MCGSConfig":
        """This search made deterministic for evaluation: no root noise."""
        return dataclasses.replace(self, dirichlet_fraction=0.0)

    def __post_init__(self) -> None:
        # the library's rule (turbozero/validation.py): integers are integers within int32,
        # numbers finite; NaN passed every check below it once, and 2.5 simulations ran 2
        check_int("mcgs: num_simulations", self.num_simulations, minimum=1)
        check_int("mcgs: capacity", self.capacity, optional=True)
        if self.capacity is not None and self.capacity < 2:
            raise ValueError(f"mcgs: capacity {self.capacity} is too small for one playout "
                             "(the root and one child need 2 nodes)")
        check_real("mcgs: c_puct", self.c_puct, minimum=0.0)
        check_real("mcgs: fpu_offset", self.fpu_offset)
        check_real("mcgs: short_circuit_factor", self.short_circuit_factor, above=0.0)
        for name in ("transpositions", "short_circuit"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"mcgs: {name} must be True or False, got "
                                 f"{getattr(self, name)!r}")
        if self.evaluator_input not in ("observation", "state"):
            raise ValueError(f"mcgs: evaluator_input must be 'observation' or 'state', got "
                             f"{self.evaluator_input!r}")
        check_real("mcgs: dirichlet_fraction", self.dirichlet_fraction, minimum=0.0, maximum=1.0)
        check_real("mcgs: dirichlet_alpha", self.dirichlet_alpha, above=0.0)
        check_real("mcgs: exploration_floor", self.exploration_floor, minimum=0.0)
        check_int("mcgs: walk_unroll", self.walk_unroll, minimum=1, optional=True)

    @property
    def num_nodes(self) -> int:
        return self.capacity if self.capacity is not None else self.num_simulations + 1

    def tree_shapes(self, env: Env, states: State, with_wdl: bool = False) -> "Graph":
        """The graphs a search of the batch `states` (arrays or shape structs) holds, as
        shape structs: `jax.eval_shape` of the search's own allocation (`_init_graph`, per
        game), nothing allocated (the memory bound's count, turbozero/memory.py).
        Per node the edge arrays are [A, A] (A the env's `num_actions`), so a graph is
        B x capacity x (A^2 x 13 bytes + the node's own fields). `with_wdl`: unused."""
        del with_wdl
        check_env(env)
        return jax.eval_shape(jax.vmap(lambda s: _init_graph(env, s, self)), states)


@struct.dataclass
class Graph:
    """One game's search graph (leading axis C = capacity; add a batch axis in front; A = the
    env's `num_actions`)."""

    emb: Any  # env.search_embedding pytree, leaves [C, ...]
    key: jax.Array  # uint32[C, 2]
    evaluated: jax.Array  # bool[C]
    terminal: jax.Array  # bool[C]
    U: jax.Array  # float32[C, 2]
    Q: jax.Array  # float32[C, 2]
    prior: jax.Array  # float32[C, 2, A] over outcomes (0 beyond n_out)
    n_out: jax.Array  # int32[C, 2]
    outcomes: jax.Array  # int32[C, 2, A] outcome -> action
    a2i: jax.Array  # int32[C, 2, A] action -> outcome
    visits: jax.Array  # int32[C, A, A] edge visits [o1, o2]
    edge_r: jax.Array  # float32[C, A, A, 2] rewards of the transition
    child: jax.Array  # int32[C, A, A] child node, NO_NODE if unexpanded
    num_nodes: jax.Array  # int32
    tt_hits: jax.Array  # int32 expansions that linked an existing node
    playouts_with_hit: jax.Array  # int32 playouts that reached a transposition
    evaluations: jax.Array  # int32 evaluator calls that were used
    dropped_playouts: jax.Array  # int32 playouts dropped because the table was full
    short_circuits: jax.Array  # int32 playouts ended by the short-circuit


def _node_info(env: Env, state: State):
    n, outcomes, a2i = env.effective_outcomes(state)
    a = env.num_actions
    if jnp.shape(n) != (2,) or jnp.shape(outcomes) != (2, a) or jnp.shape(a2i) != (2, a):
        raise ValueError(f"mcgs: {getattr(env, 'id', type(env).__name__)}.effective_outcomes "
                         f"must give n int32[2], outcomes and action_to_idx int32[2, {a}] "
                         f"(num_actions {a}); got shapes {jnp.shape(n)}, "
                         f"{jnp.shape(outcomes)}, {jnp.shape(a2i)}")
    return (env.search_embedding(state), env.state_key(state),
            state.terminated | state.truncated, n, outcomes, a2i)


def _write_node(g: Graph, idx: jax.Array, info, cond: jax.Array) -> Graph:
    emb, key, term, n, outcomes, a2i = info

    def put(arr, val):
        return arr.at[idx].set(jnp.where(cond, val, arr[idx]))

    return g.replace(
        emb=jax.tree_util.tree_map(put, g.emb, emb), key=put(g.key, key),
        terminal=put(g.terminal, term), n_out=put(g.n_out, n), outcomes=put(g.outcomes, outcomes),
        a2i=put(g.a2i, a2i))


def _init_graph(env: Env, root: State, cfg: MCGSConfig) -> Graph:
    c, A = cfg.num_nodes, env.num_actions
    info = _node_info(env, root)
    emb = jax.tree_util.tree_map(lambda x: jnp.zeros((c,) + x.shape, x.dtype), info[0])
    g = Graph(
        emb=emb, key=jnp.zeros((c, 2), jnp.uint32), evaluated=jnp.zeros(c, bool),
        terminal=jnp.zeros(c, bool), U=jnp.zeros((c, 2), jnp.float32),
        Q=jnp.zeros((c, 2), jnp.float32), prior=jnp.zeros((c, 2, A), jnp.float32),
        n_out=jnp.ones((c, 2), jnp.int32), outcomes=jnp.full((c, 2, A), A - 1, jnp.int32),
        a2i=jnp.zeros((c, 2, A), jnp.int32), visits=jnp.zeros((c, A, A), jnp.int32),
        edge_r=jnp.zeros((c, A, A, 2), jnp.float32), child=jnp.full((c, A, A), NO_NODE, jnp.int32),
        num_nodes=jnp.int32(1), tt_hits=jnp.int32(0),
        playouts_with_hit=jnp.int32(0), evaluations=jnp.int32(0),
        dropped_playouts=jnp.int32(0), short_circuits=jnp.int32(0))
    return _write_node(g, jnp.int32(0), info, jnp.array(True))


def _lookup(env: Env, g: Graph, key: jax.Array, emb: Any, after: jax.Array
            ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The node of position (`key`, `emb`) among the nodes in use, looking only at node indices
    above `after` (NO_NODE: all). Returns (node index or NO_NODE, collision, candidate).

    One vectorised compare of the key with the C stored keys (no loop); the first node with the
    same 64-bit key is confirmed on the exact fields (`env.same_position`). If it differs (a
    hash collision), `collision` is True and the caller asks again with `after` = `candidate`:
    the search for that position goes on past it, so a collision never merges two positions
    and never hides the node that holds the position. A position is stored in one node at most
    (it is looked up before a node is made), so the node found does not depend on the order.
    """
    idx = jnp.arange(g.key.shape[0], dtype=jnp.int32)
    cand = jnp.all(g.key == key, axis=-1) & (idx < g.num_nodes) & (idx > after)
    first = jnp.argmax(cand).astype(jnp.int32)
    node = jax.tree_util.tree_map(lambda x: x[first], g.emb)
    some = cand[first]
    exact = some & env.same_position(node, emb)
    return jnp.where(exact, first, NO_NODE), some & ~exact, first


def _marginal_q(g: Graph, node: jax.Array, cfg: MCGSConfig) -> tuple[jax.Array, jax.Array]:
    """Option D marginal Q per outcome, both players: float32[2, A] (FPU where unvisited), and
    the marginal visits float32[2, A]."""
    v = g.visits[node].astype(jnp.float32)
    cq = g.Q[jnp.maximum(g.child[node], 0)]  # [A, A, 2]
    val = jnp.where((v > 0)[..., None], v[..., None] * (g.edge_r[node] + cq), 0.0)
    m1, m2 = v.sum(1), v.sum(0)
    # the spec's constant offset below the node's Q: the shared formula with the prior term off
    fpu = first_play_urgency(g.Q[node], 0.0, cfg.fpu_offset)
    q1 = jnp.where(m1 > 0, val[..., 0].sum(1) / jnp.maximum(m1, 1), fpu[0])
    q2 = jnp.where(m2 > 0, val[..., 1].sum(0) / jnp.maximum(m2, 1), fpu[1])
    return jnp.stack([q1, q2]), jnp.stack([m1, m2])


def _select(g: Graph, node: jax.Array, cfg: MCGSConfig) -> tuple[jax.Array, jax.Array]:
    """Decoupled PUCT: each player's argmax over its own outcomes.

    The exploration term scales with sqrt(max(N, cfg.exploration_floor)), N the node's edge
    visits: the spec's sqrt(N) at floor 0 (at a fresh node every outcome ties at the FPU value
    and outcome 0 is taken whatever the priors say), lc0's sqrt(max(N, 1)) at floor 1.
    """
    q, m = _marginal_q(g, node, cfg)
    total = g.visits[node].sum().astype(jnp.float32)
    scale = jnp.sqrt(jnp.maximum(total, cfg.exploration_floor))
    score = q + cfg.c_puct * g.prior[node] * scale / (1.0 + m)
    valid = jnp.arange(score.shape[-1])[None, :] < g.n_out[node][:, None]
    o = jnp.argmax(jnp.where(valid, score, -jnp.inf), axis=1).astype(jnp.int32)
    return o[0], o[1]


def _recompute_q(g: Graph, node: jax.Array) -> jax.Array:
    """float32[2]: (U + sum_ij v_ij (r_ij + Q_child)) / (1 + sum_ij v_ij), visited edges only."""
    v = g.visits[node].astype(jnp.float32)
    cq = g.Q[jnp.maximum(g.child[node], 0)]
    val = jnp.where((v > 0)[..., None], v[..., None] * (g.edge_r[node] + cq), 0.0)
    return (g.U[node] + val.sum((0, 1))) / (1.0 + v.sum())


class _Descent(NamedTuple):
    """The carry of the playouts' descent (`_descend`), one entry per game (batch axis first)."""

    graph: Graph
    node: jax.Array  # int32: the node the descent is at
    path: jax.Array  # int32[depth_cap, 3]: (node, o1, o2) of each edge taken
    depth: jax.Array  # int32: edges on the path
    leaf: jax.Array  # int32: the new node to evaluate, or NO_NODE
    stop: jax.Array  # bool
    dropped: jax.Array  # bool: the table was full when a node was needed
    hit: jax.Array  # bool: the playout linked a transposition
    short_circuited: jax.Array  # bool
    after: jax.Array  # int32: NO_NODE, or after a hash collision the node to look past


def _descent_step(env: Env, root: State, d: _Descent, cfg: MCGSConfig, depth_cap: int
                  ) -> _Descent:
    """One level of one game's descent (vmapped over the batch by `_descend`). A game that has
    stopped changes nothing: every write is masked by `go`. After a hash collision the game
    stays where it is for one step (`go` False) and looks the child up again past the node whose
    key collided; its selection then repeats exactly (its graph is unchanged)."""
    g, cur = d.graph, d.node
    c = cfg.num_nodes
    o1, o2 = _select(g, cur, cfg)
    ch = g.child[cur, o1, o2]
    need = ch == NO_NODE
    # expansion: step the env from the node's state (computed always, applied if needed)
    state = env.search_restore(root, jax.tree_util.tree_map(lambda x: x[cur], g.emb))
    acts = jnp.stack([g.outcomes[cur, 0, o1], g.outcomes[cur, 1, o2]])
    nxt = env.step(state, acts)
    info = _node_info(env, nxt)
    if cfg.transpositions:
        found, collision, candidate = _lookup(env, g, info[1], info[0], d.after)
        again = need & collision
    else:
        found, again, candidate = jnp.int32(NO_NODE), jnp.array(False), jnp.int32(NO_NODE)
    go = ~d.stop & ~again
    is_hit = found != NO_NODE
    alloc = need & ~is_hit
    full = alloc & (g.num_nodes >= c)
    new_idx = jnp.minimum(g.num_nodes, c - 1)
    linked = jnp.where(is_hit, found, new_idx)
    ok = go & need & ~full
    made = go & alloc & ~full
    g = _write_node(g, new_idx, info, made)
    g = g.replace(
        child=g.child.at[cur, o1, o2].set(jnp.where(ok, linked, ch)),
        edge_r=g.edge_r.at[cur, o1, o2].set(jnp.where(ok, nxt.rewards, g.edge_r[cur, o1, o2])),
        num_nodes=g.num_nodes + made,
        tt_hits=g.tt_hits + (go & need & is_hit),
    )
    nxt_node = jnp.where(need, linked, ch)
    step = go & ~full
    path = d.path.at[d.depth].set(jnp.where(step, jnp.stack([cur, o1, o2]), d.path[d.depth]))
    depth = d.depth + step
    is_term = g.terminal[nxt_node]
    new_leaf = ~is_term & ~g.evaluated[nxt_node]
    stop = full | is_term | new_leaf | (depth >= depth_cap)
    short = jnp.array(False)
    if cfg.short_circuit:
        n_child = 1 + g.visits[nxt_node].sum()
        short = (~stop & (n_child >= cfg.short_circuit_factor
                          * (g.visits[cur, o1, o2] + 1)))
        stop = stop | short
    return _Descent(graph=g, node=jnp.where(go, nxt_node, cur), path=path, depth=depth,
                    leaf=jnp.where(step & new_leaf, nxt_node, d.leaf), stop=d.stop | (go & stop),
                    dropped=d.dropped | (go & full), hit=d.hit | (go & need & is_hit),
                    short_circuited=d.short_circuited | (go & short),
                    after=jnp.where(~d.stop & again, candidate, NO_NODE))


def _descend(env: Env, roots: State, g: Graph, cfg: MCGSConfig):
    """One playout per game: selection and expansion (`g` and `roots` batched). Returns (graph,
    path, depth, leaf, trips): the paths int32[B, depth_cap, 3], their depths (0 for a dropped
    playout), the leaves (NO_NODE if none) and the loop's trips int32[].

    One `while_loop` for the batch, running until every game has stopped; the step of each
    game is vmapped inside it and masked once the game is done (`_descent_step`), so a trip
    may take several steps (`cfg.walk_unroll`, `turbozero.search.loops`)."""
    max_steps = getattr(env, "max_episode_steps", None) or cfg.num_simulations
    depth_cap = min(cfg.num_simulations, max_steps) + 1
    batch = g.num_nodes.shape[0]
    root_leaf = ~g.terminal[:, 0] & ~g.evaluated[:, 0]
    false = jnp.zeros(batch, bool)
    init = _Descent(graph=g, node=jnp.zeros(batch, jnp.int32),
                    path=jnp.zeros((batch, depth_cap, 3), jnp.int32),
                    depth=jnp.zeros(batch, jnp.int32),
                    leaf=jnp.where(root_leaf, 0, NO_NODE).astype(jnp.int32),
                    stop=g.terminal[:, 0] | root_leaf, dropped=false, hit=false,
                    short_circuited=false, after=jnp.full(batch, NO_NODE, jnp.int32))
    step = jax.vmap(lambda d, root: _descent_step(env, root, d, cfg, depth_cap))
    d, trips = batch_while(lambda d: jnp.any(~d.stop), lambda d: step(d, roots), init,
                           default_unroll(cfg.walk_unroll, accelerator=1))
    g = d.graph.replace(playouts_with_hit=d.graph.playouts_with_hit + d.hit,
                        dropped_playouts=d.graph.dropped_playouts + d.dropped,
                        short_circuits=d.graph.short_circuits + d.short_circuited)
    return (g, d.path, jnp.where(d.dropped, 0, d.depth),
            jnp.where(d.dropped, NO_NODE, d.leaf), trips)


def _reduce_prior(logits: jax.Array, a2i: jax.Array, n: jax.Array) -> jax.Array:
    """Softmax over the A actions, averaged within each outcome and renormalised: float32[A].

    Averaging (not summing) keeps actions that alias one outcome (PyRat's moves into walls are
    all STAY) from piling their mass onto it: a uniform policy gives uniform outcomes, the spec's
    prior without a network. Summing made an untrained rat in a corner stay put 80% of the time
    and self-play collapse onto STAY. An action whose `a2i` is `n` or more (an illegal one)
    reaches no outcome and its mass is dropped.
    """
    A = logits.shape[-1]
    p = jax.nn.softmax(logits.astype(jnp.float32))
    onehot = (a2i[:, None] == jnp.arange(A)[None, :]) & (jnp.arange(A)[None, :] < n)
    mean = (p[:, None] * onehot).sum(0) / jnp.maximum(onehot.sum(0), 1)
    return mean / jnp.maximum(mean.sum(), 1e-30)


def _store_evaluation(g: Graph, leaf, out) -> Graph:
    """Store the leaf's evaluation (one game; vmapped)."""
    l1, l2, v1, v2 = out
    has = leaf != NO_NODE
    li = jnp.maximum(leaf, 0)
    prior = jnp.stack([_reduce_prior(l1, g.a2i[li, 0], g.n_out[li, 0]),
                       _reduce_prior(l2, g.a2i[li, 1], g.n_out[li, 1])])
    u = jnp.stack([v1, v2]).astype(jnp.float32)
    return g.replace(
        prior=g.prior.at[li].set(jnp.where(has, prior, g.prior[li])),
        U=g.U.at[li].set(jnp.where(has, u, g.U[li])),
        Q=g.Q.at[li].set(jnp.where(has, u, g.Q[li])),
        evaluated=g.evaluated.at[li].set(g.evaluated[li] | has),
        evaluations=g.evaluations + has)


def _backup_step(g: Graph, path: jax.Array, k: jax.Array) -> Graph:
    """Edge k of one game's path gets its visit and its node's Q is recomputed; nothing if
    k < 0 (that game's path is done)."""
    live = k >= 0
    n, o1, o2 = path[jnp.maximum(k, 0)]
    g = g.replace(visits=g.visits.at[n, o1, o2].add(live.astype(jnp.int32)))
    return g.replace(Q=g.Q.at[n].set(jnp.where(live, _recompute_q(g, n), g.Q[n])))


def _backup(g: Graph, path: jax.Array, depth: jax.Array, unroll: int = 1
            ) -> tuple[Graph, jax.Array]:
    """Back every game's path up, deepest edge first, so each parent sees its child's new Q
    (`g` batched). One `while_loop` for the batch, as long as the longest path, `unroll` edges
    a trip (an edge index below 0 writes nothing). Returns (graph, the loop's trips int32[])."""
    longest = jnp.max(depth)

    def back(c):
        i, g = c
        return i + 1, jax.vmap(_backup_step)(g, path, depth - 1 - i)

    (_, g), trips = batch_while(lambda c: c[0] < longest, back, (jnp.int32(0), g), unroll)
    return g, trips


def _mix_root_noise(g: Graph, fresh: jax.Array, key: jax.Array, cfg: MCGSConfig) -> Graph:
    """The batch's roots (`g` batched) evaluated by this playout (`fresh` bool[B]: the first
    playout evaluates the root, before any selection there) get their prior mixed with
    Dirichlet noise over each player's valid outcomes (`mix_legal_noise`; one draw for the whole
    batch, from `key`)."""
    prior = g.prior[:, 0]  # [B, 2, A]
    valid = jnp.arange(prior.shape[-1]) < g.n_out[:, 0][..., None]
    mixed = mix_legal_noise(key, prior, valid, cfg.dirichlet_alpha, cfg.dirichlet_fraction)
    return g.replace(prior=g.prior.at[:, 0].set(jnp.where(fresh[:, None, None], mixed, prior)))


def _as_logits(logits: jax.Array, batch: int, num_actions: int, which: str) -> jax.Array:
    """The evaluator's logits as float32[B, A]; [B, 1] broadcasts (uniform_eval_fn)."""
    shape = jnp.shape(logits)
    if len(shape) != 2 or shape[0] != batch or shape[1] not in (1, num_actions):
        raise ValueError(f"mcgs: eval_fn's {which} logits have shape {shape}; the env has "
                         f"{num_actions} actions per player, so [{batch}, {num_actions}] (or "
                         f"[{batch}, 1]) is expected")
    return jnp.broadcast_to(logits, (batch, num_actions))


def _root_output(g: Graph, cfg: MCGSConfig, key: jax.Array):
    A = g.visits.shape[-1]
    v = g.visits[0].astype(jnp.float32)
    m = jnp.stack([v.sum(1), v.sum(0)])  # [2, A] outcome marginals
    total = v.sum()
    valid = jnp.arange(A)[None, :] < g.n_out[0][:, None]
    uniform = valid / g.n_out[0][:, None].astype(jnp.float32)
    prior = jnp.where(g.evaluated[0], g.prior[0], uniform)
    pi_out = jnp.where(total > 0, m / jnp.maximum(total, 1.0), prior)

    def to_actions(p_out, outcomes):
        return jnp.zeros(A, jnp.float32).at[outcomes].add(p_out)

    policy = jax.vmap(to_actions)(pi_out, g.outcomes[0])
    q, _ = _marginal_q(g, jnp.int32(0), cfg)
    action_q = jnp.take_along_axis(q, g.a2i[0], axis=1)
    # per player, the most visited outcome with ties at random (`act` at tau = 0; always taking
    # the lowest index walks a rat into the same wall whenever the search sees nothing to
    # prefer); self-play acts on the policy instead (`TemperatureSchedule`)
    o = act(key, pi_out, valid, 0.0)
    action = jnp.take_along_axis(g.outcomes[0], o[:, None], axis=1)[:, 0]
    return action.astype(jnp.int32), policy, g.Q[0], action_q


def check_env(env: Any) -> None:
    """ValueError unless `env` is a simultaneous two-player game with what graph search needs
    (`envs.core.GraphSearchEnv`): the per-player arrays are sized by its `num_actions`."""
    require_protocol(env, GraphSearchEnv, "mcgs")
    if not env.is_simultaneous or env.num_players != 2:
        raise ValueError("mcgs: the env must be a simultaneous two-player game")
    n = env.num_actions
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"mcgs: the env's num_actions (actions per player) must be a positive "
                         f"integer, got {n!r}")


def mcgs_search(eval_fn: EvalFn, params: Any, env: Env, root_states: State, key: jax.Array,
                config: MCGSConfig = MCGSConfig(),
                num_playouts: Optional[jax.Array] = None) -> tuple[SearchResult, Graph]:
    """Run MCGS on a batch of root states (leading axis B): the graph family's own entry
    (`turbozero.search.search` runs it for an `MCGSConfig`), which also returns the whole
    graph (batched) for inspection. The result: `action` int32[B, 2] each player's most
    visited outcome (ties at random), `policy` float32[B, 2, A], `root_values` float32[B, 2]
    the root's Q per player (`root_value` seat 0's), `stats` the counters (int32[B] each:
    nodes_used, evaluations, tt_hits, playouts_with_hit, dropped_playouts, short_circuits,
    root_visits, loop_trips) and `action_q` float32[B, 2, A], each action's marginal Q.

    eval_fn(params, x) -> (policy_logits_p1 [B, A], policy_logits_p2 [B, A], value_p1 [B],
    value_p2 [B]) with x the observations [B, ...] (or the states, see `MCGSConfig`), A the
    env's `num_actions` ([B, 1] logits broadcast); values in reward units. It is called once
    per simulation on the whole batch. The env must provide what `envs.core.GraphSearchEnv`
    lists (`effective_outcomes`, `state_key`, `search_embedding`, `search_restore`,
    `same_position`, ...; docs/mcgs.md): a missing one is a ValueError naming it. Jit with env,
    eval_fn and config static, or use `make_mcgs_fn`. `num_playouts` (a traced int, at most
    `config.num_simulations`) runs fewer playouts without recompiling.
    """
    check_env(env)
    batch = root_states.step_count.shape[0] if root_states.step_count.ndim else None
    if batch is None:
        raise ValueError("mcgs: root_states must be batched (leading axis B)")
    num_actions = env.num_actions
    g = jax.vmap(lambda s: _init_graph(env, s, config))(root_states)
    if config.dirichlet_fraction > 0:  # split only then: without noise the keys stay as they were
        key, noise_key = jax.random.split(key)

    def simulate(_, carry):
        g, trips = carry
        g, path, depth, leaf, descent_trips = _descend(env, root_states, g, config)
        li = jnp.maximum(leaf, 0)
        emb = jax.tree_util.tree_map(lambda x: x[jnp.arange(batch), li], g.emb)
        states = jax.vmap(env.search_restore)(root_states, emb)
        x = states if config.evaluator_input == "state" else states.observation
        l1, l2, v1, v2 = eval_fn(params, x)
        out = (_as_logits(l1, batch, num_actions, "player 1"),
               _as_logits(l2, batch, num_actions, "player 2"), v1, v2)
        g, backup_trips = _backup(jax.vmap(_store_evaluation)(g, leaf, out), path, depth,
                                  default_unroll(config.walk_unroll, accelerator=1))
        if config.dirichlet_fraction > 0:  # the root is evaluated once, by the first playout
            fresh = leaf == 0
            g = jax.lax.cond(jnp.any(fresh), lambda g: _mix_root_noise(g, fresh, noise_key,
                                                                       config), lambda g: g, g)
        return g, trips + descent_trips + backup_trips

    n = config.num_simulations if num_playouts is None else jnp.minimum(
        jnp.asarray(num_playouts, jnp.int32), config.num_simulations)
    g, trips = jax.lax.fori_loop(0, n, simulate, (g, jnp.zeros((), jnp.int32)))
    keys = jax.random.split(key, batch)
    action, policy, root_value, action_q = jax.vmap(lambda gg, k: _root_output(gg, config, k))(
        g, keys)
    stats = dict(nodes_used=g.num_nodes, evaluations=g.evaluations, tt_hits=g.tt_hits,
                 playouts_with_hit=g.playouts_with_hit, dropped_playouts=g.dropped_playouts,
                 short_circuits=g.short_circuits,
                 root_visits=g.visits[:, 0].sum((1, 2)),
                 # the batch's descent and backup loop trips (the same for every game: the
                 # loops run on the whole batch; on a GPU each is a round trip to the host)
                 loop_trips=jnp.broadcast_to(trips, (batch,)))
    # float32[B, 2, A] marginal Q of each action at the root (FPU if unvisited; an action that
    # reaches no outcome, an illegal one, reads the FPU of the padding)
    stats["action_q"] = action_q
    return SearchResult(action=action, policy=policy, root_value=root_value[:, 0],
                        root_values=root_value, stats=stats), g


def make_mcgs_fn(eval_fn: EvalFn, env: Env, config: MCGSConfig = MCGSConfig()
                 ) -> Callable[[Any, State, jax.Array], tuple[SearchResult, Graph]]:
    """`jit`-ed `fn(params, root_states, key) -> (SearchResult, Graph)` for a fixed evaluator,
    env, config (the env is checked here, at construction)."""
    check_env(env)
    return jax.jit(lambda params, roots, key: mcgs_search(eval_fn, params, env, roots, key,
                                                          config))


def network_eval_fn(apply_fn: Callable[[Any, jax.Array], tuple[jax.Array, jax.Array]]) -> EvalFn:
    """Adapt a two-player network `apply_fn(params, obs) -> (logits [B, 2, A], values [B, 2])`
    (e.g. `turbozero.networks.simultaneous.TwoPlayerNet(...).apply`) to the `eval_fn` protocol."""

    def fn(params: Any, obs: jax.Array):
        logits, values = apply_fn(params, obs)
        return logits[:, 0], logits[:, 1], values[:, 0], values[:, 1]

    return fn


def uniform_eval_fn(params: Any, x: Any):
    """The spec's evaluator without a network: uniform priors, values 0, for any env (its
    logits [B, 1] broadcast to the env's action count)."""
    del params
    b = jax.tree_util.tree_leaves(x)[0].shape[0]
    z = jnp.zeros((b, 1), jnp.float32)
    return z, z, jnp.zeros(b, jnp.float32), jnp.zeros(b, jnp.float32)


def _run(env, evaluator, variables, states, key, config, risk_beta=None) -> SearchResult:
    """The graph family through `turbozero.search.search`: `evaluator.apply_fn` is a
    two-player network (`network_eval_fn`); the result holds one action and one policy per
    seat, `root_value` is seat 0's, `stats` MCGS's counters and the root's `action_q`."""
    del risk_beta  # refused by `turbozero.search.search`: no risk term
    result, _ = mcgs_search(network_eval_fn(evaluator.apply_fn), variables, env, states, key,
                            config)
    return result


register_family("graph", MCGSConfig, _run)

__all__ = ["MCGSConfig", "Graph", "NO_NODE", "check_env", "mcgs_search",
           "make_mcgs_fn", "network_eval_fn", "uniform_eval_fn"]
