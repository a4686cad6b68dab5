"""Graph search on a second simultaneous game: Goofspiel on 4 cards (tests/goofspiel.py), 4 actions
per player where PyRat has 5, legal sets that shrink every turn, and many transpositions.

* the rules agree with OpenSpiel's goofspiel (where pyspiel is installed) and with the plain
  Python rules the reference search plays;
* the kernel builds the graph the plain-Python transcription of the spec builds
  (tests/search/test_mcgs_reference.py's `ReferenceMCGS`, evaluator and prior reduction for K cards):
  same nodes, edge visits, children, rewards, priors and Q values, from three roots;
* only legal cards are searched and played, even against priors that favour the illegal ones
  and with root noise; the search finds a dominant card; transpositions join paths;
* the eval_fn's logits are checked against the env's action count.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from goofspiel import Goofspiel, PlainGoofspiel
from mcgs_outputs import fields, mcgs_fn
from mcgs_reference import ReferenceMCGS, softmax

from turbozero.search import search
from turbozero.search.api import NetworkEvaluator
from turbozero.search.mcgs import MCGSConfig, mcgs_search, network_eval_fn, uniform_eval_fn

K = 4
ENV = Goofspiel(K)
STEP = jax.jit(ENV.step)


def play(*joint_actions):
    s = ENV.init(jax.random.PRNGKey(0))
    for a in joint_actions:
        s = STEP(s, jnp.array(a, jnp.int32))
    return s


def batch(*states):
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


# the endgame of `test_search_finds_the_dominant_card`: turn 2 (prizes 2 then 1), player 1 holds
# cards 1 and 4, player 2 cards 2 and 3 (actions are card - 1)
ENDGAME = ((1, 0), (2, 3))


# ------------------------------------------------------------------------------ the rules
def test_rules_match_the_plain_rules_and_open_spiel():
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("goofspiel", {"num_cards": K, "points_order": "descending",
                                           "returns_type": "total_points", "imp_info": False})
    rng = np.random.default_rng(0)
    for _ in range(12):
        s, plain = ENV.init(jax.random.PRNGKey(0)), PlainGoofspiel(K)
        spiel = game.new_initial_state()
        total = np.zeros(2)
        while not bool(s.terminated):
            mask = np.asarray(s.legal_action_mask)
            for p in range(2):
                assert plain.effective_outcomes(p)[0] == list(np.flatnonzero(mask[p]))
            a = [int(rng.choice(np.flatnonzero(mask[p]))) for p in range(2)]
            if not spiel.is_terminal():  # OpenSpiel plays the last, forced turn by itself
                for p in range(2):
                    assert sorted(spiel.legal_actions(p)) == list(np.flatnonzero(mask[p]))
                spiel.apply_actions(a)
            _, r = plain.make_move(*a)
            s = STEP(s, jnp.array(a, jnp.int32))
            np.testing.assert_array_equal(s.rewards, r)
            total += np.asarray(s.rewards)
        assert spiel.is_terminal() and plain.is_over() and int(s.step_count) == K
        np.testing.assert_array_equal(total, spiel.returns())
    assert bool(np.asarray(s.legal_action_mask).all())  # the protocol's mask at the end


def test_outcomes_and_key():
    s = play(*ENDGAME)
    n, outcomes, a2i = (np.asarray(x) for x in ENV.effective_outcomes(s))
    np.testing.assert_array_equal(n, [2, 2])
    np.testing.assert_array_equal(outcomes[:, :2], [[0, 3], [1, 2]])
    np.testing.assert_array_equal(a2i, [[0, 2, 2, 1], [2, 0, 1, 2]])  # illegal cards: index n
    # the same hands by other paths (other points won) are one key, one position
    other = play((2, 3), (1, 0))
    assert not np.array_equal(np.asarray(s.rewards), np.asarray(other.rewards))
    np.testing.assert_array_equal(ENV.state_key(s), ENV.state_key(other))
    assert bool(ENV.same_position(ENV.search_embedding(s), ENV.search_embedding(other)))
    assert not np.array_equal(ENV.state_key(s), ENV.state_key(play((1, 0))))


# ----------------------------------------------------- against the plain-Python reference
def goof_hash(hands):
    """A distinct integer per pair of hands (hands: bool[2, K] or sets of actions)."""
    return 1 + sum((1 << a) * bool(hands[0][a]) + (1 << (K + a)) * bool(hands[1][a])
                   for a in range(K))


def goof_eval_python(game):
    h = goof_hash([[a in game.hands[p] for a in range(K)] for p in range(2)])
    l1 = [((h * (a + 3) * 41) % 1009) / 250.0 for a in range(K)]
    l2 = [((h * (a + 5) * 43) % 1013) / 250.0 for a in range(K)]
    return l1, l2, 2.0 * ((h * 97) % 10007) / 10007.0, 2.0 * ((h * 61) % 10009) / 10009.0


def goof_eval_jax(params, states):
    del params
    w = jnp.concatenate([1 << jnp.arange(K), 1 << jnp.arange(K, 2 * K)]).astype(jnp.int32)
    h = 1 + (states.hands.reshape(-1, 2 * K).astype(jnp.int32) * w).sum(1)
    a = jnp.arange(K, dtype=jnp.int32)
    l1 = ((h[:, None] * (a + 3) * 41) % 1009) / 250.0
    l2 = ((h[:, None] * (a + 5) * 43) % 1013) / 250.0
    return l1, l2, 2.0 * ((h * 97) % 10007) / 10007.0, 2.0 * ((h * 61) % 10009) / 10009.0


def reduce_prior(p, action_to_idx, n):
    """docs/mcgs.md's prior: mean probability per outcome, renormalised; an action whose index
    is n or more (an illegal card) reaches no outcome."""
    means = [sum(p[a] for a in range(len(p)) if action_to_idx[a] == k)
             / sum(1 for a in range(len(p)) if action_to_idx[a] == k) for k in range(n)]
    return [m / sum(means) for m in means]


class GoofspielReference(ReferenceMCGS):
    """The spec's search of tests/search/test_mcgs_reference.py with Goofspiel's evaluator."""

    def evaluate_node(self, node, game):
        l1, l2, v1, v2 = goof_eval_python(game)
        node.prior_p1 = reduce_prior(softmax(l1), node.p1_action_to_idx, node.n1)
        node.prior_p2 = reduce_prior(softmax(l2), node.p2_action_to_idx, node.n2)
        node.U_p1 = node.Q_p1 = v1
        node.U_p2 = node.Q_p2 = v2
        node.is_evaluated = True
        self.evaluations += 1


ROOTS = [(), ((1, 0),), ENDGAME]  # the start, after one turn, the endgame
GROUPS = {
    "plain": (dict(num_simulations=60, c_puct=1.25, fpu_offset=0.1), (1, 2, 17, 60)),
    "wide": (dict(num_simulations=60, c_puct=3.0, fpu_offset=0.3), (60,)),
    "spec_floor": (dict(num_simulations=40, c_puct=1.25, fpu_offset=0.1, exploration_floor=0.0),
                   (2, 40)),
    "table_full": (dict(num_simulations=40, c_puct=2.0, fpu_offset=0.2, capacity=10), (40,)),
}
CASES = [(g, n, r) for g, (_, ns) in GROUPS.items() for n in ns for r in range(len(ROOTS))]


def run_reference(root, n, cfg):
    game = PlainGoofspiel(K)
    for a in root:
        game.make_move(*a)
    ref = GoofspielReference(0, cfg["c_puct"], cfg["fpu_offset"], capacity=cfg.get("capacity"),
                             exploration_floor=cfg.get("exploration_floor", 1.0))
    gaps = []
    select = ref.select_outcome

    def watched(node, p):  # how close each PUCT decision was (see the test)
        marginal = node.edge_visits.sum(axis=1 - p)
        q = ref.compute_marginal_Q(node, p)
        prior = node.prior_p1 if p == 0 else node.prior_p2
        scale = math.sqrt(max(node.edge_visits.sum(), ref.exploration_floor))
        sc = sorted((q[i] + ref.c_puct * prior[i] * scale / (1 + marginal[i])
                     for i in range(len(q))), reverse=True)
        if len(sc) > 1 and scale > 0:  # floor 0 at a fresh node: an exact tie, outcome 0
            gaps.append(sc[0] - sc[1])
        return select(node, p)

    ref.select_outcome = watched
    return ref, ref.search(game, n), gaps


@pytest.fixture(scope="module")
def kernel_results():
    roots = batch(*(play(*r) for r in ROOTS))
    results = {}
    for name, (kw, ns) in GROUPS.items():
        cfg = MCGSConfig(evaluator_input="state", **kw)
        fn = jax.jit(lambda r, k, n: mcgs_search(goof_eval_jax, None, ENV, r, k, cfg, n))
        for n in ns:
            out = jax.tree_util.tree_map(np.asarray, fn(roots, jax.random.PRNGKey(1), n))
            for ri in range(len(ROOTS)):
                results[(name, n, ri)] = fields(jax.tree_util.tree_map(lambda x: x[ri], out))
    return results


def kernel_index(graph):
    out = {}
    for i in range(int(graph.num_nodes)):
        h = graph.emb["hands"][i]
        key = (frozenset(np.flatnonzero(h[0]).tolist()), frozenset(np.flatnonzero(h[1]).tolist()))
        assert key not in out, "the kernel created two nodes for one position"
        out[key] = i
    return out


@pytest.mark.parametrize("case", CASES, ids=[f"{g}-N{n}-root{r}" for g, n, r in CASES])
def test_kernel_matches_reference(case, kernel_results):
    group, n, ri = case
    out = kernel_results[case]
    g = out.graph
    ref, root, gaps = run_reference(ROOTS[ri], n, GROUPS[group][0])
    # float32 against float64: no PUCT decision may be closer than float32 rounding
    assert not gaps or min(gaps) > 1e-6, f"case has a near-tie PUCT decision ({min(gaps):.2g})"
    idx = kernel_index(g)
    assert set(idx) == set(ref.transposition_table), "different node sets"
    keys = {id(v): k for k, v in ref.transposition_table.items()}
    for key, node in ref.transposition_table.items():
        i = idx[key]
        assert bool(g.evaluated[i]) == node.is_evaluated, key
        assert tuple(g.n_out[i]) == (node.n1, node.n2), key
        assert list(g.outcomes[i, 0, :node.n1]) == node.p1_outcomes
        assert list(g.outcomes[i, 1, :node.n2]) == node.p2_outcomes
        np.testing.assert_array_equal(g.visits[i, :node.n1, :node.n2], node.edge_visits,
                                      err_msg=str(key))
        assert g.visits[i].sum() == node.edge_visits.sum()
        np.testing.assert_allclose(g.Q[i], [node.Q_p1, node.Q_p2], rtol=1e-5, atol=1e-5,
                                   err_msg=str(key))
        for a in range(node.n1):
            for b in range(node.n2):
                ch = node.edge_children[a][b]
                if ch is None:
                    assert g.child[i, a, b] == -1
                else:
                    assert g.child[i, a, b] == idx[keys[id(ch)]]
                    np.testing.assert_allclose(g.edge_r[i, a, b], [node.edge_r_p1[a, b],
                                                                    node.edge_r_p2[a, b]])
        if node.is_evaluated:
            np.testing.assert_allclose(g.prior[i, 0, :node.n1], node.prior_p1, rtol=1e-5)
            np.testing.assert_allclose(g.prior[i, 1, :node.n2], node.prior_p2, rtol=1e-5)
            assert (g.prior[i, 0, node.n1:] == 0).all() and (g.prior[i, 1, node.n2:] == 0).all()
    assert int(out.stats["nodes_used"]) == len(ref.transposition_table)
    assert int(out.stats["evaluations"]) == ref.evaluations
    assert int(out.stats["dropped_playouts"]) == ref.dropped
    total = root.edge_visits.sum()
    assert int(out.stats["root_visits"]) == total
    if total:
        for p, (outs, ax) in enumerate(((root.p1_outcomes, 1), (root.p2_outcomes, 0))):
            pi = np.zeros(K)
            for k, a in enumerate(outs):
                pi[a] += root.edge_visits.sum(axis=ax)[k] / total
            np.testing.assert_allclose(out.policy[p], pi, rtol=1e-6)
    np.testing.assert_allclose(out.root_value, [root.Q_p1, root.Q_p2], rtol=1e-5, atol=1e-5)


def test_reference_cases_are_not_vacuous(kernel_results):
    r = kernel_results
    assert all(int(r[("plain", 60, ri)].stats["tt_hits"]) > 0 for ri in range(2))
    assert all(int(r[("table_full", 40, ri)].stats["dropped_playouts"]) > 0 for ri in range(2))
    for ri in range(len(ROOTS)):  # the games were played to their end inside the search
        g = r[("wide", 60, ri)].graph
        assert g.terminal[: int(g.num_nodes)].any()
    # the start offers 4 cards each, the endgame 2: the padding is the env's (K), not PyRat's
    assert r[("plain", 60, 0)].graph.visits.shape[-2:] == (K, K)
    np.testing.assert_array_equal(r[("plain", 60, 2)].graph.n_out[0], [2, 2])


# ------------------------------------------------------------------- legal cards only
def illegal_loving_net(params, obs):
    """A two-player network (`TwoPlayerNet`'s output shape) whose policy puts logit 8 on every
    card the player does NOT hold: observations [B, 3K] are (own hand, other hand, prize)."""
    del params
    own, other = obs[:, :K], obs[:, K:2 * K]
    logits = jnp.stack([8.0 * (1.0 - own), 8.0 * (1.0 - other)], axis=1)
    return logits, jnp.zeros((obs.shape[0], 2))


def random_states(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        s = ENV.init(jax.random.PRNGKey(0))
        for _ in range(i % 3):  # 0, 1 or 2 turns played: 4, 3 or 2 cards left
            mask = np.asarray(s.legal_action_mask)
            s = STEP(s, jnp.array([rng.choice(np.flatnonzero(mask[p])) for p in range(2)],
                                  jnp.int32))
        out.append(s)
    return batch(*out)


def test_only_legal_cards_through_the_search_contract():
    roots = random_states(6, 0)
    legal = np.asarray(roots.legal_action_mask)
    cfg = MCGSConfig(num_simulations=24, dirichlet_fraction=0.5)
    res = jax.jit(lambda r, k: search(ENV, NetworkEvaluator(illegal_loving_net), None, r, k, cfg))(
        roots, jax.random.PRNGKey(3))
    pol, act = np.asarray(res.policy), np.asarray(res.action)
    assert pol.shape == (6, 2, K) and act.shape == (6, 2)
    np.testing.assert_allclose(pol.sum(-1), 1.0, rtol=1e-6)
    assert (pol[~legal] == 0).all()
    assert legal[np.arange(6)[:, None], np.arange(2)[None], act].all()
    assert (np.asarray(res.stats["root_visits"]) == 23).all()


def test_only_legal_cards_in_the_graph():
    roots = random_states(6, 1)
    out = mcgs_fn(network_eval_fn(illegal_loving_net), ENV,
                       MCGSConfig(num_simulations=24))(
        None, roots, jax.random.PRNGKey(0))
    g = jax.tree_util.tree_map(np.asarray, out.graph)
    legal = np.asarray(roots.legal_action_mask)
    assert legal[np.arange(6)[:, None], np.arange(2)[None], np.asarray(out.action)].all()
    for b in range(6):
        # the illegal cards' logit mass is dropped: the root's prior is uniform on the legal ones
        n = legal[b].sum(1)
        for p in range(2):
            np.testing.assert_allclose(g.prior[b, 0, p, :n[p]], 1.0 / n[p], rtol=1e-6)
        # every expanded edge of every node plays cards its node's players hold
        for i in range(int(g.num_nodes[b])):
            if g.terminal[b, i]:
                continue
            for o1, o2 in np.argwhere(g.child[b, i] >= 0):
                hands = g.emb["hands"][b, i]
                assert hands[0, g.outcomes[b, i, 0, o1]] and hands[1, g.outcomes[b, i, 1, o2]]


# -------------------------------------------------------------- what the search finds
def test_search_finds_the_dominant_card():
    # prizes 2 then 1 are left; player 1 holds cards 1 and 4, player 2 cards 2 and 3. Card 4
    # now wins the 2 (and card 1 then loses the 1): 2 points; card 1 now loses the 2 and card
    # 4 then wins the 1: 1 point, whatever player 2 does. Player 2 wins 1 point either way.
    out = mcgs_fn(uniform_eval_fn, ENV, MCGSConfig(num_simulations=32))(
        None, batch(play(*ENDGAME), play(*ENDGAME)), jax.random.PRNGKey(0))
    np.testing.assert_array_equal(np.asarray(out.action)[:, 0], [3, 3])
    pol, q = np.asarray(out.policy), np.asarray(out.action_q)
    assert (pol[:, 0, 3] > 0.7).all()
    # Q counts the rewards found so far and the evaluator's 0 for the rest: card 4 is worth
    # exactly its 2 (the last turn brings player 1 nothing), card 1 less than its 1 point
    np.testing.assert_allclose(q[:, 0, 3], 2.0, atol=1e-6)
    assert (q[:, 0, 0] < 1.0).all()
    assert (np.asarray(out.root_value)[:, 0] > 1.5).all()


def test_transpositions_join_paths():
    start = batch(play(), play())
    cfg = MCGSConfig(num_simulations=120, c_puct=4.0)
    g_out = mcgs_fn(uniform_eval_fn, ENV, cfg)(None, start, jax.random.PRNGKey(0))
    t_out = mcgs_fn(uniform_eval_fn, ENV, MCGSConfig(num_simulations=120, c_puct=4.0,
                                                          transpositions=False))(
        None, start, jax.random.PRNGKey(0))
    g = jax.tree_util.tree_map(lambda x: np.asarray(x)[0], g_out.graph)
    assert int(g_out.stats["tt_hits"][0]) > 0
    assert (np.asarray(t_out.stats["tt_hits"]) == 0).all()
    # the graph holds each position once (70 in the whole game), the tree some several times
    kernel_index(g)
    t = jax.tree_util.tree_map(lambda x: np.asarray(x)[0], t_out.graph)
    tree_positions = {t.emb["hands"][i].tobytes() for i in range(int(t.num_nodes))}
    assert int(g.num_nodes) <= 70 and len(tree_positions) < int(t.num_nodes)

    def child(node, m):
        return int(g.child[node, g.a2i[node, 0, m[0]], g.a2i[node, 1, m[1]]])

    # ... and two turns played in either order reach the same node
    joined = 0
    for m1 in np.ndindex(K, K):
        for m2 in np.ndindex(K, K):
            if m1[0] == m2[0] or m1[1] == m2[1] or child(0, m1) < 0 or child(0, m2) < 0:
                continue
            a, b = child(child(0, m1), m2), child(child(0, m2), m1)
            if a >= 0 and b >= 0:
                assert a == b
                joined += 1
    assert joined > 0


# ------------------------------------------------------------------------------ refusals
def test_logits_must_fit_the_action_count():
    def pyrat_sized(params, x):  # 5 logits per player, the env has 4 actions
        b = x.shape[0]
        return jnp.zeros((b, 5)), jnp.zeros((b, 5)), jnp.zeros(b), jnp.zeros(b)

    with pytest.raises(ValueError, match=r"player 1 logits have shape \(1, 5\).*4 actions"):
        mcgs_fn(pyrat_sized, ENV, MCGSConfig(num_simulations=2))(
            None, batch(play()), jax.random.PRNGKey(0))


class _PaddedOutcomes(Goofspiel):
    """Outcome arrays padded to 5, not to the env's 4 actions."""

    def effective_outcomes(self, state):
        n, o, a2i = super().effective_outcomes(state)
        return n, jnp.pad(o, ((0, 0), (0, 1))), jnp.pad(a2i, ((0, 0), (0, 1)))


class _NoActions(Goofspiel):
    num_actions = 0

    def __init__(self):
        super().__init__(K)
        self.num_actions = 0


def test_env_sizes_are_checked():
    with pytest.raises(ValueError, match=r"effective_outcomes must give .*int32\[2, 4\]"):
        mcgs_fn(uniform_eval_fn, _PaddedOutcomes(K), MCGSConfig(num_simulations=2))(
            None, batch(play()), jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="num_actions"):
        mcgs_fn(uniform_eval_fn, _NoActions())
