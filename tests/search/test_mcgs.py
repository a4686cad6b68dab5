"""MCGS kernel: public entry, bad input, a network evaluator, tree mode, table full, the recommended action."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.pyrat import LEFT, RIGHT, STAY, UP, PyRat
from turbozero.networks.simultaneous import TwoPlayerNet
from mcgs_outputs import mcgs_fn
from turbozero.search.mcgs import (MCGSConfig, _reduce_prior, mcgs_search, network_eval_fn,
                                   uniform_eval_fn)

GREEDY_MAZE = {  # cheese next to player 1 (right) and next to player 2 (below it)
    "width": 5, "height": 5, "walls": [[0, 0, 0, 1]], "mud": [],
    "cheese": [[1, 0], [4, 3], [2, 2]], "player1": [0, 0], "player2": [4, 4],
}


def roots(env, n, seed=0):
    return jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(seed), n))


def test_bad_config_and_input():
    with pytest.raises(ValueError, match="too small for one playout"):
        MCGSConfig(capacity=1)
    with pytest.raises(ValueError, match="num_simulations"):
        MCGSConfig(num_simulations=0)
    with pytest.raises(ValueError, match="evaluator_input"):
        MCGSConfig(evaluator_input="pixels")
    env = PyRat(maze=GREEDY_MAZE)
    with pytest.raises(ValueError, match="batched"):
        mcgs_search(uniform_eval_fn, None, env, env.init(jax.random.PRNGKey(0)),
                    jax.random.PRNGKey(0), MCGSConfig(num_simulations=2))


class _NoKeyPyRat(PyRat):
    """PyRat without a transposition key: graph search cannot run on it."""

    state_key = None  # not callable: the protocol check reports it


def test_env_without_graph_search_methods_is_refused_at_construction():
    import envs

    with pytest.raises(ValueError, match="effective_outcomes.*GraphSearchEnv"):
        mcgs_fn(uniform_eval_fn, envs.make("chess"))
    with pytest.raises(ValueError, match="needs state_key from the env"):
        mcgs_fn(uniform_eval_fn, _NoKeyPyRat(maze=GREEDY_MAZE))


def test_search_finds_adjacent_cheese_and_recommends_it():
    env = PyRat(maze=GREEDY_MAZE, max_episode_steps=20)
    cfg = MCGSConfig(num_simulations=48)
    out = mcgs_fn(uniform_eval_fn, env, cfg)(None, roots(env, 2), jax.random.PRNGKey(1))
    pol = np.asarray(out.policy)
    np.testing.assert_allclose(pol.sum(-1), 1.0, rtol=1e-6)
    assert (pol[:, 0].argmax(-1) == RIGHT).all()  # player 1 takes the cheese at (1,0)
    assert (pol[:, 1].argmax(-1) == 2).all()  # player 2 goes DOWN to (4,3)
    np.testing.assert_array_equal(out.action, [[RIGHT, 2], [RIGHT, 2]])
    # the value of the root counts the cheese about to be taken
    assert (np.asarray(out.root_value) > 0.5).all()
    q = np.asarray(out.action_q)
    assert q[0, 0, RIGHT] > q[0, 0, UP]
    # actions with the same outcome share their Q (LEFT and DOWN are walls = STAY at (0,0))
    assert q[0, 0, 2] == q[0, 0, 3] == q[0, 0, 4]
    assert pol[0, 0, 2] == pol[0, 0, 3] == 0.0  # the outcome's mass sits on STAY
    st = {k: np.asarray(v) for k, v in out.stats.items()}
    assert (st["root_visits"] == 47).all() and (st["evaluations"] <= 48).all()


def test_network_evaluator_batch_and_tree_mode():
    env = PyRat(width=7, height=7, cheese_count=10, max_episode_steps=40)
    net = TwoPlayerNet(num_filters=8, num_layers=1, hidden=16)
    r = roots(env, 3)
    params = net.init(jax.random.PRNGKey(0), r.observation)
    eval_fn = network_eval_fn(net.apply)
    graph_fn = mcgs_fn(eval_fn, env, MCGSConfig(num_simulations=40))
    tree_fn = mcgs_fn(eval_fn, env, MCGSConfig(num_simulations=40, transpositions=False))
    g = graph_fn(params, r, jax.random.PRNGKey(2))
    t = tree_fn(params, r, jax.random.PRNGKey(2))
    for out in (g, t):
        pol = np.asarray(out.policy)
        np.testing.assert_allclose(pol.sum(-1), 1.0, rtol=1e-5)
        a = np.asarray(out.action)
        assert a.shape == (3, 2) and ((a >= 0) & (a < 5)).all()
        assert (pol[np.arange(3)[:, None], np.arange(2)[None], a] > 0).all()  # sampled from it
        st = {k: np.asarray(v) for k, v in out.stats.items()}
        assert (st["dropped_playouts"] == 0).all()
        assert (st["nodes_used"] <= 41).all()
    # tree mode: one node per evaluation, never a transposition
    assert (np.asarray(t.stats["tt_hits"]) == 0).all()
    np.testing.assert_array_equal(t.stats["nodes_used"], t.stats["evaluations"] + np.asarray(
        t.graph.terminal.sum(-1)))
    # graph mode on the same games found transpositions
    assert np.asarray(g.stats["tt_hits"]).sum() > 0
    # the graph stores each state once: its node keys are distinct
    for b in range(3):
        n = int(g.stats["nodes_used"][b])
        keys = {tuple(k) for k in np.asarray(g.graph.key[b, :n])}
        assert len(keys) == n


def test_full_table_is_reported_not_overrun():
    env = PyRat(maze=GREEDY_MAZE, max_episode_steps=20)
    out = mcgs_fn(uniform_eval_fn, env, MCGSConfig(num_simulations=30, capacity=6))(
        None, roots(env, 1), jax.random.PRNGKey(0))
    st = {k: int(np.asarray(v)[0]) for k, v in out.stats.items()}
    assert st["nodes_used"] == 6
    assert st["dropped_playouts"] > 0
    # every playout either evaluated a node, reached a terminal/transposition, or was dropped
    assert st["root_visits"] + st["dropped_playouts"] + 1 == 30
    child = np.asarray(out.graph.child[0])
    assert child.max() < 6  # no pointer past the table
    # visits only on expanded edges
    assert (np.asarray(out.graph.visits[0])[child < 0] == 0).all()


# A corridor of 5 cells (one row), cheese at x = 1, 2, 4; a score above 1.5 wins. From the start
# (player 1 at x = 0, player 2 at x = 3) two turns lead to player 1 on x = 2, player 2 on x = 3,
# only the cheese at x = 4 left:
#   (RIGHT, STAY), (RIGHT, STAY): player 1 takes both cheese, scores (2, 0): the game is over;
#   (RIGHT, LEFT), (RIGHT, RIGHT): one each, scores (1, 1): the game goes on.
CORRIDOR = {"width": 5, "height": 1, "walls": [], "mud": [], "cheese": [[1, 0], [2, 0], [4, 0]],
            "player1": [0, 0], "player2": [3, 0]}


def _corridor_states():
    env = PyRat(maze=CORRIDOR, max_episode_steps=10)
    s = env.init(jax.random.PRNGKey(0))
    step = jax.jit(env.step)
    won = step(step(s, jnp.array([RIGHT, STAY])), jnp.array([RIGHT, STAY]))
    on = step(step(s, jnp.array([RIGHT, LEFT])), jnp.array([RIGHT, RIGHT]))
    return env, s, won, on


def test_scores_and_end_are_in_the_key():
    env, _, won, on = _corridor_states()
    # the two states agree on everything the spec's key holds ...
    np.testing.assert_array_equal(won.positions, on.positions)
    np.testing.assert_array_equal(won.cheese, on.cheese)
    np.testing.assert_array_equal(won.mud_turns, on.mud_turns)
    assert int(won.step_count) == int(on.step_count) == 2
    # ... but one is finished and the other is not
    np.testing.assert_array_equal(won.scores, [2.0, 0.0])
    np.testing.assert_array_equal(on.scores, [1.0, 1.0])
    assert bool(won.terminated) and not bool(on.terminated)
    assert not np.array_equal(env.state_key(won), env.state_key(on))
    assert not bool(env.same_position(env.search_embedding(won), env.search_embedding(on)))
    assert bool(env.same_position(env.search_embedding(on), env.search_embedding(on)))


def test_terminal_and_live_states_get_distinct_nodes():
    env, s, won, on = _corridor_states()
    roots = jax.tree_util.tree_map(lambda x: x[None], s)
    # a wide exploration (c_puct 10) so that both paths are played
    out = mcgs_fn(uniform_eval_fn, env, MCGSConfig(num_simulations=100, c_puct=10.0))(
        None, roots, jax.random.PRNGKey(0))
    g = jax.tree_util.tree_map(lambda x: np.asarray(x)[0], out.graph)
    n = int(g.num_nodes)
    same = [i for i in range(n)
            if (g.emb["positions"][i] == np.asarray(on.positions)).all()
            and (g.emb["cheese"][i] == np.asarray(on.cheese)).all()
            and int(g.emb["step_count"][i]) == 2]
    by_scores = {tuple(g.emb["scores"][i].tolist()): i for i in same}
    assert set(by_scores) >= {(2.0, 0.0), (1.0, 1.0)}, by_scores
    t, live = by_scores[(2.0, 0.0)], by_scores[(1.0, 1.0)]
    assert t != live
    # the finished one is a terminal node: never evaluated, no future value
    assert g.terminal[t] and not g.evaluated[t]
    np.testing.assert_array_equal(g.Q[t], [0.0, 0.0])
    assert not g.terminal[live] and g.evaluated[live]

    def child(node, a1, a2):  # the node reached from `node` by actions (a1, a2)
        return int(g.child[node, g.a2i[node, 0, a1], g.a2i[node, 1, a2]])

    # each path leads to its own node
    assert child(child(0, RIGHT, STAY), RIGHT, STAY) == t
    assert child(child(0, RIGHT, LEFT), RIGHT, RIGHT) == live


def prefer_eval(params, x):
    """Network stand-in: params = int32[2] preferred actions; every state gets logits peaked on
    them (3 against 0), values 0."""
    b = x.shape[0]
    logits = 3.0 * jax.nn.one_hot(params, 5)
    return (jnp.broadcast_to(logits[0], (b, 5)), jnp.broadcast_to(logits[1], (b, 5)),
            jnp.zeros(b), jnp.zeros(b))


OPEN_5x5 = {"width": 5, "height": 5, "walls": [], "mud": [], "cheese": [[2, 2]],
            "player1": [0, 0], "player2": [4, 4]}


class _CollidingPyRat(PyRat):
    """PyRat whose 64-bit key keeps `bits` bits of the real one: most positions collide."""

    def __init__(self, bits: int, **kw):
        super().__init__(**kw)
        self.bits = bits

    def state_key(self, state):
        return super().state_key(state) & jnp.array([0, (1 << self.bits) - 1], jnp.uint32)


@pytest.mark.parametrize("bits", [0, 2])
def test_hash_collisions_neither_merge_positions_nor_hide_transpositions(bits):
    """With a key that collides for almost every pair of positions (all of them at bits=0), the
    graph is the one the full key gives, node for node: each position is found wherever its
    node sits among the colliding ones, and a colliding one is never taken for it."""
    kw = dict(width=7, height=7, cheese_count=10, max_episode_steps=40)
    env, weak = PyRat(**kw), _CollidingPyRat(bits, **kw)
    r = roots(env, 3)
    cfg = MCGSConfig(num_simulations=40)
    full = mcgs_fn(uniform_eval_fn, env, cfg)(None, r, jax.random.PRNGKey(2))
    out = mcgs_fn(uniform_eval_fn, weak, cfg)(None, r, jax.random.PRNGKey(2))
    assert np.asarray(full.stats["tt_hits"]).sum() > 0
    for name in ("child", "visits", "edge_r", "Q", "U", "prior", "num_nodes", "evaluated",
                 "terminal", "tt_hits"):
        np.testing.assert_array_equal(getattr(out.graph, name), getattr(full.graph, name),
                                      err_msg=name)
    for k in full.graph.emb:
        np.testing.assert_array_equal(out.graph.emb[k], full.graph.emb[k], err_msg=k)
    np.testing.assert_array_equal(out.policy, full.policy)
    np.testing.assert_array_equal(out.action, full.action)
    # the weak keys did collide: fewer distinct keys than nodes
    n = int(out.stats["nodes_used"][0])
    assert len({tuple(k) for k in np.asarray(out.graph.key[0, :n])}) < n


def test_first_selection_follows_the_prior():
    # player 1 at (0, 0): outcomes UP, RIGHT, stay; player 2 at (4, 4): DOWN, LEFT, stay. The
    # preferred outcome is never outcome 0, the one a sqrt(N) exploration term takes on the tie.
    env = PyRat(maze=OPEN_5x5, max_episode_steps=10)
    fn = mcgs_fn(prefer_eval, env, MCGSConfig(num_simulations=2))  # root, then 1 selection
    for p1_action, p2_action in ((RIGHT, 3), (4, 3), (RIGHT, 4)):
        g = fn(jnp.array([p1_action, p2_action]), roots(env, 1), jax.random.PRNGKey(0)).graph
        child = np.asarray(g.child[0, 0])
        a2i = np.asarray(g.a2i[0, 0])
        want = (a2i[0, p1_action], a2i[1, p2_action])
        assert want[0] != 0 and want[1] != 0
        assert np.argwhere(child >= 0).tolist() == [list(want)], (p1_action, p2_action)
        assert int(np.asarray(g.visits[0, 0])[want]) == 1


def test_first_selection_with_the_spec_floor_ties_to_outcome_zero():
    # exploration_floor=0 is the spec's sqrt(N): at the fresh root every outcome scores the FPU
    # value and both players take outcome 0, whatever the priors prefer
    env = PyRat(maze=OPEN_5x5, max_episode_steps=10)
    fn = mcgs_fn(prefer_eval, env, MCGSConfig(num_simulations=2, exploration_floor=0.0))
    for p1_action, p2_action in ((RIGHT, 3), (4, 3)):
        g = fn(jnp.array([p1_action, p2_action]), roots(env, 1), jax.random.PRNGKey(0)).graph
        assert np.argwhere(np.asarray(g.child[0, 0]) >= 0).tolist() == [[0, 0]]
    # past the first visit the floor no longer matters: N >= 1 in both formulas
    assert MCGSConfig().exploration_floor == 1.0


def test_bad_exploration_floor():
    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="exploration_floor"):
            MCGSConfig(exploration_floor=bad)


def test_root_noise_over_valid_outcomes_only():
    env = PyRat(maze=OPEN_5x5, max_episode_steps=10)
    r = roots(env, 4)  # four copies of one root; each rat has 3 valid outcomes of 5 there
    prefer = jnp.array([RIGHT, 3])
    noisy = mcgs_fn(prefer_eval, env, MCGSConfig(num_simulations=8, dirichlet_fraction=0.25))(
        prefer, r, jax.random.PRNGKey(3))
    g = noisy.graph
    logits = 3.0 * jax.nn.one_hot(prefer, 5)
    # the network's prior on every node (outcome-reduced), player by player: [B, C, 2, A]
    net = jnp.stack([jax.vmap(jax.vmap(_reduce_prior, (None, 0, 0)), (None, 0, 0))(
        logits[p], g.a2i[:, :, p], g.n_out[:, :, p]) for p in range(2)], axis=2)
    net, prior = np.asarray(net), np.asarray(g.prior)
    p0, p1 = net[:, 0], prior[:, 0]  # the root
    valid = np.arange(5)[None, None, :] < np.asarray(g.n_out[:, 0])[..., None]
    assert (np.asarray(g.n_out[:, 0]) == 3).all()
    np.testing.assert_allclose(p1.sum(-1), 1.0, rtol=1e-6)
    assert (p1[~valid] == 0).all() and (p0[~valid] == 0).all()
    assert (p1[valid] != p0[valid]).all()
    assert (p1[valid] >= 0.75 * p0[valid] - 1e-6).all()  # at most the fraction is replaced
    # the games of the batch draw different noise
    assert not np.allclose(p1[0], p1[1])
    # only the root is noised: every other evaluated node holds the network's prior
    ev_nodes = np.asarray(g.evaluated).copy()
    ev_nodes[:, 0] = False
    assert ev_nodes.sum() > 4
    np.testing.assert_allclose(prior[ev_nodes], net[ev_nodes], rtol=1e-6, atol=1e-7)
    # and without the setting, the root holds the network's prior too
    plain = mcgs_fn(prefer_eval, env, MCGSConfig(num_simulations=2))(
        prefer, r, jax.random.PRNGKey(3))
    np.testing.assert_allclose(np.asarray(plain.graph.prior[:, 0]), p0, rtol=1e-6, atol=1e-7)


def test_bad_noise_settings():
    with pytest.raises(ValueError, match="dirichlet_fraction"):
        MCGSConfig(dirichlet_fraction=1.5)
    with pytest.raises(ValueError, match="dirichlet_fraction"):
        MCGSConfig(dirichlet_fraction=-0.1)
    with pytest.raises(ValueError, match="dirichlet_alpha"):
        MCGSConfig(dirichlet_alpha=0.0)
    assert MCGSConfig().dirichlet_fraction == 0.0 and MCGSConfig().dirichlet_alpha == 0.3


def test_walk_unroll_changes_the_loop_trips_not_the_graph():
    """Levels per loop trip of the descent and the backup (issue 46) leave the graph, the
    policy and the action bit for bit as they are; the counted trips fall."""
    env = PyRat(maze=GREEDY_MAZE, max_episode_steps=20)
    out = {u: mcgs_fn(uniform_eval_fn, env, MCGSConfig(num_simulations=24, walk_unroll=u))(
        None, roots(env, 2), jax.random.PRNGKey(3)) for u in (1, 3)}
    for a, b in zip(jax.tree_util.tree_leaves((out[1].graph, out[1].policy, out[1].action)),
                    jax.tree_util.tree_leaves((out[3].graph, out[3].policy, out[3].action))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    trips1, trips3 = (int(o.stats["loop_trips"][0]) for o in (out[1], out[3]))
    assert trips1 >= 24 and trips3 < trips1
    with pytest.raises(ValueError, match="walk_unroll"):
        MCGSConfig(walk_unroll=0)
