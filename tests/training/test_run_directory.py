"""A run directory is never overwritten and every damaged file is named: `--resume` with no
checkpoint refuses, a new run into a run directory refuses without `--overwrite`, bad settings
fail before anything is written, evaluation and resuming judge damaged checkpoints (a missing
`_METADATA`, non-finite parameters) by one rule, metrics readers skip a cut last line with a
warning, and a run directory stored by an earlier version (tests/data/ttt_run) still evaluates
and resumes."""

import json
import os
import shutil
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from turbozero import cli
from turbozero.training import Trainer, read_metrics
from turbozero.training.checkpoints import (
    DAMAGED,
    MARKER,
    DamagedCheckpointWarning,
    load_checkpoint,
    restore_network,
)
from turbozero.training.metrics import CutMetricsLineWarning, plot_metrics
from turbozero.runs import load_run_config

GAME = "pgx/tic_tac_toe"
FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "ttt_run")


def _err_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one line, no traceback
    return err[0]


def _bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture
def stored_run(tmp_path) -> str:
    """A copy of the stored run (2 iterations, checkpoints 1 and 2, made by the CLI)."""
    dest = str(tmp_path / "run")
    shutil.copytree(FIXTURE, dest)
    return dest


def _iterations(run_dir: str) -> list[int]:
    return [r["iteration"] for r in read_metrics(os.path.join(run_dir, "metrics.jsonl"))]


# ------------------------------------------------------------------ the stored fixture
def test_stored_run_is_small_and_names_its_writer():
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(FIXTURE) for f in fs)
    assert size < 1_000_000
    with open(os.path.join(FIXTURE, "written_by.json"), encoding="utf-8") as f:
        assert "orbax-checkpoint" in json.load(f)


def test_stored_run_evaluates(stored_run, capsys):
    """A checkpoint written by the orbax of tests/data/ttt_run/written_by.json is read by the
    installed one (CI's install may pick any version of the pinned range)."""
    assert cli.main(["eval", stored_run, "--games", "4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["iteration"] == 2 and out["opponent"] == "random" and out["games"] == 4


def test_stored_run_resumes(stored_run, capsys):
    before = _bytes(os.path.join(stored_run, "checkpoints", "2", "default", "_METADATA"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DamagedCheckpointWarning)  # nothing damaged
        assert cli.main(["train", GAME, "--resume", "--run-dir", stored_run, "--iterations", "3",
                         "--no-progress"]) == 0
    assert _iterations(stored_run) == [1, 2, 3]
    assert sorted(os.listdir(os.path.join(stored_run, "checkpoints"))) == ["1", "2", "3"]
    assert _bytes(os.path.join(stored_run, "checkpoints", "2", "default", "_METADATA")) == before


# ------------------------------------------------------------------ never overwritten
def test_resume_without_a_checkpoint_refuses_and_changes_nothing(stored_run, capsys):
    """Was: training started again at iteration 1 and rewrote metrics.jsonl and the marker."""
    for name in os.listdir(os.path.join(stored_run, "checkpoints")):
        shutil.rmtree(os.path.join(stored_run, "checkpoints", name))
    kept = {n: _bytes(os.path.join(stored_run, n)) for n in (MARKER, "metrics.jsonl", "cli.json")}
    argv = ["train", GAME, "--resume", "--run-dir", stored_run, "--iterations", "3",
            "--set", "eval_games=8", "--no-progress"]
    assert cli.main(argv) == 2
    line = _err_line(capsys)
    assert line == (f"turbozero: error: cannot resume {stored_run}: checkpoints/ holds no step, "
                    "so there is nothing to continue from; start the run again with "
                    "--overwrite (Python: overwrite=True) or train into another run directory")
    assert {n: _bytes(os.path.join(stored_run, n)) for n in kept} == kept
    # a save that was killed is named; the same refusal from Python
    os.makedirs(os.path.join(stored_run, "checkpoints", "1.orbax-checkpoint-tmp-17"))
    with pytest.raises(ValueError, match=r"holds no step, only 1\.orbax-checkpoint-tmp-17 \(a "
                                         r"save that was killed\)"):
        Trainer(load_run_config(stored_run), stored_run, resume=True)
    assert {n: _bytes(os.path.join(stored_run, n)) for n in kept} == kept


def test_new_run_into_a_run_directory_needs_overwrite(stored_run, capsys):
    """Was: a run directory without checkpoints was silently started afresh (its metrics
    truncated); one with checkpoints was refused without a way past it."""
    argv = ["train", GAME, "--run-dir", stored_run, "--iterations", "1", "--no-progress"]
    assert cli.main(argv) == 2
    assert _err_line(capsys) == (
        f"turbozero: error: {stored_run} already holds a run of {GAME} (checkpoints of "
        "iterations 1, 2; 2 lines of metrics): continue it with --resume (Python: "
        "resume=True), replace it with --overwrite (Python: overwrite=True), or choose another "
        "run directory")
    shutil.rmtree(os.path.join(stored_run, "checkpoints"))  # as if killed before checkpoint 1
    kept = _bytes(os.path.join(stored_run, "metrics.jsonl"))
    with pytest.raises(ValueError, match=r"already holds a run of .* \(no checkpoint; 2 lines of "
                                         r"metrics\): replace it with --overwrite"):
        Trainer(load_run_config(stored_run), stored_run)
    assert _bytes(os.path.join(stored_run, "metrics.jsonl")) == kept
    assert not os.path.exists(os.path.join(stored_run, "checkpoints"))


def test_overwrite_replaces_the_run_and_keeps_other_files(stored_run, capsys):
    notes = os.path.join(stored_run, "notes.txt")
    with open(notes, "w", encoding="utf-8") as f:
        f.write("mine")
    os.makedirs(os.path.join(stored_run, DAMAGED, "7"))
    argv = ["train", GAME, "--run-dir", stored_run, "--iterations", "1", "--overwrite",
            "--set", "eval_opponents=[]", "--no-progress"]
    assert cli.main(argv) == 0
    assert _iterations(stored_run) == [1]
    assert os.listdir(os.path.join(stored_run, "checkpoints")) == ["1"]
    assert not os.path.exists(os.path.join(stored_run, DAMAGED))
    with open(os.path.join(stored_run, "cli.json"), encoding="utf-8") as f:
        assert json.load(f)["iterations"] == 1  # the new run's command
    assert _bytes(notes) == b"mine"


def test_resume_and_overwrite_need_a_run_directory_and_exclude_each_other(stored_run, capsys):
    config = load_run_config(stored_run)
    with pytest.raises(ValueError, match="resume=True needs run_dir"):
        Trainer(config, resume=True)
    with pytest.raises(ValueError, match="overwrite=True needs run_dir"):
        Trainer(config, overwrite=True)
    with pytest.raises(ValueError, match="resume and overwrite exclude each other"):
        Trainer(config, stored_run, resume=True, overwrite=True)
    assert cli.main(["train", GAME, "--run-dir", stored_run, "--resume", "--overwrite"]) == 2
    assert "--resume and --overwrite exclude each other" in _err_line(capsys)
    assert cli.main(["train", GAME, "--overwrite"]) == 2
    assert "--overwrite needs --run-dir" in _err_line(capsys)


@pytest.mark.parametrize("nodes", ["0", "1"])
def test_a_bad_setting_fails_before_the_run_directory_is_made(tmp_path, capsys, nodes):
    """Was: the run directory and its config were written, then the C++ pool refused
    nodes_per_block at the first self-play (and --resume repeated it)."""
    run_dir = str(tmp_path / "cpu")
    argv = ["train", GAME, "--preset", "cpu", "--run-dir", run_dir, "--iterations", "1",
            "--set", f"search.nodes_per_block={nodes}", "--no-progress"]
    assert cli.main(argv) == 2
    assert "nodes_per_block" in _err_line(capsys)
    assert not os.path.exists(run_dir)


def test_a_bad_setting_on_resume_leaves_the_run_as_it_was(stored_run, capsys):
    kept = _bytes(os.path.join(stored_run, MARKER))
    argv = ["train", GAME, "--resume", "--run-dir", stored_run, "--iterations", "3",
            "--set", "env_config.nosuch=1"]
    assert cli.main(argv) == 2
    assert _err_line(capsys) == ("turbozero: error: --set env_config.nosuch: pgx/tic_tac_toe has "
                                 "no option 'nosuch'; its options: none (it takes no options)")
    assert _bytes(os.path.join(stored_run, MARKER)) == kept


# ------------------------------------------------------------- one rule for damage
def _template(run_dir: str):
    return Trainer(load_run_config(run_dir)).state


def test_a_step_without_its_tree_metadata_is_damaged_for_eval_and_resume(stored_run):
    """Was: `turbozero eval` (orbax's partial restore) used such a step silently while
    resuming called it damaged."""
    os.remove(os.path.join(stored_run, "checkpoints", "2", "default", "_METADATA"))
    like = _template(stored_run)
    with pytest.warns(DamagedCheckpointWarning,
                      match=r"checkpoints/2 is damaged \(default/_METADATA is missing\); "
                            r"using step 1"):
        state, step = load_checkpoint(stored_run, like, restore_network)
    assert step == 1 and int(state.iteration) == 1
    with pytest.warns(DamagedCheckpointWarning, match="default/_METADATA is missing"):
        trainer = Trainer(load_run_config(stored_run), stored_run, resume=True)
    trainer.run_dir.close()
    assert int(trainer.state.iteration) == 1
    assert os.listdir(os.path.join(stored_run, DAMAGED)) == ["2"]


def test_non_finite_parameters_make_a_step_damaged(stored_run):
    """Was: a checkpoint whose parameters hold NaN was restored and trained from."""
    config = load_run_config(stored_run)
    trainer = Trainer(config, stored_run, resume=True)
    ts = trainer.state.train_state
    leaves, treedef = jax.tree_util.tree_flatten(ts.params)
    leaves[0] = leaves[0].at[(0,) * leaves[0].ndim].set(jnp.nan)
    bad = trainer.state.replace(train_state=ts.replace(
        params=jax.tree_util.tree_unflatten(treedef, leaves)), iteration=jnp.int32(3))
    trainer.run_dir.save(3, bad)
    trainer.run_dir.close()
    like = _template(stored_run)
    for restore in (restore_network, None):  # what eval reads, and the whole state
        with pytest.warns(DamagedCheckpointWarning,
                          match=r"checkpoints/3 is damaged \(non-finite network variables: "
                                r"\['params'\]\S* holds NaN or infinity\); using step 2"):
            state, step = load_checkpoint(stored_run, like, restore)
        assert step == 2
        assert all(np.isfinite(np.asarray(x)).all()
                   for x in jax.tree_util.tree_leaves(state.train_state.params))
    with pytest.warns(DamagedCheckpointWarning, match="non-finite network variables"):
        resumed = Trainer(config, stored_run, resume=True)
    resumed.run_dir.close()
    assert int(resumed.state.iteration) == 2
    assert os.listdir(os.path.join(stored_run, DAMAGED)) == ["3"]


# ------------------------------------------------------------------------- metrics
def test_metrics_readers_skip_a_cut_last_line_with_a_warning(stored_run, capsys):
    """Was: "Expecting value: line 1 column 1 (char 0)", no file or line named, no plot."""
    path = os.path.join(stored_run, "metrics.jsonl")
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"iteration": 3, "lo')  # as kill -9 leaves the line being written
    with pytest.warns(CutMetricsLineWarning, match=rf"{path}, line 3: cut short"):
        assert [r["iteration"] for r in read_metrics(path)] == [1, 2]
    with pytest.warns(CutMetricsLineWarning):
        plot_metrics(path)
    out = os.path.join(stored_run, "curves.png")
    assert cli.main(["plot", stored_run, "-o", out]) == 0
    assert _err_line(capsys).startswith(f"turbozero: warning: {path}, line 3: cut short (")
    assert os.path.getsize(out) > 0


def test_a_damaged_metrics_line_before_the_last_is_named(stored_run, capsys):
    path = os.path.join(stored_run, "metrics.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(["[1, 2]\n"] + lines)
    with pytest.raises(ValueError, match=rf"{path}, line 1: not a metrics record \(a JSON list\)"):
        read_metrics(path)
    assert cli.main(["plot", stored_run]) == 2
    assert "line 1: not a metrics record" in _err_line(capsys)
