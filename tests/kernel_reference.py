"""A plain-Python tree search transcribing the formulas of docs/search.md ("The tree kernel"),
shared by the kernel's tests (tests/search/test_search_kernel.py, tests/training/test_muzero.py).

The reference works on a Python tree of nodes, one simulation path at a time, calling the same
model with batches of one; the kernel must agree with it visit for visit on every node.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.search.kernel import tree_search
from turbozero.search.roots import GumbelRoot
from turbozero.search.selection import SpecPUCT
from turbozero.search.tree import NO_PARENT, compact_children


@functools.partial(jax.jit, static_argnums=(0, 4))
def _kernel(model, params, states, key, config, risk=None):
    return tree_search(model, params, states, key, config, risk_beta=risk)


def _row(tree_like, i):
    return jax.tree_util.tree_map(lambda x: x[i:i + 1], tree_like)


class _Node:
    def __init__(self, parent, action, reward, out, embedding, discount=1.0):
        self.parent, self.action, self.discount = parent, action, discount
        self.reward = np.asarray(reward, np.float64)
        self.visits, self.vl = 0, 0
        self.value_sum = np.zeros_like(self.reward)
        self.sq_sum = np.zeros_like(self.reward)
        self.pending = out is None
        self.embedding = embedding
        self.children = []  # [action, prior, _Node | None] in increasing action id
        if out is not None:
            self.set_eval(out)

    def set_eval(self, out):
        self.pending = False
        self.player = int(out.player[0])
        self.terminal = bool(out.terminal[0])
        self.raw = np.zeros_like(self.reward) if self.terminal else np.asarray(
            out.value[0], np.float64)
        legal = np.asarray(out.legal[0]) & (not self.terminal)
        ids = np.flatnonzero(legal)
        logits = np.asarray(out.prior_logits[0], np.float64)[ids]
        p = np.exp(logits - logits.max()) if len(ids) else logits
        p = p / p.sum() if len(ids) else p
        self.children = [[int(a), float(q), None] for a, q in zip(ids, p)]
        self.chance = out.chance is not None and bool(out.chance[0])
        if self.chance:
            # outcome priors exactly as the kernel holds them (float32, `compact_children`), so
            # that ties of p / (N + 1) between equally likely outcomes break alike
            k = max(len(ids), 1)
            _, p32 = compact_children(out.legal, out.prior_logits, k)
            self.prior32 = np.asarray(p32[0], np.float32)

    def q(self, mover):
        return self.reward[mover] + self.discount * self.value_sum[mover] / self.visits

    def var(self, mover):
        m = self.value_sum[mover] / self.visits
        return self.discount ** 2 * max(self.sq_sum[mover] / self.visits - m * m, 0.0)


def _spec_scores(node, sel, beta=None):
    """`beta`: the risk beta of the mover (per-seat risk); None: the selection's."""
    m = node.player
    beta = sel.risk_beta if beta is None else beta
    pv = node.value_sum[m] / node.visits
    out = []
    for _, prior, ch in node.children:
        n = ch.visits if ch else 0
        vl = ch.vl if ch else 0
        if n > 0:
            q = ch.q(m)
            if beta:
                q = q + beta / 2 * ch.var(m)
            q = (n * q + vl * pv) / (n + vl)
            if beta:
                q = min(max(q, sel.q_bounds[0]), sel.q_bounds[1])
        elif vl > 0:
            q = pv
        else:
            q = pv - sel.fpu_base * (1 - prior)
        out.append(q + sel.c_puct * prior * math.sqrt(node.visits) / (1 + n + vl))
    return out


def _mctx_scores(node, sel):
    m = node.player
    pv = node.value_sum[m] / node.visits
    qs = [ch.q(m) if ch and ch.visits else None for _, _, ch in node.children]
    safe = [pv if q is None else q for q in qs]
    lo, hi = min([pv] + safe), max([pv] + safe)
    pb_c = sel.pb_c_init + math.log((node.visits + sel.pb_c_base + 1) / sel.pb_c_base)
    out = []
    for (_, prior, ch), q in zip(node.children, qs):
        n = (ch.visits + ch.vl) if ch else 0
        qn = ((lo if q is None else q) - lo) / max(hi - lo, 1e-8)
        out.append(qn + math.sqrt(node.visits) * pb_c * prior / (n + 1))
    return out


def _schedule(m, n):
    """Sequential halving visit schedule (Karnin et al. 2013, as Gumbel MuZero uses it)."""
    if m <= 1:
        return list(range(n))
    seq, level, k = [], 0, m
    while len(seq) < n:
        for _ in range(max(1, n // (math.ceil(math.log2(m)) * k))):
            seq += [level] * k
            level += 1
        k = max(2, k // 2)
    return seq[:n]


def _gumbel_sigma(root, g):
    m = root.player
    kids = root.children
    visits = [ch.visits if ch else 0 for _, _, ch in kids]
    total = sum(visits)
    pvis = sum(max(p, 1e-38) for (_, p, ch), v in zip(kids, visits) if v)
    wq = sum(max(p, 1e-38) * ch.q(m) for (_, p, ch), v in zip(kids, visits) if v)
    wq = wq / pvis if pvis else 0.0
    mixed = (root.raw[m] + total * wq) / (total + 1)
    q = [ch.q(m) if v else mixed for (_, _, ch), v in zip(kids, visits)]
    lo, hi = min(q), max(q)
    return [(g.c_visit + max(visits)) * g.c_scale * (x - lo) / max(hi - lo, 1e-8) for x in q]


def _gumbel_scores(root, g, gumbel, num_sims, use_vl=True):
    visits = [((ch.visits + (ch.vl if use_vl else 0)) if ch else 0) for _, _, ch in root.children]
    m = min(g.max_considered, len(root.children))
    considered = _schedule(m, num_sims)[min(sum(visits), num_sims - 1)] if use_vl else max(visits)
    sigma = _gumbel_sigma(root, g)
    logp = [math.log(max(p, 1e-38)) for _, p, _ in root.children]
    top = max(logp)
    return [max(-1e9, gumbel[i] + logp[i] - top + sigma[i]) if visits[i] == considered
            else -math.inf for i in range(len(visits))]


def _argmax(xs):
    best = 0
    for i, x in enumerate(xs):
        if x > xs[best]:
            best = i
    return best


@functools.partial(jax.jit, static_argnums=0)
def _model_root(model, params, root_input):
    return model.root(params, root_input)


@functools.partial(jax.jit, static_argnums=0)
def _model_step(model, params, embedding, action):
    return model.step(params, jax.random.PRNGKey(0), embedding, action)


def reference_search(model, root_input, config, gumbel=None, params=None, risk=None):
    """One game (batch of one) searched in plain Python; returns the root node. `risk`: the
    risk beta of each seat (None: the selection's for all)."""
    emb, out = _model_root(model, params, root_input)
    root = _Node(None, None, np.zeros(model.num_players), out, emb)
    root.visits, root.value_sum, root.sq_sum = 1, root.raw.copy(), root.raw ** 2
    sel, L, sims = config.selection, config.leaves_per_step, config.num_simulations
    for step in range(-(-sims // L)):
        leaves, fresh = [], []
        for _ in range(min(L, sims - step * L)):
            node = root
            while True:
                node.vl += 1
                if node.pending or node.terminal or not node.children or node.visits == 0:
                    leaf = node
                    break
                if node.chance:  # mctx's stochastic rule, selections in flight counted
                    scores = [node.prior32[i] / np.float32((ch.visits + ch.vl if ch else 0) + 1)
                              for i, (_, _, ch) in enumerate(node.children)]
                elif node is root and isinstance(config.root, GumbelRoot):
                    scores = _gumbel_scores(root, config.root, gumbel, sims)
                elif isinstance(sel, SpecPUCT):
                    scores = _spec_scores(node, sel,
                                          None if risk is None else float(risk[node.player]))
                else:
                    scores = _mctx_scores(node, sel)
                slot = _argmax(scores)
                action, _, child = node.children[slot]
                if child is None:
                    leaf = _Node(node, action, np.zeros(model.num_players), None, None,
                                 config.discount)
                    leaf.vl += 1
                    node.children[slot][2] = leaf
                    fresh.append(leaf)
                    break
                node = child
            leaves.append(leaf)
        for leaf in fresh:  # evaluate the step's new nodes (the kernel does it in one call)
            emb, reward, out = _model_step(model, params, leaf.parent.embedding,
                                           jnp.array([leaf.action], jnp.int32))
            leaf.embedding, leaf.reward = emb, np.asarray(reward[0], np.float64)
            leaf.set_eval(out)
        for leaf in leaves:
            v, node = leaf.raw.copy(), leaf
            while node is not None:
                node.visits += 1
                node.vl -= 1
                node.value_sum += v
                node.sq_sum += v * v
                v = node.reward + config.discount * v
                node = node.parent
    return root


def _reference_tree(root):
    """{action path: visits} of every node."""
    out, stack = {}, [((), root)]
    while stack:
        path, node = stack.pop()
        out[path] = node.visits
        for a, _, ch in node.children:
            if ch is not None:
                stack.append((path + (a,), ch))
    return out


def _kernel_paths(tree, b):
    """{action path: node index} of the nodes in use in tree `b`."""
    paths = {(): 0}
    for n in range(1, int(tree.next_node[b])):
        parent = int(tree.parent[b, n])
        path = next(p for p, i in paths.items() if i == parent) + (int(tree.action[b, n]),)
        paths[path] = n
    return paths


def _kernel_tree(tree, b):
    parent = np.asarray(tree.parent[b])
    action = np.asarray(tree.action[b])
    visits = np.asarray(tree.node_visits[b])
    paths, out = {0: ()}, {(): int(visits[0])}
    for n in range(1, int(tree.next_node[b])):
        assert parent[n] != NO_PARENT and parent[n] < n
        paths[n] = paths[int(parent[n])] + (int(action[n]),)
        out[paths[n]] = int(visits[n])
    return out


def check_against_reference(model, states, config, key=jax.random.PRNGKey(5), params=None,
                            risk=None):
    """The kernel's tree, root visits and root values equal the reference's on every game of
    the batch `states` (`risk`: float32[B, P] per-seat risk betas, or None)."""
    result, tree = _kernel(model, params, states, key, config, risk)
    gumbel = None
    if isinstance(config.root, GumbelRoot):
        k_noise = jax.random.split(key, 3)[0]  # the kernel's key for the root policy
        gumbel = np.asarray(config.root.gumbel_scale * jax.random.gumbel(
            k_noise, tree.children_prior[:, 0].shape))
    for b in range(jax.tree_util.tree_leaves(states)[0].shape[0]):
        root = reference_search(model, _row(states, b), config,
                                None if gumbel is None else gumbel[b], params,
                                None if risk is None else np.asarray(risk[b]))
        assert _kernel_tree(tree, b) == _reference_tree(root), f"game {b}"
        vis = {a: ch.visits for a, _, ch in root.children if ch is not None}
        got = np.asarray(result.stats["root_visits"][b])
        assert {a: int(got[a]) for a in vis} == vis
        np.testing.assert_allclose(np.asarray(result.root_values[b]),
                                   root.value_sum / root.visits, rtol=1e-4, atol=1e-5)
    return result, tree


