"""Sizes bounded by memory before anything is built (issue 45 item 2): a loop state or an
evaluation larger than the device's memory is one ValueError line naming the settings, in about
a second and with nothing written (was: minutes of nothing, or an XLA out-of-memory traceback
naming no setting)."""

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
from turbozero.training.memory import ENV_VAR, parse_limit, search_tree_bytes, tree_bytes

GAME = "pgx/tic_tac_toe"


def test_a_replay_larger_than_memory_is_refused_before_anything_is_built(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    run_dir = tmp_path / "run"
    start = time.perf_counter()
    with pytest.raises(ValueError) as err:  # 484 GiB of replay
        Trainer(get_preset(GAME, "tiny", num_envs=2**20, replay_capacity=2**12), str(run_dir))
    text = str(err.value)
    assert "\n" not in text
    # the replay dominates; the self-play search's trees are counted beside it
    assert text.startswith("the run's state needs about 425.2 GiB (replay 420.0 GiB; ")
    assert "search trees 5.1 GiB" in text
    assert "lower num_envs=1048576 x replay_capacity=4096 positions" in text
    assert time.perf_counter() - start < 60  # shapes only: no allocation, no compile
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
