"""The `cpu` search family (issue 33, "One search core"; docs/cpu_search.md, "The `cpu` search
family"): `turbozero.search.search` with a `CPUSearchConfig` searches every root of a batch with
the C++ tree and answers with a `SearchResult`.

On tic-tac-toe positions with the fixed network of tests/search/test_cpu_search_jax.py, no root noise,
one leaf per step and temperature 0, its root visits equal the JAX tree kernel's
(`TreeSearchConfig` with the same `SpecPUCT` and `PUCTRoot`), also with per-seat risk betas.
Inside `jax.jit` it is a ValueError naming the host-side family, not a tracer error."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from fixed_networks import fixed_linear_network
from turbozero.search import (
    CPUSearchConfig, NetworkEvaluator, PUCTRoot, SearchResult, SpecPUCT, TreeSearchConfig,
    available_families, family_of, search)
from turbozero.search.cpu import cpu_search_available

pytestmark = pytest.mark.skipif(
    not cpu_search_available(),
    reason="the C++ extension turbozero._search_cpp is not built (pip install -e .)")

GAME = "pgx/tic_tac_toe"


@pytest.fixture(scope="module")
def game():
    """The env, the fixed random linear network and four positions (plies 0-3) as a batch."""
    env = envs.make(GAME)
    net = fixed_linear_network(env)

    step = jax.jit(env.step)
    states = [env.init(jax.random.PRNGKey(0))]
    for a in (4, 0, 8):
        states.append(step(states[-1], jnp.int32(a)))
    batch = jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)
    return env, net, step, batch


def _check_result(env, batch, out: SearchResult, sims: int) -> None:
    b = batch.step_count.shape[0]
    assert type(out) is SearchResult
    assert out.action.shape == (b,) and out.action.dtype == jnp.int32
    assert out.policy.shape == (b, env.num_actions)
    assert out.root_value.shape == (b,) and out.root_values.shape == (b, 2)
    legal = np.asarray(batch.legal_action_mask)
    assert legal[np.arange(b), np.asarray(out.action)].all()
    visits = np.asarray(out.stats["root_visits"])
    assert visits.shape == (b, env.num_actions) and not visits[~legal].any()
    np.testing.assert_array_equal(visits.sum(-1), sims)
    np.testing.assert_allclose(np.asarray(out.policy), visits / sims, rtol=1e-6)
    mover = np.asarray(batch.current_player)
    values = np.asarray(out.root_values)
    np.testing.assert_allclose(values[np.arange(b), mover], np.asarray(out.root_value))
    np.testing.assert_allclose(values.sum(-1), 0.0, atol=1e-6)
    assert np.asarray(out.stats["risk_value"]).shape == (b,)


def test_root_visits_equal_the_tree_kernel(game):
    env, net, _, batch = game
    tree = TreeSearchConfig(num_simulations=48, selection=SpecPUCT(c_puct=1.0, fpu_base=0.3),
                            root=PUCTRoot(dirichlet_fraction=0.0))
    config = CPUSearchConfig.from_tree(tree)
    assert family_of(config).name == "cpu" and "cpu" in available_families()
    assert not family_of(config).jittable and family_of(config).risk_beta
    want = jax.jit(lambda s, k: search(env, net, None, s, k, tree))(batch, jax.random.PRNGKey(1))
    got = search(env, net, None, batch, jax.random.PRNGKey(1), config)
    _check_result(env, batch, got, 48)
    np.testing.assert_array_equal(got.stats["root_visits"], want.stats["root_visits"])
    # the C++ sums are fixed point (1e-4 per visit)
    np.testing.assert_allclose(got.root_values, want.root_values, atol=1e-4)
    assert got.root_wdl is None and want.root_wdl is None
    # the recommended move is a most visited one
    visits = np.asarray(got.stats["root_visits"])
    assert (visits[np.arange(4), np.asarray(got.action)] == visits.max(-1)).all()


def test_per_seat_risk_betas_equal_the_tree_kernel(game):
    """risk_beta float32[B, P]: selection at a node uses its mover's beta, as in the kernel."""
    env, net, _, batch = game
    tree = TreeSearchConfig(num_simulations=48, selection=SpecPUCT(c_puct=1.2, fpu_base=0.1),
                            root=PUCTRoot(dirichlet_fraction=0.0))
    risk = jnp.tile(jnp.asarray([[1.5, -1.0]], jnp.float32), (4, 1))
    want = jax.jit(lambda s, k, r: search(env, net, None, s, k, tree, risk_beta=r))(
        batch, jax.random.PRNGKey(1), risk)
    config = CPUSearchConfig.from_tree(tree)
    got = search(env, net, None, batch, jax.random.PRNGKey(1), config, risk_beta=risk)
    np.testing.assert_array_equal(got.stats["root_visits"], want.stats["root_visits"])
    np.testing.assert_allclose(got.stats["risk_value"], want.stats["risk_value"], atol=2e-3)
    with pytest.raises(ValueError, match=r"risk_beta must be float32\[4, 2\]"):
        search(env, net, None, batch, jax.random.PRNGKey(1), config, risk_beta=risk[:, :1])


def test_a_warm_search_runs_no_jax_op_eagerly(game):
    """After its first call, a search of the family calls only compiled JAX code (its key
    split, seed, acting rule and state pool were eager ops, 47 and 36 per call; issue 34):
    benchmarks/tools/timing.py's watch finds no compile, trace or eager op in it."""
    from benchmarks.tools.timing import forbid_compiles_and_eager_ops

    env, net, _, batch = game
    config = CPUSearchConfig.from_tree(TreeSearchConfig(num_simulations=16))
    keys = [jax.random.PRNGKey(i) for i in range(3)]
    for key in keys[:2]:
        search(env, net, None, batch, key, config)
    with forbid_compiles_and_eager_ops("a warm cpu search"):
        out = search(env, net, None, batch, keys[2], config)
        jax.block_until_ready(out.policy)
    _check_result(env, batch, out, 16)


def test_inside_jit_it_is_a_value_error_naming_the_host_side_family(game):
    env, net, _, batch = game
    config = CPUSearchConfig(num_simulations=4)
    with pytest.raises(ValueError, match="'cpu' search family .*runs on the host"):
        jax.jit(lambda s, k: search(env, net, None, s, k, config))(batch, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="cannot be traced"):
        jax.vmap(lambda k: search(env, net, None, batch, k, config))(
            jax.random.split(jax.random.PRNGKey(0), 2))
    pyrat = envs.make("pyrat")  # simultaneous moves: the tree kernel's or the graph's
    states = jax.vmap(pyrat.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    with pytest.raises(ValueError, match="deterministic turn-based"):
        search(pyrat, net, None, states, jax.random.PRNGKey(0), config)


def test_noise_terminal_roots_and_wdl(game):
    """Root noise: legal moves, the same for the same key; a terminal root in the
    batch is not searched; a WDL head gives `root_wdl` (a distribution)."""
    from turbozero.networks.value_formats import WDLValue

    env, net, step, batch = game
    s = jax.tree_util.tree_map(lambda x: x[3], batch)
    for a in (1, 6, 3, 2):  # X (4, 8, 6, 2) wins on 2-4-6
        s = step(s, jnp.int32(a))
    assert bool(s.terminated)
    r = float(s.rewards[s.current_player])  # the outcome for the player to move there
    roots = jax.tree_util.tree_map(lambda x, y: jnp.concatenate([x, y[None]]), batch, s)
    config = CPUSearchConfig(num_simulations=16)
    one = search(env, net, None, roots, jax.random.PRNGKey(5), config)
    two = search(env, net, None, roots, jax.random.PRNGKey(5), config)
    np.testing.assert_array_equal(one.action, two.action)
    np.testing.assert_array_equal(one.stats["root_visits"], two.stats["root_visits"])
    _check_result(env, batch, jax.tree_util.tree_map(lambda x: x[:4], one), 16)
    assert not np.asarray(one.stats["root_visits"])[4].any()
    assert float(one.root_value[4]) == 0.0 and not np.asarray(one.policy)[4].any()

    def wdl_net(params, obs):
        logits, value = net(params, obs)
        return logits, jnp.stack([value, jnp.zeros_like(value), -value], -1)

    out = search(env, NetworkEvaluator(wdl_net, WDLValue()), None, roots,
                 jax.random.PRNGKey(0), dataclasses.replace(config))
    wdl = np.asarray(out.root_wdl)
    assert wdl.shape == (5, 3)
    np.testing.assert_allclose(wdl.sum(-1), 1.0, atol=1e-5)
    # live roots: W - L is the searched root value (the game pays at its end); the terminal
    # root's is its outcome for the player to move
    np.testing.assert_allclose(wdl[:4, 0] - wdl[:4, 2], np.asarray(out.root_value)[:4],
                               atol=2e-3)
    np.testing.assert_array_equal(wdl[4], [r > 0, r == 0, r < 0])
    assert r != 0


def test_the_self_play_config_keeps_its_own_search_settings():
    from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
    from turbozero.training.run_config import from_json, to_json

    with pytest.raises(ValueError, match="search.num_simulations=100 contradicts"):
        CPUSelfPlayConfig(search=CPUSearchConfig(num_simulations=100), num_simulations=64)
    CPUSelfPlayConfig(search=CPUSearchConfig(num_simulations=64), num_simulations=64)
    # a run stored before the family fields existed still loads
    data = to_json(CPUSelfPlayConfig(num_simulations=12))
    for name in ("num_simulations", "leaves_per_step"):
        data["search"].pop(name)
    loaded = from_json(data)
    assert loaded == CPUSelfPlayConfig(num_simulations=12)
    with pytest.raises(ValueError, match="max_children"):
        CPUSearchConfig.from_tree(TreeSearchConfig(max_children=4))
