"""A direct `turbozero.search.search` call is bounded by memory (issue 45 item 2; docs/search.md,
"What search checks"): trees larger than the device's memory (or TURBOZERO_MEMORY_LIMIT) are one
ValueError line naming the settings, raised before the family runs (was: an XLA out-of-memory
traceback, or the C++ pools taking the machine's memory). The estimate is the config's own
`tree_shapes` (turbozero/memory.py), counted once per config, env and shapes."""

from __future__ import annotations

import time

import jax
import numpy as np
import pytest

import envs
from fixed_networks import small_game_network
from turbozero import memory
from turbozero.memory import ENV_VAR, search_bytes, tree_bytes
from turbozero.search import api
from turbozero.search.afterstate import AfterstatePlayerConfig
from turbozero.search.api import search
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.mctx_policies import MctxConfig
from turbozero.search.one_ply import OnePlyConfig

GAME = "pgx/tic_tac_toe"


def _states(env, n, seed=0):
    return jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(seed), n))


@pytest.fixture(scope="module")
def ttt():
    env = envs.make(GAME)
    evaluator, variables = small_game_network(env)
    return env, evaluator, variables, _states(env, 4)


@pytest.fixture(scope="module")
def backgammon():
    env = envs.make("backgammon")
    evaluator, variables = small_game_network(env)
    return env, evaluator, variables, _states(env, 4)


@pytest.fixture
def never_run(monkeypatch):
    """Every family's run replaced by one that fails: a refusal must come before it."""
    def boom(*args, **kwargs):
        raise AssertionError("the family ran: the memory bound did not refuse first")
    for name, family in list(api._FAMILIES.items()):
        monkeypatch.setitem(api._FAMILIES, name, family._replace(run=boom))


def _refused(env, evaluator, variables, states, config, *, jit=False):
    """The one line `search` refuses `config` with: fast (shapes only)."""
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:
        if jit:
            jax.jit(lambda s: search(env, evaluator, variables, s, jax.random.PRNGKey(0),
                                     config).action)(states)
        else:
            search(env, evaluator, variables, states, jax.random.PRNGKey(0), config)
    assert time.perf_counter() - start < 30  # no allocation, no compile of the search
    text = str(err.value)
    assert "\n" not in text, text
    assert text.startswith(f"a search of {type(config).__name__} needs about "), text
    assert text.endswith(f"or set {ENV_VAR} if the estimate is wrong (docs/search.md, "
                         "\"What search checks\")"), text
    return text


@pytest.mark.parametrize("jit", [False, True])
def test_tree_and_mctx_searches_larger_than_memory_are_refused(ttt, never_run, monkeypatch, jit):
    """10**9 simulations of the tree kernel and 10**8 of mctx on 4 roots (was: XLA's
    out-of-memory traceback), eagerly and at trace time inside jax.jit."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    text = _refused(*ttt, TreeSearchConfig(num_simulations=10**9), jit=jit)
    assert "lower batch=4 x num_simulations=1000000000 nodes, or set" in text, text
    text = _refused(*ttt, MctxConfig(num_simulations=10**8), jit=jit)
    assert ("lower batch=4 x num_simulations=100000000 nodes x the game's 9 action ids "
            "(mctx's nodes are dense)") in text, text


def _traced(env, evaluator, variables, states, config):
    """Trace a search (what `jax.jit` does first) without compiling or running it."""
    return jax.eval_shape(lambda s: search(env, evaluator, variables, s, jax.random.PRNGKey(0),
                                           config).action, states)


def test_a_search_within_the_limit_runs(ttt, monkeypatch):
    """The same call under a limit it fits is traced (the check refuses only what exceeds
    it), one byte less is refused, and TURBOZERO_MEMORY_LIMIT=none turns the check off."""
    env, evaluator, variables, states = ttt
    config = TreeSearchConfig(num_simulations=8)
    need = search_bytes(config, env, states, evaluator.value_format.has_wdl)[0]
    monkeypatch.setenv(ENV_VAR, str(need))
    assert _traced(env, evaluator, variables, states, config).shape == (4,)
    monkeypatch.setenv(ENV_VAR, str(need - 1))
    with pytest.raises(ValueError, match="lower batch=4 x num_simulations=8 nodes"):
        _traced(env, evaluator, variables, states, config)
    monkeypatch.setenv(ENV_VAR, "none")
    assert _traced(env, evaluator, variables, states, config).shape == (4,)


def test_the_count_is_one_eval_shape_per_config_and_shapes(ttt, monkeypatch):
    """The check's cost at trace time: one `tree_shapes` (an eval_shape of the tree's init,
    no compile) the first time a config, env and shapes meet, none after (remembered), over
    three traces of the same search."""
    env, evaluator, variables, states = ttt
    calls = []
    real = TreeSearchConfig.tree_shapes

    def counting(self, *args, **kwargs):
        start = time.process_time()
        out = real(self, *args, **kwargs)
        calls.append(time.process_time() - start)
        return out
    monkeypatch.setattr(TreeSearchConfig, "tree_shapes", counting)
    monkeypatch.delenv(ENV_VAR, raising=False)
    config = TreeSearchConfig(num_simulations=7)  # a size no other test counts
    for _ in range(3):
        _traced(env, evaluator, variables, states, config)
    assert len(calls) == 1
    _traced(env, evaluator, variables, _states(env, 3), config)
    assert len(calls) == 2  # other shapes: counted again
    assert max(calls) < 5  # CPU seconds; shapes only


def test_a_one_ply_search_larger_than_memory_is_refused(ttt, never_run, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "1KiB")
    text = _refused(*ttt, OnePlyConfig())
    assert "lower batch=4 x the game's max_legal_actions=9 moves, or set" in text, text


def test_a_graph_search_larger_than_memory_is_refused(never_run, monkeypatch):
    from goofspiel import Goofspiel
    from turbozero.search.mcgs import MCGSConfig, uniform_eval_fn

    monkeypatch.delenv(ENV_VAR, raising=False)
    env = Goofspiel(num_cards=3)
    text = _refused(env, uniform_eval_fn, None, _states(env, 2),
                    MCGSConfig(num_simulations=10**9))
    assert "lower batch=2 x num_simulations=1000000000 nodes, or set" in text, text


# ------------------------------------------------------------------------ the `cpu` family
def _cpp_or_skip():
    from turbozero.search.cpu import cpu_search_available

    if not cpu_search_available():
        pytest.skip("the C++ extension turbozero._search_cpp is not built")


def test_a_cpu_search_larger_than_memory_is_refused(ttt, never_run, monkeypatch):
    """10**9 simulations of the C++ tree on 4 roots: the device-side state pool of a state per
    simulation and the node pools (host memory; on a CPU device one memory with the pool)."""
    _cpp_or_skip()
    from turbozero.search.cpu.tree import CPUSearchConfig

    monkeypatch.delenv(ENV_VAR, raising=False)
    text = _refused(*ttt, CPUSearchConfig(num_simulations=10**9))
    assert ("lower batch=4 x (num_simulations=1000000000 + leaves_per_step=1 + 1) states "
            "and their nodes, or set") in text, text


def test_cpu_search_node_pools_on_an_accelerator_are_checked_against_host_memory(
        ttt, never_run, monkeypatch):
    """With the device not the host, the C++ node pools are checked on their own against the
    host's memory: 1,000 roots of 2 x 10**5 simulations, each tree's two pools at their
    fullest 64 blocks of 16,384 nodes of 64 bytes (128 MiB a root)."""
    _cpp_or_skip()
    from turbozero.search.cpu.tree import CPUSearchConfig

    env, evaluator, variables, _ = ttt
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(memory, "on_host", lambda device: False)
    monkeypatch.setattr(memory, "device_memory", lambda device=None: (None, "unknown"))
    states = _states(env, 1000)
    config = CPUSearchConfig(num_simulations=2 * 10**5)
    with pytest.raises(ValueError) as err:
        search(env, evaluator, variables, states, jax.random.PRNGKey(0), config)
    text = str(err.value)
    assert text.startswith("the search's trees in host memory (the C++ node pools) need "
                           "about 125.0 GiB, more than the "), text
    assert "lower batch=1000 x (num_simulations=200000 + leaves_per_step=1 + 1)" in text


def test_cpu_search_counts_the_pools_it_builds(ttt, monkeypatch):
    """Leaf for leaf the device-side state pool a real `cpu` search builds (recorded from
    `make_state_pool` while it runs), and its node pools are `node_pool_bytes` of the
    self-play it runs (recorded from `build_coordinator`), measured against a real tree's
    address space in tests/training/test_memory_bound.py."""
    _cpp_or_skip()
    import turbozero.search.cpu.search as cpu_search_module
    import turbozero.search.cpu.selfplay as selfplay
    from turbozero.search.cpu.tree import CPUSearchConfig

    env, evaluator, variables, states = ttt
    pools, plays = [], []
    real_pool, real_build = selfplay.make_state_pool, cpu_search_module.build_coordinator

    def pool(*args):
        out = real_pool(*args)
        pools.append(out)
        return out

    def build(env_, play, *args):
        plays.append(play)
        return real_build(env_, play, *args)
    monkeypatch.setattr(selfplay, "make_state_pool", pool)
    monkeypatch.setattr(cpu_search_module, "build_coordinator", build)
    config = CPUSearchConfig(num_simulations=6, dirichlet_fraction=0.0)
    search(env, evaluator, variables, states, jax.random.PRNGKey(0), config)
    assert len(pools) == 1 and len(plays) == 1
    estimate = config.tree_shapes(env, states)
    assert [(x.shape, np.dtype(x.dtype)) for x in jax.tree_util.tree_leaves(estimate)] == [
        (x.shape, x.dtype) for x in jax.tree_util.tree_leaves(pools[0])]
    assert jax.tree_util.tree_leaves(estimate)[0].shape[0] == 4 * (6 + 1 + 1) + 1
    play = plays[0]
    assert config.host_bytes(env, states) == selfplay.node_pool_bytes(
        play.num_games, play.nodes_per_block, play.max_blocks, play.state_slots_per_game,
        env.max_legal_actions)


# ------------------------------------------------------------- the complete-move players
def test_a_complete_move_player_larger_than_memory_is_refused(backgammon, never_run,
                                                              monkeypatch):
    """2**30 complete moves listed per position (was: XLA's out-of-memory traceback), and a
    2-ply look-ahead within 64 GiB only at its root level."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    text = _refused(*backgammon, AfterstatePlayerConfig(max_afterstates=2**30))
    assert "lower batch=4 x max_afterstates=1073741824 complete moves, or set" in text, text
    env, _, _, states = backgammon
    config = AfterstatePlayerConfig(plies=2, max_afterstates=2**20)
    levels = config.tree_shapes(env, states)
    monkeypatch.setenv(ENV_VAR, str(tree_bytes(levels[0]) + 1))  # level 0 fits, not 3 levels
    text = _refused(*backgammon, config)
    assert ("lower batch=4 x max_afterstates=1048576 complete moves, at each of plies=2 "
            "look-ahead levels for candidates=8 a position, 1/8 of them a trip, or set") in text


def _layout(tree):
    return (jax.tree_util.tree_structure(tree),
            [(tuple(x.shape), np.dtype(x.dtype)) for x in jax.tree_util.tree_leaves(tree)])


def _listed(monkeypatch, stand_in=False):
    """Record the complete-move listings (`afterstate._afterstates`) a player makes while it
    is traced; `stand_in`: answer each with zeros of the protocol's shapes instead of tracing
    the game's listing (seconds each), keeping the batch sizes asked for."""
    import turbozero.search.afterstate as afterstate

    listed = []
    real = afterstate._afterstates

    def recording(env, states, m):
        if stand_in:
            config = AfterstatePlayerConfig(max_afterstates=m)
            shapes = config.tree_shapes(env, states.replace(
                observation=jax.ShapeDtypeStruct((states.current_player.shape[0], 1), np.int8)))
            out = jax.tree_util.tree_map(lambda x: jax.numpy.zeros(x.shape, x.dtype),
                                         shapes[0]["listed"])
        else:
            out = real(env, states, m)
        listed.append(jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), out))
        return out
    monkeypatch.setattr(afterstate, "_afterstates", recording)
    return listed


def test_a_players_listing_is_counted_as_the_player_lists(backgammon, monkeypatch):
    """Leaf for leaf the listing a real 0-ply player makes (traced, the game's own listing):
    the estimate takes its states' shapes from the roots' (the protocol: the env's states
    without their observation), so this is where that is checked."""
    from turbozero.search.afterstate import afterstate_search

    env, evaluator, variables, states = backgammon
    listed = _listed(monkeypatch)
    config = AfterstatePlayerConfig(max_afterstates=40)
    jax.eval_shape(lambda v, s: afterstate_search(env, evaluator, v, s, config),
                   variables, states)
    (level,) = config.tree_shapes(env, states)
    assert len(listed) == 1
    assert _layout(level["listed"]) == _layout(listed[0])
    assert level["observed"].shape == (4, 40) + states.observation.shape[1:]


@pytest.mark.parametrize("plies", [1, 2])
def test_look_ahead_levels_are_counted_at_the_sizes_the_player_lists(backgammon, monkeypatch,
                                                                      plies):
    """The batch each look-ahead level lists (one trip's share of the level above's kept
    candidates, one chance outcome at a time), as a real player of 1 and 2 plies asks for
    it while traced (the game's listing stood in for by zeros of its shapes: the test above
    checks those)."""
    from turbozero.search.afterstate import afterstate_search

    env, evaluator, variables, states = backgammon
    listed = _listed(monkeypatch, stand_in=True)
    config = AfterstatePlayerConfig(plies=plies, candidates=6, max_afterstates=40)
    jax.eval_shape(lambda v, s: afterstate_search(env, evaluator, v, s, config),
                   variables, states)
    levels = config.tree_shapes(env, states)
    assert [x.valid.shape for x in listed] == [lv["listed"].valid.shape for lv in levels]
    # 4 roots x 6 candidates, a trip of 1/8: 3 positions; then 3 x 6 / 8: 3
    assert [lv["listed"].valid.shape[0] for lv in levels] == [4, 3, 3][:plies + 1]


@pytest.mark.slow
@pytest.mark.parametrize("plies", [0, 1])
def test_a_players_estimate_is_within_its_stated_factor_of_what_it_compiles_to(backgammon,
                                                                                plies):
    """The compiled player's whole working memory (`memory_analysis().temp_size_in_bytes`,
    XLA:CPU) against the estimate, 2 positions of the default 256 moves: measured 1.57x at 0
    plies (the network's activations and the valuer's copies, not counted) and 0.85x at 1
    ply (the level above's listing is dead by the time a look-ahead level lists; the
    estimate adds them). Within [0.5, 2] (docs/training.md, "Refusals")."""
    from turbozero.search.afterstate import afterstate_search

    env, evaluator, variables, states = backgammon
    states = jax.tree_util.tree_map(lambda x: x[:2], states)
    config = AfterstatePlayerConfig(plies=plies)
    estimate = tree_bytes(config.tree_shapes(env, states))
    compiled = jax.jit(lambda v, s: afterstate_search(env, evaluator, v, s, config)).lower(
        variables, states).compile()
    ratio = compiled.memory_analysis().temp_size_in_bytes / estimate
    assert 0.5 <= ratio <= 2.0, ratio


@pytest.mark.parametrize("config", [MctxConfig(), OnePlyConfig()])
def test_a_family_that_cannot_search_the_game_still_says_so_first(config, never_run):
    """The count of a config on a game its family does not search is the family's own
    refusal (a simultaneous-move game for mctx and the 1-ply search), not a shape error."""
    pyrat = envs.make("pyrat", width=5, height=5, cheese_count=3)
    states = _states(pyrat, 2)
    with pytest.raises(ValueError, match="is a simultaneous-move game"):
        search(pyrat, lambda v, o: None, None, states, jax.random.PRNGKey(0), config)
