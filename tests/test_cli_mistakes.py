"""Every mistake named, nothing misstated (issue 45 items 4 and 5): file-system mistakes are one
line naming the path, for every command and before anything is built; the output says what is
true (plot refuses what it cannot read, a resume with nothing to train says the run's real
count and changes nothing, damaged files are named, --overwrite lists what it removed)."""

from __future__ import annotations

import json
import os
import shutil
import tomllib

import pytest

from turbozero import cli
from turbozero.training.checkpoints import MARKER, RunDirectory

GAME = "pgx/tic_tac_toe"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "data", "ttt_run")  # 2 iterations, checkpoints 1 and 2
AS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes into read-only folders


def _err_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one line, no traceback
    return err[0]


def _tree(path) -> dict:
    """Every file under `path` with its size and modification time."""
    out = {}
    for top, _, files in os.walk(path):
        for name in files:
            st = os.stat(os.path.join(top, name))
            out[os.path.relpath(os.path.join(top, name), path)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture()
def run(tmp_path):
    dest = tmp_path / "run"
    shutil.copytree(FIXTURE, dest)
    return dest


# ------------------------------------------------------------------ file-system mistakes
def test_run_dir_that_is_a_file_is_one_line_for_every_command(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for argv, what in (
        (["train", GAME, "--run-dir", str(afile)], "--run-dir"),
        (["train", GAME, "--resume", "--run-dir", str(afile)], "--run-dir"),
        (["eval", str(afile)], "RUN_DIR"),
    ):
        assert cli.main(argv) == 2
        assert _err_line(capsys) == f"turbozero: error: {what} {afile} is a file, not a folder"
    assert cli.main(["train", GAME, "--run-dir", str(afile / "below")]) == 2
    assert _err_line(capsys) == (f"turbozero: error: --run-dir {afile / 'below'}: its parent "
                                 f"{afile} is a file, not a folder")
    assert afile.read_text() == "x"


def test_a_symlink_loop_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    assert cli.main(["train", GAME, "--run-dir", str(loop)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: --run-dir {loop}: too many levels of "
                                 "symbolic links")
    assert cli.main(["plot", str(loop)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: RUN_DIR {loop}: too many levels of "
                                 "symbolic links")


@pytest.mark.skipif(AS_ROOT, reason="root writes into read-only folders")
def test_a_read_only_run_dir_is_one_line(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert cli.main(["train", GAME, "--run-dir", str(ro)]) == 2
        assert _err_line(capsys) == (f"turbozero: error: --run-dir {ro}: permission denied (the "
                                     "folder is not writable)")
        assert cli.main(["train", GAME, "--run-dir", str(ro / "new")]) == 2
        assert _err_line(capsys) == (f"turbozero: error: --run-dir {ro / 'new'} cannot be made: "
                                     f"{ro} is not writable")
    finally:
        ro.chmod(0o755)


def test_plot_output_mistakes_are_one_line(run, tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "folder" / "out.png"
    assert cli.main(["plot", str(run), "-o", str(missing)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: -o {missing}: the folder "
                                 f"{missing.parent} does not exist (make it first)")
    assert cli.main(["plot", str(run), "-o", str(tmp_path)]) == 2
    assert _err_line(capsys) == f"turbozero: error: -o {tmp_path} is a folder, not a file"
    # metrics.jsonl that is a folder
    odd = tmp_path / "odd"
    (odd / "metrics.jsonl").mkdir(parents=True)
    assert cli.main(["plot", str(odd)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: metrics file {odd / 'metrics.jsonl'} is a "
                                 "folder, not a file")


# ------------------------------------------------------------------ output that tells the truth
def test_plot_refuses_what_it_cannot_read(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli.main(["plot", str(empty)]) == 2  # was: a blank chart, "not trained yet", exit 0
    assert _err_line(capsys) == (f"turbozero: error: {empty} holds no complete metrics record "
                                 "(empty, or its one line cut short): nothing to plot until an "
                                 "iteration has finished")
    assert not (tmp_path / "empty.png").exists()
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x89\x00\xff not json\n{\"iteration\": 1}\n")
    assert cli.main(["plot", str(garbage)]) == 2
    assert _err_line(capsys).startswith(f"turbozero: error: {garbage}, line 1: not a metrics "
                                        "record")
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n{"b": 2}\n')
    assert cli.main(["plot", str(other)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: {other}: none of its 2 records has the "
                                 "field 'iteration' (not the metrics file of a turbozero run?)")


def test_plot_takes_a_metrics_file_as_plot_metrics_does(run, capsys):
    path = run / "metrics.jsonl"
    assert cli.main(["plot", str(path)]) == 0  # was: "has no metrics.jsonl"
    png = run / "metrics.png"
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert capsys.readouterr().out.strip() == f"wrote {png}"


def test_resume_with_nothing_to_train_tells_the_real_count_and_touches_nothing(run, capsys):
    before = _tree(run)
    assert cli.main(["train", GAME, "--resume", "--run-dir", str(run), "--iterations", "1",
                     "--no-progress"]) == 0
    out = capsys.readouterr().out
    # was: "the run has done its 1 iterations" (the number asked), with the marker rewritten
    assert out.strip() == (f"{run} has done 2 iterations (its newest checkpoint), 1 asked: "
                           "nothing to train and nothing changed; --iterations N (N > 2) "
                           "trains it on")
    assert _tree(run) == before


def test_damaged_run_files_are_named(run, tmp_path, capsys):
    marker = run / MARKER
    marker.write_text(json.dumps({"config": 5}))
    assert cli.main(["eval", str(run)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: {marker} holds a config that cannot be "
                                 "read: stored config is a int, not a TrainConfig")
    marker.write_text("[1, 2]")
    assert cli.main(["train", GAME, "--resume", "--run-dir", str(run)]) == 2
    assert _err_line(capsys) == (f"turbozero: error: {marker} is damaged: a JSON list, not an "
                                 "object")


def test_overwrite_lists_what_it_removed(run):
    kept = run / "notes.txt"
    kept.write_text("mine")
    rd = RunDirectory(str(run), {"game": GAME}, {"w": __import__("numpy").zeros(2)},
                      resume=False, overwrite=True)
    try:
        assert rd.replaced == [MARKER, "checkpoints/ (iterations 1, 2)", "metrics.jsonl (2 lines "
                               "of metrics)", "cli.json"]
    finally:
        rd.close()
    assert kept.read_text() == "mine"
    # the fixture's own written_by.json is not the library's either: it stays
    assert sorted(os.listdir(run)) == sorted(["notes.txt", "written_by.json", MARKER,
                                              "checkpoints"])


def test_the_tensorboard_extra_installs_the_tensorboard_command():
    """`--tensorboard` tells the user to run `tensorboard --logdir`: the extra that the flag
    names installs that command (the `tensorboard` package), not only the writer."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["tensorboard"]
    names = {req.split(">")[0].split("=")[0].split("<")[0].strip().lower() for req in extra}
    assert {"tensorboardx", "tensorboard"} <= names


def test_overwrite_says_what_it_removed_and_each_evaluation_prints_once(run, capsys):
    """`--overwrite` over a run lists what it removed (was: nothing said); an evaluation at the
    last iteration is printed once, in the summary (was: twice, a few lines apart)."""
    argv = ["train", GAME, "--run-dir", str(run), "--overwrite", "--no-progress",
            "--iterations", "2", "--set", "eval_every=1", "--set", "eval_games=4",
            "--set", "num_envs=4", "--set", "collect_steps=9", "--set", "train_steps=2",
            "--set", "search.num_simulations=2"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert (f"--overwrite removed the run that was there: {MARKER}, checkpoints/ (iterations "
            "1, 2), metrics.jsonl (2 lines of metrics), cli.json") in out
    assert out.count("random: won ") == 2, out  # iteration 1 as it came, iteration 2 at the end
    assert out.count("evaluation at iteration 2:") == 1
    assert "iteration 1: " in out and "iteration 2: " not in out.replace(
        "evaluation at iteration 2:", "")


@pytest.mark.parametrize("seed, shown", [("-1", "-1"), (str(2**40), str(2**40))])
def test_play_seed_outside_int32_is_one_line_before_loading(run, capsys, seed, shown):
    """Was: 2**40 played PRNGKey(0)'s game (the key truncated), -1 numpy's error after the
    agent was loaded."""
    assert cli.main(["play", "backgammon", str(run), "--seed", seed]) == 2
    assert _err_line(capsys) == ("turbozero: error: --seed must be an integer >= 0, got "
                                 f"{shown}" if seed == "-1" else
                                 "turbozero: error: --seed must be an integer within int32 "
                                 f"(-2147483648 .. 2147483647), as JAX holds it, got {shown}")
