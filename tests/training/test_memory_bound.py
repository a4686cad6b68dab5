"""Sizes bounded by memory before anything is built (issue 45 item 2): a loop state or an
evaluation larger than the device's memory is one ValueError line naming the settings, in about
a second and with nothing written (was: minutes of nothing, or an XLA out-of-memory traceback
naming no setting)."""

import dataclasses
import functools
import os
import shutil
import time
import uuid

import jax
import numpy as np
import pytest

import envs
from turbozero import stored_functions as sf

from turbozero.presets import get_preset
from turbozero.training import Trainer
from turbozero.search.kernel import TreeSearchConfig
from turbozero.memory import ENV_VAR, parse_limit, search_tree_bytes, tree_bytes

GAME = "pgx/tic_tac_toe"


def test_a_replay_larger_than_memory_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    run_dir = tmp_path / "run"
    # CPU seconds of this process (all its threads), not wall time: the claim is about work
    # done, and wall time failed it on a machine at load 10-13 (104 s for a few of CPU)
    start = time.process_time()
    with pytest.raises(ValueError) as err:  # 484 GiB of replay
        Trainer(get_preset(GAME, "tiny", num_envs=2**20, replay_capacity=2**12), str(run_dir))
    text = str(err.value)
    assert "\n" not in text
    # the replay dominates; the self-play search's trees are counted beside it
    assert text.startswith("the run's state needs about 425.2 GiB (replay 420.0 GiB; ")
    assert "search trees 5.1 GiB" in text
    assert "lower num_envs=1048576 x replay_capacity=4096 positions" in text
    assert time.process_time() - start < 60  # shapes only: no allocation, no compile
    assert not run_dir.exists()


def test_an_evaluation_larger_than_memory_is_refused(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ValueError, match=r"^an evaluation of eval_games=268435456 games needs "
                                         r"about .* GiB for its games \(search trees of "
                                         r"eval_games=268435456 x num_simulations=16 nodes: "
                                         r".* GiB\), more than the "):
        Trainer(get_preset(GAME, "tiny", eval_games=2**28))


def test_the_limit_can_be_set(monkeypatch):
    """TURBOZERO_MEMORY_LIMIT replaces the device's memory (a shared machine, a wrong
    estimate): a small state refused under 1 MiB, 'none' turns the check off."""
    monkeypatch.setenv(ENV_VAR, "1MiB")
    # a seed of its own: a state stored by an earlier build is not built (nor checked) again
    cfg = get_preset(GAME, "tiny", num_envs=64, replay_capacity=512, seed=4501)
    with pytest.raises(ValueError, match=rf"more than the 1.0 MiB of {ENV_VAR}: lower num_envs"):
        Trainer(cfg)
    assert parse_limit("64GiB") == 64 * 2**30 and parse_limit("500MB") == 500 * 10**6
    assert parse_limit("none") is None and parse_limit("1024") == 1024
    with pytest.raises(ValueError, match=f"^{ENV_VAR}='lots': give bytes"):
        parse_limit("lots")
    monkeypatch.setenv(ENV_VAR, "none")
    Trainer(cfg)  # builds
    assert os.environ[ENV_VAR] == "none"


def test_search_tree_bytes_are_nodes_times_bytes_per_node():
    """The tree kernel's count against a plain reference of its arrays: per node 4 int32
    scalars (visits, virtual loss, player, parent, action, depth: 6), 4 per-player float32
    vectors, a terminal flag, K child slots of (action, index, prior), the WDL sums (3 + 3
    float32) where asked, the bare env state; and one next-node counter per tree."""
    env = envs.make(GAME)
    states = jax.eval_shape(jax.vmap(env.init), jax.random.split(jax.random.PRNGKey(0), 4))
    bare = tree_bytes(states.replace(observation=None)) // 4
    b, k, p = 4, 9, 2
    for sims, wdl in ((31, False), (100, True)):
        n = sims + 1
        per_node = 6 * 4 + 4 * p * 4 + 1 + k * 3 * 4 + (24 if wdl else 0) + bare
        expected = b * n * per_node + b * 4
        got = search_tree_bytes(TreeSearchConfig(num_simulations=sims), env, states, wdl)
        assert got == expected, (sims, wdl, got, expected)
    assert search_tree_bytes(None, env, states, False) == 0


def test_a_search_larger_than_memory_is_refused_naming_its_settings(monkeypatch):
    """num_envs x num_simulations trees beyond memory (a search holds every game's tree at
    once): one line naming both settings (was: not counted; an XLA out-of-memory later)."""
    monkeypatch.setenv(ENV_VAR, "64GiB")
    base = get_preset(GAME, "tiny")
    search = TreeSearchConfig(num_simulations=10**7)
    cfg = get_preset(GAME, "tiny", num_envs=64, algorithm=type(base.algorithm)(
        search=search, acting=base.algorithm.acting))
    with pytest.raises(ValueError) as err:
        Trainer(cfg)
    text = str(err.value)
    assert "\n" not in text and "search trees 1" in text, text
    assert "lower num_envs=64 x num_simulations=10000000 nodes" in text, text


def test_an_evaluation_search_larger_than_memory_is_refused(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "64GiB")
    base = get_preset(GAME, "tiny")
    cfg = get_preset(GAME, "tiny", eval_games=4096, algorithm=type(base.algorithm)(
        search=base.algorithm.search, acting=base.algorithm.acting,
        eval_search=TreeSearchConfig(num_simulations=10**6)))
    with pytest.raises(ValueError, match=r"^an evaluation of eval_games=4096 games needs about "
                       r".* GiB for its games \(search trees of eval_games=4096 x "
                       r"num_simulations=1000000 nodes: .*\), more than the 64.0 GiB of "
                       r"TURBOZERO_MEMORY_LIMIT: lower eval_games \(or --games\) or the "
                       r"evaluation search's settings named there$"):
        Trainer(cfg)


def test_a_warm_start_from_stored_functions_is_checked_too(monkeypatch):
    """The loop state's build loaded from the store (no trace, no eval_shape) is checked on
    the export's result shapes (was: skipped)."""
    name = f"turbozero-exported-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(sf, "SUBDIR", name)
    monkeypatch.setenv(sf.ENV_VAR, "on")
    monkeypatch.delenv(ENV_VAR, raising=False)
    try:
        cfg = get_preset(GAME, "tiny", num_envs=8, replay_capacity=256, seed=4502)
        first = Trainer(cfg)
        assert first._init_state_fn.output_shapes() is None  # exported now, not loaded
        monkeypatch.setenv(ENV_VAR, "100KiB")
        with pytest.raises(ValueError, match=rf"more than the 0.1 MiB of {ENV_VAR}: lower"):
            Trainer(cfg)
        monkeypatch.setenv(ENV_VAR, "none")
        second = Trainer(cfg)
        assert second._init_state_fn.loaded  # the case above was a warm start
        shapes = second._init_state_fn.output_shapes()
        assert [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(shapes)] == [
            (np.shape(x), x.dtype) for x in jax.tree_util.tree_leaves(first.state)]
    finally:
        shutil.rmtree(os.path.join(jax.config.jax_compilation_cache_dir, name),
                      ignore_errors=True)


# ----------------------------------------------------- every search family's trees are counted
# Each family states its trees from its own allocation (`tree_shapes`: jax.eval_shape of the
# search's tree init), so the estimate is checked against the trees real searches hold, and an
# absurd size of each family is refused by the Trainer before anything is built.

def _states(env, n, seed=0):
    return jax.vmap(env.init)(jax.random.split(jax.random.PRNGKey(seed), n))


def _layout(tree):
    return (jax.tree_util.tree_structure(tree),
            [(tuple(x.shape), np.dtype(x.dtype)) for x in jax.tree_util.tree_leaves(tree)])


def _refused(cfg, tmp_path):
    """The one line a Trainer of `cfg` refuses with: fast (shapes only) and nothing written."""
    run_dir = tmp_path / "run"
    start = time.process_time()  # CPU seconds, as above: the load does not fail it
    with pytest.raises(ValueError) as err:
        Trainer(cfg, str(run_dir))
    assert time.process_time() - start < 60  # no allocation, no compile of the search
    assert not run_dir.exists()
    text = str(err.value)
    assert "\n" not in text
    return text


def _zero_evaluator(num_actions):
    from turbozero.search.mctx_policies import _zero_evaluator as zero
    return zero(num_actions)


def _recorded(monkeypatch, module, name):
    """Record the shape structs of what `module.name` (a search's tree init) returns while a
    real search is traced: the trees that search allocates, without compiling it."""
    allocated = []
    real = getattr(module, name)

    def recording(*args, **kwargs):
        tree = real(*args, **kwargs)
        allocated.append(jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree))
        return tree
    monkeypatch.setattr(module, name, recording)
    return allocated


@pytest.mark.parametrize("game,policy", [(GAME, "muzero"), (GAME, "gumbel"),
                                         ("backgammon", "muzero")])
def test_mctx_trees_are_counted_as_mctx_allocates_them(game, policy, monkeypatch):
    """Leaf for leaf the tree mctx allocates (`instantiate_tree_from_root`) inside a real
    search of the family, recorded while it is traced: dense [B, N, num_actions] children
    arrays, the states without observations, the Gumbel draws; a stochastic game's
    (backgammon) children over num_actions + num_chance_outcomes and a state and an
    afterstate per node (the tree mctx returns from that one is cut back to num_actions)."""
    import mctx._src.search as mctx_search_module
    from turbozero.search.mctx_policies import MctxConfig, mctx_search

    env = envs.make(game)
    states = _states(env, 2)
    config = MctxConfig(num_simulations=3, algorithm=policy)
    estimate = config.tree_shapes(env, states)
    allocated = _recorded(monkeypatch, mctx_search_module, "instantiate_tree_from_root")
    jax.eval_shape(lambda s, k: mctx_search(env, _zero_evaluator(env.num_actions), None, s, k,
                                            config), states, jax.random.PRNGKey(0))
    assert len(allocated) == 1
    assert _layout(estimate) == _layout(allocated[0])
    chance = env.num_chance_outcomes if env.is_stochastic else 0
    assert estimate.children_visits.shape == (2, 4, env.num_actions + chance)


def test_mctx_trees_are_counted_as_a_real_search_holds_them():
    """The bytes of the tree a real (compiled) mctx search returns equal the estimate."""
    import mctx
    from turbozero.search.mctx_policies import MctxConfig, make_recurrent_fn, make_root

    env = envs.make(GAME)
    states = _states(env, 2)
    config = MctxConfig(num_simulations=3)
    evaluator = _zero_evaluator(env.num_actions)

    @jax.jit
    def run(s):
        return mctx.muzero_policy(
            params=None, rng_key=jax.random.PRNGKey(1), root=make_root(evaluator, None, s),
            num_simulations=3, invalid_actions=~s.legal_action_mask,
            recurrent_fn=make_recurrent_fn(env, evaluator)).search_tree
    real = run(states)
    assert _layout(config.tree_shapes(env, states)) == _layout(real)
    assert search_tree_bytes(config, env, states, False) == tree_bytes(real)


def test_an_mctx_search_larger_than_memory_is_refused(tmp_path, monkeypatch):
    """mctx on chess with 10**7 simulations: 2 trees of 10**7 dense nodes over 4,672 action
    ids (was: not counted; XLA's out-of-memory traceback, naming no setting)."""
    from turbozero.search.mctx_policies import MctxConfig

    monkeypatch.delenv(ENV_VAR, raising=False)
    base = get_preset("chess", "tiny")
    cfg = get_preset("chess", "tiny", num_envs=2, replay_capacity=4, algorithm=dataclasses.replace(
        base.algorithm, search=MctxConfig(num_simulations=10**7)))
    text = _refused(cfg, tmp_path)
    assert text.startswith("the run's state needs about "), text
    assert ("lower num_envs=2 x num_simulations=10000000 nodes x the game's 4672 action ids "
            "(mctx's nodes are dense), or set TURBOZERO_MEMORY_LIMIT") in text, text


def _graph_case():
    from goofspiel import Goofspiel
    from turbozero.search.mcgs import MCGSConfig

    env = Goofspiel(num_cards=3)
    return env, _states(env, 2), MCGSConfig(num_simulations=4)


def test_graph_search_tables_are_counted_as_the_search_holds_them():
    """Leaf for leaf the node tables of a graph search (`mcgs_search`'s graph, its loop
    carry, traced) on Goofspiel of 3 cards: [capacity, A, A] edge arrays per game."""
    from turbozero.search.mcgs import mcgs_search, uniform_eval_fn

    env, states, config = _graph_case()
    estimate = config.tree_shapes(env, states)
    _, graph = jax.eval_shape(lambda s: mcgs_search(uniform_eval_fn, None, env, s,
                                                    jax.random.PRNGKey(0), config), states)
    assert _layout(estimate) == _layout(graph)
    assert estimate.visits.shape == (2, 5, 3, 3)


@pytest.mark.slow
def test_graph_search_tables_are_counted_as_a_real_search_holds_them():
    """The bytes of the graph a real (compiled) search returns equal the estimate."""
    from turbozero.search.mcgs import mcgs_search, uniform_eval_fn

    env, states, config = _graph_case()
    _, real = jax.jit(lambda s: mcgs_search(uniform_eval_fn, None, env, s,
                                            jax.random.PRNGKey(0), config))(states)
    assert search_tree_bytes(config, env, states, False) == tree_bytes(real)


def test_a_graph_search_larger_than_memory_is_refused(tmp_path, monkeypatch):
    from turbozero.search.mcgs import MCGSConfig

    monkeypatch.delenv(ENV_VAR, raising=False)
    base = get_preset("pyrat", "tiny")
    cfg = get_preset("pyrat", "tiny", num_envs=4, algorithm=dataclasses.replace(
        base.algorithm, search=MCGSConfig(num_simulations=10**7)))
    text = _refused(cfg, tmp_path)
    assert "lower num_envs=4 x num_simulations=10000000 nodes, or set" in text, text


_GOMOKU_NET = {"channels": 4, "representation_blocks": 1, "dynamics_blocks": 1,
               "prediction_blocks": 1, "projection_dim": 8}


def test_learned_model_trees_are_counted_as_the_search_allocates_them(monkeypatch):
    """Leaf for leaf the tree a search of MuZero's model allocates (the kernel's `init_tree`
    on the `LearnedModel`, recorded while a real `search` of the `learned` family is traced
    on gomoku's network, its variables shapes only): the representation's hidden states
    as embeddings."""
    import turbozero.search.kernel as kernel
    from turbozero.games import game_spec
    from turbozero.networks.value_formats import MoverRelativeValues
    from turbozero.search.api import NetworkEvaluator, search
    from turbozero.search.learned import LearnedModelSearch

    cfg = get_preset("gomoku", "tiny", network=_GOMOKU_NET)
    env = envs.make(cfg.game, **dict(cfg.env_config))
    network = cfg.algorithm.build_network(game_spec(cfg.game), env, dict(cfg.network))
    states = _states(env, 2)
    states = states.replace(observation=jax.vmap(env.observe)(states))
    variables = jax.eval_shape(network.init, jax.random.PRNGKey(0), states.observation[:1])
    apply_fn = functools.partial(network.apply, train=False)
    config = cfg.algorithm.search  # a MuZeroConfig
    estimate = config.tree_shapes(env, states, network=(apply_fn, variables))
    allocated = _recorded(monkeypatch, kernel, "init_tree")
    evaluator = NetworkEvaluator(apply_fn, MoverRelativeValues(env.num_players))
    jax.eval_shape(lambda v, s: search(env, evaluator, v, s, jax.random.PRNGKey(0),
                                       LearnedModelSearch(config.search)), variables, states)
    assert len(allocated) == 1
    assert _layout(estimate) == _layout(allocated[0])
    assert estimate.embedding.hidden.shape[:2] == (2, config.search.num_nodes)
    with pytest.raises(ValueError, match="give tree_shapes the network"):
        config.tree_shapes(env, states)


@pytest.mark.slow
def test_learned_model_trees_are_counted_as_a_real_search_holds_them():
    """The bytes of the tree a real (compiled) search of a Trainer's MuZero network returns
    equal the estimate."""
    from turbozero.networks.value_formats import MoverRelativeValues
    from turbozero.search.kernel import tree_search
    from turbozero.search.learned import LearnedModel

    trainer = Trainer(get_preset("gomoku", "tiny", num_envs=2, replay_capacity=16, seed=4504,
                                 network=_GOMOKU_NET))
    env, apply_fn = trainer.env, trainer.algorithm.apply_fn
    variables = trainer.variables(trainer.state.train_state)
    states = trainer.state.collector.env_state
    if states.observation is None:
        states = states.replace(observation=jax.vmap(env.observe)(states))
    config = trainer.config.algorithm.search
    model = LearnedModel(apply_fn, env.num_actions, MoverRelativeValues(env.num_players))
    _, real = jax.jit(lambda v, s: tree_search(model, v, s, jax.random.PRNGKey(0),
                                               config.search))(variables, states)
    assert search_tree_bytes(config, env, states, False,
                             network=(apply_fn, variables)) == tree_bytes(real)


def test_a_learned_model_search_larger_than_memory_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    base = get_preset("gomoku", "tiny")
    muzero = base.algorithm.search
    cfg = get_preset("gomoku", "tiny", num_envs=4, algorithm=dataclasses.replace(
        base.algorithm, search=dataclasses.replace(muzero, search=dataclasses.replace(
            muzero.search, num_simulations=10**7))))
    text = _refused(cfg, tmp_path)
    assert "lower num_envs=4 x num_simulations=10000000 nodes, or set" in text, text


def _virtual_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="Linux's /proc")
def test_cpp_node_pools_are_counted_as_a_real_tree_allocates_them():
    """The C++ tree's pools, measured: the address space a real SearchTree takes once it has
    searched and advanced (each of its two pools one block of 2**20 nodes of 64 bytes, 64 MiB,
    taken from the system on demand) against `node_pool_bytes` for the same settings; and
    the nodes in use stay within the estimate's count (root + slots x children)."""
    pytest.importorskip("turbozero._search_cpp")
    from turbozero.search.cpu.selfplay import node_pool_bytes
    from turbozero.search.cpu.tree import NEW_GAME, NO_ACTION, CPUSearchConfig, SearchTree

    def evaluate(parent, action, dest):  # 4 legal actions everywhere, value 0
        b = len(parent)
        acts = np.tile(np.array([0, 1, 2, 3], np.int32), (b, 1))
        return (acts, np.full((b, 4), 0.25, np.float32), np.zeros(b, np.float32),
                (parent != NEW_GAME).astype(np.int32), np.zeros(b, bool))

    block, slots = 2**20, 64
    before = _virtual_bytes()
    tree = SearchTree(CPUSearchConfig(dirichlet_fraction=0.0), nodes_per_block=block,
                      max_blocks=4, num_slots=slots)
    tree.start(evaluate)
    tree.simulate(evaluate, 40)
    assert tree.nodes_used <= 1 + slots * 4
    tree.advance(int(np.argmax(tree.root().visits)))
    real = _virtual_bytes() - before
    estimate = node_pool_bytes(1, block, 4, slots, 4)
    assert estimate == 2 * block * 64  # two pools of one block
    assert 0.9 * estimate <= real <= 1.1 * estimate, (real, estimate)
    assert NO_ACTION == -1 and tree.nodes_used > 1


def test_a_cpp_search_larger_than_memory_is_refused(tmp_path, monkeypatch):
    """The C++ path's node pools (host memory; on a CPU device the same memory as the rest)
    with blocks of 2**30 nodes: 64 GiB a block, two pools a game (was: a std::bad_alloc from
    a worker thread, or the machine's memory taken)."""
    pytest.importorskip("turbozero._search_cpp")
    monkeypatch.delenv(ENV_VAR, raising=False)
    base = get_preset(GAME, "cpu")
    cfg = get_preset(GAME, "cpu", algorithm=dataclasses.replace(
        base.algorithm, search=dataclasses.replace(base.algorithm.search,
                                                   nodes_per_block=2**30)))
    text = _refused(cfg, tmp_path)
    assert "search trees 2048.0 GiB" in text, text
    assert ("lower num_games=16 x (slots_per_game=72 or nodes_per_block=1073741824 x "
            "max_blocks=64), or set TURBOZERO_MEMORY_LIMIT") in text, text


def test_cpp_node_pools_on_an_accelerator_are_checked_against_host_memory(tmp_path,
                                                                         monkeypatch):
    """With the loop state on an accelerator, the C++ node pools (host memory) are checked
    on their own against the host's memory, in their own line."""
    pytest.importorskip("turbozero._search_cpp")
    from turbozero import memory

    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setattr(memory, "on_host", lambda device: False)
    base = get_preset(GAME, "cpu")
    cfg = get_preset(GAME, "cpu", algorithm=dataclasses.replace(
        base.algorithm, search=dataclasses.replace(base.algorithm.search,
                                                   nodes_per_block=2**30)))
    text = _refused(cfg, tmp_path)
    assert text.startswith("the search's trees in host memory (the C++ node pools) need about "
                           "2048.0 GiB, more than the "), text
    assert "lower num_games=16 x (slots_per_game=72 or nodes_per_block=1073741824" in text


# ------------------------------------------- afterstate TD and its complete-move players
# TD's replay (`TDReplay`) is part of the loop state, counted from the state's build; its
# self-play player's listings (`TDConfig.tree_shapes`) and its evaluation player's
# (`AfterstatePlayerConfig.tree_shapes`) are counted beside it

def _td(**overrides):
    return get_preset("backgammon", "tiny", **overrides)


def test_a_td_replay_larger_than_memory_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    text = _refused(_td(num_envs=2**16, replay_capacity=2**14), tmp_path)
    assert text.startswith("the run's state needs about 865.0 GiB (replay 847.0 GiB; "), text
    assert "lower num_envs=65536 x replay_capacity=16384 positions, or set" in text, text


def test_a_td_players_listing_larger_than_memory_is_refused(tmp_path, monkeypatch):
    """2**24 complete moves listed for each of 64 games (was: not counted; XLA's out-of-memory
    traceback naming no setting)."""
    from turbozero.search.afterstate import AfterstatePlayerConfig

    monkeypatch.delenv(ENV_VAR, raising=False)
    alg = _td().algorithm
    cfg = _td(algorithm=dataclasses.replace(alg, search=dataclasses.replace(
        alg.search, player=AfterstatePlayerConfig(max_afterstates=2**24))))
    text = _refused(cfg, tmp_path)
    assert "search trees 1148.0 GiB" in text, text
    assert "lower num_envs=64 x max_afterstates=16777216 complete moves, or set" in text, text


def test_a_td_evaluation_players_look_ahead_larger_than_memory_is_refused(tmp_path,
                                                                         monkeypatch):
    from turbozero.search.afterstate import AfterstatePlayerConfig

    monkeypatch.delenv(ENV_VAR, raising=False)
    alg = _td().algorithm
    cfg = _td(eval_games=2**14, algorithm=dataclasses.replace(
        alg, eval_search=AfterstatePlayerConfig(plies=2, max_afterstates=2**16)))
    text = _refused(cfg, tmp_path)
    assert text.startswith("an evaluation of eval_games=16384 games needs about "), text
    assert ("(search trees of eval_games=16384 x max_afterstates=65536 complete moves, at "
            "each of plies=2 look-ahead levels for candidates=8 a position, 1/8 of them a "
            "trip: ") in text, text


def test_td_counts_its_players_listings_and_its_expected_targets_replies(monkeypatch):
    """Leaf for leaf the listings one self-play turn of afterstate TD makes (recorded from
    `afterstate._afterstates` while `AfterstateTD._choose` is traced on the game's own
    listing): with `ExpectedTargets` the player's, then the 0-ply reply's after one chance
    outcome of every game (the outcomes go one after another)."""
    import turbozero.search.afterstate as afterstate
    from fixed_networks import small_game_network
    from turbozero.search.afterstate import AfterstatePlayerConfig
    from turbozero.training.td import AfterstateTD, ExpectedTargets, SampledTargets, TDConfig

    env = envs.make("backgammon")
    evaluator, variables = small_game_network(env)
    config = TDConfig(player=AfterstatePlayerConfig(max_afterstates=32),
                      target=ExpectedTargets())
    algorithm = AfterstateTD(env, evaluator.apply_fn, evaluator.value_format, config)
    states = _states(env, 3)
    allocated = _recorded(monkeypatch, afterstate, "_afterstates")
    jax.eval_shape(lambda v, s: algorithm._choose(v, s, jax.random.PRNGKey(0)),
                   variables, states)
    (chosen,), (reply,) = config.tree_shapes(env, states)
    assert len(allocated) == 2
    assert _layout(chosen["listed"]) == _layout(allocated[0])
    assert _layout(reply["listed"]) == _layout(allocated[1])
    assert chosen["listed"].valid.shape == (3, 32)
    # sampled targets: the player's listing alone
    (alone,) = dataclasses.replace(config, target=SampledTargets()).tree_shapes(env, states)
    assert _layout(alone) == _layout(chosen)
