"""The tree kernel's chance nodes against mctx's `stochastic_muzero_policy`, node for node, on
backgammon (docs/search.md, "Chance nodes").

mctx's stochastic tree alternates decision and chance nodes strictly: every decision leads to an
afterstate (a chance node valued by `afterstate_value`), every afterstate to a decision node
through one chance outcome. Its child arrays hold A + C slots, decisions at [0, A) and outcomes
at [A, A + C). Backgammon moves one checker per action, so a decision that leaves the turn
unfinished leads to a state that is not a chance state; mctx still makes an afterstate of it,
with one outcome (`chance_outcome_probs` is one-hot on outcome 0 there and `step_chance` a no-op).
The kernel's `EnvModel` makes a chance node only where the game waits for a roll. To compare the
two trees node for node the kernel searches `_MctxLayout` below: `EnvModel` whose every decision
leads to a chance node, as mctx lays the tree out. Everything else is the kernel's own: chance
selection `argmax p / (N + 1)`, a chance node's value = the network's at the chance state (mctx's
afterstate value), rewards on the decision edge, per-seat backup, MctxPUCT at decision nodes, a
PUCT root without noise. The kernel's chance nodes on `EnvModel` itself are checked against the
plain-Python reference in tests/search/test_search_kernel.py.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import envs
from envs.sampling import uniform_legal_action
from turbozero.games import build_network, game_spec
from turbozero.search import NetworkEvaluator
from turbozero.search.kernel import TreeSearchConfig, tree_search
from turbozero.search.mctx_policies import make_root, make_stochastic_fns
from turbozero.search.model import EnvModel
from turbozero.search.roots import PUCTRoot
from turbozero.search.selection import MctxPUCT

BG = envs.make("backgammon")
A = BG.num_actions
SIMS = 24
CONFIG = TreeSearchConfig(num_simulations=SIMS, root=PUCTRoot(dirichlet_fraction=0.0),
                          selection=MctxPUCT())


class _MctxLayout:
    """`EnvModel` with mctx's stochastic layout: the embedding is (state, is_afterstate); a
    decision always leads to a chance node (the afterstate), which has one outcome (0) when the
    game does not wait for a roll there; an outcome leads to a decision node."""

    def __init__(self, env, evaluator):
        self.inner = EnvModel(env, evaluator)
        self.env = env
        self.num_actions = env.num_actions
        self.num_players = env.num_players
        self.max_children = self.inner.max_children

    def root(self, params, states):
        emb, out = self.inner.root(params, states)
        return (emb, jnp.zeros(states.current_player.shape, bool)), out

    def step(self, params, key, embedding, action):
        state, after = embedding
        decided = jax.vmap(self.env.step_deterministic)(state, action)
        rolled = jax.vmap(self.env.step_chance)(state, action)
        nxt = jax.tree_util.tree_map(
            lambda r, d: jnp.where(after.reshape((-1,) + (1,) * (r.ndim - 1)), r, d),
            rolled.replace(observation=None), decided.replace(observation=None))
        reward = jnp.where(after[:, None], 0.0, nxt.rewards).astype(jnp.float32)
        out = self.inner._evaluate(params, nxt)
        chance = ~after & ~out.terminal  # every live afterstate is a chance node
        probs = jax.vmap(self.env.chance_outcome_probs)(nxt)  # one-hot 0 off a real roll
        pad = ((0, 0), (0, self.num_actions - probs.shape[-1]))
        legal = jnp.where(chance[:, None], jnp.pad(probs > 0, pad), nxt.legal_action_mask)
        logits = jnp.where(
            chance[:, None],
            jnp.pad(jnp.log(jnp.maximum(probs, jnp.finfo(jnp.float32).tiny)), pad,
                    constant_values=-jnp.inf),
            out.prior_logits)
        out = out._replace(legal=legal, prior_logits=logits, chance=chance)
        return (nxt, ~after), reward, out


def _positions():
    """Four decision states of random games (chance resolved): two at the start of a turn,
    two after the first checker of a turn, so that the root's moves reach real rolls at once."""
    n, plies = 8, 32

    @jax.jit
    def play(key):
        def ply(s, k):
            k1, k2 = jax.random.split(k)
            a = jax.vmap(uniform_legal_action)(jax.random.split(k1, n), s.legal_action_mask)
            s = jax.vmap(BG.step)(s, a, jax.random.split(k2, n))
            return s, s

        s = jax.vmap(BG.init)(jax.random.split(key, n))
        return jax.lax.scan(ply, s, jax.random.split(key, plies))[1]  # [plies, n, ...]

    seen = play(jax.random.PRNGKey(7))
    dice, remaining = np.asarray(seen.dice), np.asarray(seen.remaining)
    full = np.where(dice[..., 0] == dice[..., 1], 4, 2)
    ok = ~np.asarray(seen.terminated) & (np.asarray(seen.legal_action_mask).sum(-1) >= 2)
    ok[:8] = False  # away from the opening
    at_start = np.argwhere(ok & (remaining.sum(-1) == full))[:2]
    mid_turn = np.argwhere(ok & (remaining.sum(-1) < full))[:2]
    picked = np.concatenate([at_start, mid_turn])
    assert len(picked) == 4
    return jax.tree_util.tree_map(lambda x: x[picked[:, 0], picked[:, 1]], seen)


@pytest.fixture(scope="module")
def searched():
    net = build_network(game_spec("backgammon"), BG, {"hidden_sizes": (64, 64)})
    states = _positions()
    variables = net.init(jax.random.PRNGKey(1), states.observation)
    evaluator = NetworkEvaluator(net.apply, game_spec("backgammon").value_format)
    model = _MctxLayout(BG, evaluator)

    @jax.jit
    def kernel(variables, states):
        return tree_search(model, variables, states, jax.random.PRNGKey(0), CONFIG)

    @jax.jit
    def reference(variables, states):
        decision_fn, chance_fn = make_stochastic_fns(BG, evaluator)
        out = mctx.stochastic_muzero_policy(
            params=variables, rng_key=jax.random.PRNGKey(0),
            root=make_root(evaluator, variables, states, None),
            decision_recurrent_fn=decision_fn, chance_recurrent_fn=chance_fn,
            num_simulations=SIMS, invalid_actions=~states.legal_action_mask,
            qtransform=mctx.qtransform_by_parent_and_siblings, dirichlet_fraction=0.0)
        t = out.search_tree
        return (t.node_visits, t.parents, t.action_from_parent, t.node_values,
                t.embeddings.is_decision_node)

    result, tree = kernel(variables, states)
    theirs = tuple(np.asarray(x) for x in reference(variables, states))
    return states, result, jax.tree_util.tree_map(np.asarray, tree), theirs


def _mctx_nodes(theirs, b):
    """{kernel path: mctx node} of tree `b`; mctx's outcome slot A + c is outcome c."""
    visits, parents, actions = theirs[0][b], theirs[1][b], theirs[2][b]
    paths, out = {0: ()}, {(): 0}
    for n in range(1, visits.shape[0]):
        if visits[n] == 0:
            continue
        a = int(actions[n])
        paths[n] = paths[int(parents[n])] + (a - A if a >= A else a,)
        out[paths[n]] = n
    return out


def _kernel_nodes(tree, b):
    paths, out = {0: ()}, {(): 0}
    for n in range(1, int(tree.next_node[b])):
        paths[n] = paths[int(tree.parent[b, n])] + (int(tree.action[b, n]),)
        out[paths[n]] = n
    return out


def test_kernel_builds_mctx_stochastic_trees_node_for_node(searched):
    states, result, tree, theirs = searched
    visits, _, _, values, is_decision = theirs
    real_rolls = 0
    for b in range(visits.shape[0]):
        ours, mine = _kernel_nodes(tree, b), _mctx_nodes(theirs, b)
        # mctx expands the absorbing children of finished games; the kernel revisits the
        # terminal node instead (its visits and value agree): drop what lies below one
        ends = [p for p, n in ours.items() if tree.terminal[b, n]]
        mine = {p: n for p, n in mine.items()
                if not any(len(p) > len(e) and p[:len(e)] == e for e in ends)}
        assert set(ours) == set(mine), f"game {b}: the trees differ"
        for path, n in ours.items():
            m = mine[path]
            assert int(tree.node_visits[b, n]) == int(visits[b, m]), (b, path)
            # a chance node (an afterstate) is kept in the kernel exactly where mctx has one
            assert bool(tree.chance[b, n]) == (not is_decision[b, m]) or tree.terminal[b, n]
            if is_decision[b, m]:  # valued for its own mover
                p = int(tree.player[b, n])
                ours_v = tree.value_sum[b, n, p] / tree.node_visits[b, n]
            else:  # an afterstate: for the mover of its parent, the decision's reward included
                p = int(tree.player[b, ours[path[:-1]]])
                ours_v = tree.reward[b, n, p] + tree.value_sum[b, n, p] / tree.node_visits[b, n]
            np.testing.assert_allclose(ours_v, values[b, m], rtol=1e-4, atol=1e-5,
                                       err_msg=f"game {b}, path {path}")
            if tree.chance[b, n] and not tree.terminal[b, n]:
                outcomes = tree.children_action[b, n]
                real_rolls += int((outcomes >= 0).sum() > 1
                                  and (tree.children_index[b, n] >= 0).sum() > 1)
        got = np.asarray(result.stats["root_visits"][b])
        root_kids = {p[0]: int(visits[b, m]) for p, m in mine.items() if len(p) == 1}
        assert {a: int(got[a]) for a in root_kids} == root_kids
    np.testing.assert_allclose(np.asarray(result.root_value), values[:, 0], rtol=1e-4,
                               atol=1e-5)
    assert real_rolls >= 2  # the searches chose among real rolls at several chance nodes
