"""MCGS kernel: public entry, bad input, a network evaluator, tree mode, table full, temperature."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from envs.pyrat import RIGHT, UP, PyRat
from turbozero.networks.simultaneous import TwoPlayerNet
from turbozero.search.mcgs import (MCGSConfig, make_mcgs_fn, mcgs_search, network_eval_fn,
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
    with pytest.raises(ValueError, match="temperature"):
        MCGSConfig(temperature=-1.0)
    with pytest.raises(ValueError, match="evaluator_input"):
        MCGSConfig(evaluator_input="pixels")
    env = PyRat(maze=GREEDY_MAZE)
    with pytest.raises(ValueError, match="batched"):
        mcgs_search(uniform_eval_fn, None, env, env.init(jax.random.PRNGKey(0)),
                    jax.random.PRNGKey(0), MCGSConfig(num_simulations=2))


def test_search_finds_adjacent_cheese_and_temperature_zero():
    env = PyRat(maze=GREEDY_MAZE, max_turns=20)
    cfg = MCGSConfig(num_simulations=48, temperature=0.0)
    out = make_mcgs_fn(uniform_eval_fn, env, cfg)(None, roots(env, 2), jax.random.PRNGKey(1))
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
    env = PyRat(width=7, height=7, cheese_count=10, max_turns=40)
    net = TwoPlayerNet(num_filters=8, num_layers=1, hidden=16)
    r = roots(env, 3)
    params = net.init(jax.random.PRNGKey(0), r.observation)
    eval_fn = network_eval_fn(net.apply)
    graph_fn = make_mcgs_fn(eval_fn, env, MCGSConfig(num_simulations=40))
    tree_fn = make_mcgs_fn(eval_fn, env, MCGSConfig(num_simulations=40, transpositions=False))
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
    env = PyRat(maze=GREEDY_MAZE, max_turns=20)
    out = make_mcgs_fn(uniform_eval_fn, env, MCGSConfig(num_simulations=30, capacity=6))(
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
