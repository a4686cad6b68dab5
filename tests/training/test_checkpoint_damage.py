"""Checkpoints survive damage: each kind of file orbax writes, damaged in the newest step, is
named in one warning line and the previous step is restored; no intact step is a clear error;
a run SIGKILLed in the middle of a save resumes; resuming truncates metrics.jsonl."""

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import warnings

import jax
import numpy as np
import pytest

from turbozero.presets import get_preset
from turbozero.training import Trainer, read_metrics
from turbozero.training.checkpoints import (
    DAMAGED,
    MARKER,
    DamagedCheckpointWarning,
    RunDirectory,
    load_checkpoint,
)

# the failed reads of a damaged step must report nowhere: no unraisable exception and no
# "never awaited" warning may reach the caller after the restore (orbax's read coroutines did,
# collected late)
pytestmark = [pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
              pytest.mark.filterwarnings("error:coroutine .* was never awaited:RuntimeWarning")]

GAME = "pgx/tic_tac_toe"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _config(**kw):
    base = dict(num_iterations=2, eval_every=0, eval_opponents=(), checkpoint_every=1,
                collect_steps=9, train_steps=2, num_envs=4, batch_size=16)
    base.update(kw)
    return get_preset(GAME, "tiny", **base)


def _leaves(tree):
    return [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]


def _assert_same(a, b):
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.fixture(scope="module")
def base_run(tmp_path_factory):
    """A finished 2-iteration run with checkpoints 1 and 2, the state after iteration 1, the
    final state, and a trainer whose state is a template to restore into."""
    run_dir = str(tmp_path_factory.mktemp("base") / "run")
    trainer = Trainer(_config(), run_dir)
    trainer.run(num_iterations=1, progress=False)
    after_one = jax.tree_util.tree_map(np.asarray, trainer.state)
    trainer.run(progress=False)
    trainer.run_dir.close()
    return run_dir, after_one, trainer


def test_run_directory_stores_its_full_config(base_run):
    from turbozero.runs import load_run_config
    from turbozero.training.run_config import config_from_json

    with open(os.path.join(base_run[0], MARKER), encoding="utf-8") as f:
        assert config_from_json(json.load(f)["config"]) == _config()
    assert load_run_config(base_run[0]) == _config()


def _copy(base_run, tmp_path) -> str:
    dest = str(tmp_path / "run")
    shutil.copytree(base_run[0], dest)
    return dest


def _largest(pattern: str) -> str:
    return max(glob.glob(pattern), key=os.path.getsize)


# every kind of file a step holds, as orbax 0.12 writes it (checkpoints/<step>/default/...)
DAMAGE = {
    "truncated data file": ("ocdbt.process_0/d/*", 0.5),
    "empty data file": ("ocdbt.process_0/d/*", 0.0),
    "truncated zarr metadata file": ("d/*", 0.5),
    "empty _METADATA": ("_METADATA", 0.0),
    "truncated _METADATA": ("_METADATA", 0.5),
    "truncated manifest": ("manifest.ocdbt", 0.5),
    "empty manifest": ("manifest.ocdbt", 0.0),
    "truncated array metadata": ("array_metadatas/process_0", 0.5),
}


def _damage(run_dir: str, step: int, kind: str) -> str:
    pattern, keep = DAMAGE[kind]
    path = _largest(os.path.join(run_dir, "checkpoints", str(step), "default", pattern))
    with open(path, "r+b") as f:
        f.truncate(int(os.path.getsize(path) * keep))
    return path


def _reopen(run_dir: str, like) -> RunDirectory:
    with open(os.path.join(run_dir, MARKER), encoding="utf-8") as f:
        marker = json.load(f)
    identity = {k: marker[k] for k in ("game", "network", "config")}
    return RunDirectory(run_dir, identity, like.train_state.params, resume=True, state=like)


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_damaged_newest_step_is_named_and_the_previous_one_restored(base_run, tmp_path, kind,
                                                                    capfd):
    run_dir = _copy(base_run, tmp_path)
    _damage(run_dir, 2, kind)
    like = base_run[2].state
    run = _reopen(run_dir, like)
    with pytest.warns(DamagedCheckpointWarning) as caught:
        state, step = run.resume(like)
    run.close()
    assert step == 1
    _assert_same(state, base_run[1])
    # orbax may also emit a RuntimeWarning (an un-awaited coroutine) while failing: count ours
    (message,) = [str(w.message) for w in caught if issubclass(w.category, DamagedCheckpointWarning)]
    assert "\n" not in message
    assert message.startswith(f"checkpoint {os.path.join(run_dir, 'checkpoints', '2')} is damaged (")
    # set aside, so that the resumed run can write step 2 again
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == ["1"]
    assert os.listdir(os.path.join(run_dir, DAMAGED)) == ["2"]
    # no pages of TensorStore / asyncio tracebacks on the console
    assert "Traceback" not in capfd.readouterr().err


def test_no_intact_checkpoint_is_a_one_line_error(base_run, tmp_path):
    run_dir = _copy(base_run, tmp_path)
    _damage(run_dir, 2, "empty _METADATA")
    # the data file emptied, not cut in half: one CI run (1 of 2) restored step 1 with its
    # largest data file cut at 50% (which arrays orbax puts in which data file, and in what
    # order, varies from run to run), so the step was not damaged as this test needs
    _damage(run_dir, 1, "empty data file")
    like = base_run[2].state
    run = _reopen(run_dir, like)
    with pytest.raises(ValueError) as err:
        run.resume(like)
    run.close()
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"no intact checkpoint in {os.path.join(run_dir, 'checkpoints')}: "
                              "step 2: JSONDecodeError")
    assert "step 1: " in message
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == ["1", "2"]  # left alone


def test_evaluation_reads_a_damaged_run_without_changing_it(base_run, tmp_path):
    run_dir = _copy(base_run, tmp_path)
    _damage(run_dir, 2, "truncated manifest")
    with pytest.warns(DamagedCheckpointWarning, match="checkpoints/2 is damaged"):
        state, step = load_checkpoint(run_dir, base_run[2].state)
    assert step == 1
    _assert_same(state, base_run[1])
    assert sorted(os.listdir(os.path.join(run_dir, "checkpoints"))) == ["1", "2"]


def test_resume_truncates_metrics_and_continues_from_the_intact_step(base_run, tmp_path):
    run_dir = _copy(base_run, tmp_path)
    _damage(run_dir, 2, "truncated data file")
    with open(os.path.join(run_dir, "metrics.jsonl"), "a", encoding="utf-8") as f:
        f.write('{"iteration": 3, "lo')  # a line a killed run was writing
    with pytest.warns(DamagedCheckpointWarning):
        trainer = Trainer(_config(), run_dir, resume=True)
    assert int(trainer.state.iteration) == 1
    metrics = os.path.join(run_dir, "metrics.jsonl")
    assert [r["iteration"] for r in read_metrics(metrics)] == [1]
    trainer.run(progress=False)
    trainer.run_dir.close()
    assert [r["iteration"] for r in read_metrics(metrics)] == [1, 2]
    _assert_same(trainer.state, base_run[2].state)  # iteration 2 again, bit for bit


def test_resume_needs_an_existing_run_of_the_same_shapes(base_run, tmp_path):
    missing = str(tmp_path / "missing")
    with pytest.raises(ValueError, match="cannot resume .*missing: no run there"):
        Trainer(_config(), missing, resume=True)
    assert not os.path.exists(missing)
    run_dir = _copy(base_run, tmp_path)
    with pytest.raises(ValueError, match="loop state of other shapes .* num_envs"):
        Trainer(_config(num_envs=8, batch_size=16), run_dir, resume=True)


# A run killed between writing a step's files and orbax's final rename: the step's files
# are all on disk under a temporary name (the slowest moment to be killed).
KILLED_SCRIPT = r"""
import sys, time
import orbax.checkpoint._src.path.atomicity as atomicity
from turbozero.presets import get_preset
from turbozero.training import Trainer

finalize = atomicity.AtomicRenameTemporaryPath.finalize

async def stalled_finalize(self):
    if self.get_final().name == "2":
        print("saving step 2", flush=True)
        time.sleep(600)  # SIGKILLed here
    return await finalize(self)

atomicity.AtomicRenameTemporaryPath.finalize = stalled_finalize
cfg = get_preset("pgx/tic_tac_toe", "tiny", **CONFIG)
Trainer(cfg, sys.argv[1]).run(progress=False)
"""


def test_run_killed_mid_save_resumes(base_run, tmp_path):
    run_dir = str(tmp_path / "killed")
    script = KILLED_SCRIPT.replace("**CONFIG", "**" + repr(dict(
        num_iterations=2, eval_every=0, eval_opponents=(), checkpoint_every=1, collect_steps=9,
        train_steps=2, num_envs=4, batch_size=16)))
    env = dict(os.environ, JAX_COMPILATION_CACHE_DIR=jax.config.jax_compilation_cache_dir,
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS="0.5", JAX_PLATFORMS="cpu")
    child = subprocess.Popen([sys.executable, "-c", script, run_dir], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:
        line = child.stdout.readline()
        assert line.strip() == "saving step 2", child.stderr.read()[-3000:]
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait(timeout=60)
    leftovers = os.listdir(os.path.join(run_dir, "checkpoints"))
    assert "1" in leftovers and "2" not in leftovers
    assert any(n.startswith("2.orbax-checkpoint-tmp") for n in leftovers), leftovers
    metrics = os.path.join(run_dir, "metrics.jsonl")
    assert [r["iteration"] for r in read_metrics(metrics)] == [1, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedCheckpointWarning)  # nothing damaged
        trainer = Trainer(_config(), run_dir, resume=True)
    assert int(trainer.state.iteration) == 1
    assert [r["iteration"] for r in read_metrics(metrics)] == [1]  # no repeated iteration 2
    assert os.listdir(os.path.join(run_dir, "checkpoints")) == ["1"]  # the temporary is gone
    trainer.run(progress=False)
    trainer.run_dir.close()
    assert [r["iteration"] for r in read_metrics(metrics)] == [1, 2]
    _assert_same(trainer.state, base_run[2].state)


def test_a_run_without_checkpoints_starts_afresh_only_when_overwritten(base_run, tmp_path):
    run_dir = _copy(base_run, tmp_path)  # as if killed before its first checkpoint
    shutil.rmtree(os.path.join(run_dir, "checkpoints"))
    like = base_run[2].state
    with open(os.path.join(run_dir, MARKER), encoding="utf-8") as f:
        marker = json.load(f)
    identity = {k: marker[k] for k in ("game", "network", "config")}
    metrics = os.path.join(run_dir, "metrics.jsonl")
    with pytest.raises(ValueError, match="already holds a run .*--overwrite"):
        RunDirectory(run_dir, identity, like.train_state.params, resume=False, state=like)
    assert [r["iteration"] for r in read_metrics(metrics)] == [1, 2]  # left as it was
    with pytest.raises(ValueError, match="cannot resume .*no checkpoints/ directory"):
        RunDirectory(run_dir, identity, like.train_state.params, resume=True, state=like)
    RunDirectory(run_dir, identity, like.train_state.params, resume=False, overwrite=True,
                 state=like).close()
    assert not os.path.exists(metrics)  # the new run writes its own
