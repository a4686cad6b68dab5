"""The training loop on a small game: learning, checkpoints, resume, run-directory safety, CLI."""

import dataclasses
import json
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from turbozero.presets import get_preset
from turbozero.training import Trainer, read_metrics


def _with(config, **changes):
    """`config` with fields of its algorithm replaced (search, eval_search, acting)."""
    return dataclasses.replace(config, algorithm=dataclasses.replace(config.algorithm, **changes))

GAME = "pgx/tic_tac_toe"


def _config(**kw):
    base = dict(num_iterations=4, eval_every=2, eval_games=8, checkpoint_every=2,
                collect_steps=9, train_steps=4, num_envs=8)
    base.update(kw)
    return get_preset(GAME, "tiny", **base)


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run_dir = str(tmp_path_factory.mktemp("runs") / "ttt")
    trainer = Trainer(_config(), run_dir)
    trainer.run(progress=False)
    return trainer, run_dir


def test_run_writes_metrics_and_checkpoints(finished_run):
    trainer, run_dir = finished_run
    records = read_metrics(os.path.join(run_dir, "metrics.jsonl"))
    assert [r["iteration"] for r in records] == [1, 2, 3, 4]
    assert all(np.isfinite(r["loss"]) for r in records)
    assert "eval_random_win_rate" in records[1]
    assert trainer.run_dir.latest_step() == 4


def test_checkpoint_round_trip(finished_run):
    trainer, run_dir = finished_run
    restored = Trainer(_config(), run_dir, resume=True)
    assert int(restored.state.iteration) == 4
    for a, b in zip(_leaves(trainer.state), _leaves(restored.state)):
        np.testing.assert_array_equal(a, b)


def test_resume_gives_the_same_next_step(tmp_path):
    cfg = _config(num_iterations=3, eval_every=0, eval_opponents=(), checkpoint_every=1)
    straight = Trainer(cfg, str(tmp_path / "a"))
    straight.run(progress=False)
    interrupted = Trainer(cfg, str(tmp_path / "b"))
    interrupted.run(num_iterations=2, progress=False)  # "interrupted" after 2 iterations
    resumed = Trainer(cfg, str(tmp_path / "b"), resume=True)
    assert int(resumed.state.iteration) == 2
    resumed.run(progress=False)
    assert int(resumed.state.iteration) == 3
    for a, b in zip(_leaves(straight.state), _leaves(resumed.state)):
        np.testing.assert_array_equal(a, b)


def test_donated_loop_state_trains_alike(tmp_path, finished_run):
    """donate_loop_state=True: the same run bit for bit (checkpoints and evaluations included),
    and a state kept from before a step is freed by it (XLA reused its buffers)."""
    trainer, _ = finished_run
    donated = Trainer(_config(donate_loop_state=True), str(tmp_path / "donated"))
    kept = donated.state.buffer.returns
    donated.run(progress=False)
    assert kept.is_deleted()
    for a, b in zip(_leaves(trainer.state), _leaves(donated.state)):
        np.testing.assert_array_equal(a, b)
    assert donated.run_dir.latest_step() == 4
    with pytest.raises(ValueError, match="donate_loop_state"):
        _config(donate_loop_state="yes")


def test_run_directory_safety(tmp_path, finished_run):
    _, run_dir = finished_run
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("not ours")
    with pytest.raises(ValueError, match="not created by turbozero"):
        Trainer(_config(), str(foreign))
    assert (foreign / "precious.txt").read_text() == "not ours"
    with pytest.raises(ValueError, match="already holds a run of .*: continue it with --resume"):
        Trainer(_config(), run_dir)
    with pytest.raises(ValueError, match="parameter shapes|network"):
        Trainer(_config(network={"hidden_sizes": (16, 16)}), run_dir, resume=True)


def test_config_validation():
    with pytest.raises(ValueError, match="num_envs"):
        _config(num_envs=0)
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset(GAME, "huge")
    with pytest.raises(ValueError, match="unknown config fields"):
        get_preset(GAME, "tiny", bogus=1)
    with pytest.raises(ValueError, match="opponent"):
        _config(eval_opponents=("stockfish",))


def test_presets_derive_a_deterministic_evaluation_search():
    from turbozero.search.mcgs import MCGSConfig
    from turbozero.search.mctx_policies import MctxConfig

    from turbozero.training.algorithms import evaluation_search

    cfg = _with(get_preset(GAME, "tiny"), search=MctxConfig(num_simulations=5))
    assert cfg.algorithm.eval_search is None
    assert evaluation_search(cfg.algorithm.search) == MctxConfig(num_simulations=5, dirichlet_fraction=0.0)
    cfg = _with(get_preset("pyrat", "tiny"), search=MCGSConfig(num_simulations=6, c_puct=0.5))
    assert evaluation_search(cfg.algorithm.search) == MCGSConfig(num_simulations=6, c_puct=0.5)
    given = MCGSConfig(num_simulations=7)
    assert _with(get_preset("pyrat", "tiny"), eval_search=given).algorithm.eval_search == given


SHARDED_SCRIPT = r"""
import os, sys, json
import jax, numpy as np
sys.path.insert(0, os.getcwd())
from turbozero.presets import get_preset
from turbozero.training import Trainer
cfg = get_preset("pgx/tic_tac_toe", "tiny", num_iterations=2, eval_every=2, eval_games=8,
                 num_envs=8, collect_steps=9, train_steps=2, batch_size=16, checkpoint_every=0)
t = Trainer(cfg)
# evaluation is split over the devices like self-play: the match's games on every device, and
# with the same network the same games (the untrained one: equal on 1 and 4 devices)
first = t.variables(t.state.train_state)
before = t.evaluate("random", key=jax.random.PRNGKey(7), variables=first)
carry = t._match_start(jax.random.PRNGKey(7))
carry, _ = t._evals["random"](first, carry, np.int32(cfg.max_eval_steps))
t.run(progress=False)
leaf = t.state.collector.env_state.observation
print(json.dumps({
    "devices": len(jax.devices()),
    "obs_shards": len(leaf.sharding.device_set),
    # games per device (8 games: 2 on each of 4 devices; all 8 where they were replicated)
    "eval_games_per_device": [x.sharding.shard_shape(x.shape)[0]
                              for x in (carry.returns, carry.states.observation)],
    "eval_before": before,
    "return_finite": bool(np.isfinite(float(t.evaluate("random")["mean_return"]))),
    "param_checksum": float(sum(np.asarray(x).sum() for x in jax.tree_util.tree_leaves(t.state.train_state.params))),
}))
"""


def _subprocess_env(**extra):
    """The test process's environment plus its persistent compilation cache."""
    return dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir,
                JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.5", **extra)


def _run_in_process():
    ns = {}
    exec(SHARDED_SCRIPT.replace("print(json.dumps(", "result = (("), ns)
    return ns["result"]


def _run_sharded(devices):
    env = _subprocess_env(XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
                          JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, "-c", SHARDED_SCRIPT], env=env, capture_output=True,
                         text=True, timeout=600, cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_same_code_on_one_and_four_devices():
    one = _run_in_process()
    four = _run_sharded(4)
    assert one["devices"] == 1 and four["devices"] == 4
    assert four["obs_shards"] == 4
    assert four["eval_games_per_device"] == [2, 2] and one["eval_games_per_device"] == [8, 8]
    assert four["eval_before"] == one["eval_before"] and one["eval_before"]["finished"] == 8
    assert one["return_finite"] and four["return_finite"]
    # same seeds, same program: the trained parameters agree up to float reduction order
    assert four["param_checksum"] == pytest.approx(one["param_checksum"], rel=1e-3)


def test_cli_train_and_eval(tmp_path):
    run_dir = str(tmp_path / "cli")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cmd = [sys.executable, "-m", "turbozero.cli", "train", GAME, "--preset", "tiny",
           "--iterations", "2", "--run-dir", run_dir, "--no-progress", "--set", "eval_every=2",
           "--set", "checkpoint_every=1"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=root,
                         env=_subprocess_env())
    assert out.returncode == 0, out.stderr[-3000:]
    assert "loss:" in out.stdout and "random: won " in out.stdout and " finished (" in out.stdout
    ev = subprocess.run([sys.executable, "-m", "turbozero.cli", "eval", run_dir, "--games", "4",
                         "--json"],
                        capture_output=True, text=True, timeout=600, cwd=root, env=_subprocess_env())
    assert ev.returncode == 0, ev.stderr[-3000:]
    result = json.loads(ev.stdout.strip().splitlines()[-1])
    assert result["iteration"] == 2 and 0.0 <= result["win_rate"] <= 1.0
    assert result["wins"] + result["draws"] + result["losses"] == result["finished"] == 4
    # --set changes this evaluation only: two moves end no game of tic-tac-toe; evaluation
    # reads only the network, so another replay layout (here: capacity) still restores
    short = subprocess.run([sys.executable, "-m", "turbozero.cli", "eval", run_dir, "--games", "4",
                            "--json", "--set", "max_eval_steps=2", "--set", "replay_capacity=5"],
                           capture_output=True, text=True, timeout=600, cwd=root,
                           env=_subprocess_env())
    assert short.returncode == 0, short.stderr[-3000:]
    result = json.loads(short.stdout.strip().splitlines()[-1])
    assert result["finished"] == 0 and result["unfinished"] == 4 and result["iteration"] == 2
    # an evaluation search of another class, tagged as the run's config.json stores it
    from turbozero.search.one_ply import OnePlyConfig
    from turbozero.runs import evaluation_config

    one_ply = evaluation_config(run_dir, 4, [
        'eval_search={"__dataclass__": "turbozero.search.one_ply:OnePlyConfig"}'])
    assert one_ply.algorithm.eval_search == OnePlyConfig() and one_ply.eval_games == 4
    bad = subprocess.run([sys.executable, "-m", "turbozero.cli", "train", "go"],
                         capture_output=True, text=True, timeout=600, cwd=root, env=_subprocess_env())
    assert bad.returncode == 2 and "error" in bad.stderr
