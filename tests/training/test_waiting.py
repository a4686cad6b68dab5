"""The person waiting for a run (issue 32, item 6; item 8): evaluation shows games ending while
it plays (in jitted chunks that play the same moves as one call), Ctrl-C stops `turbozero
train` in one line and leaves the run resumable, every printed column and opponent is
explained, the README's resume example ends with an evaluation, and the metrics also go to
TensorBoard event files when asked."""

import functools
import os
import re
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import pytest

from turbozero import cli
from turbozero.presets import get_preset
from turbozero.training import Trainer, read_metrics, report
from turbozero.training.evaluation import (match_progress, match_start, match_steps,
                                           match_summary, match_result, play_match,
                                           play_match_chunked)

GAME = "pgx/tic_tac_toe"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _random(variables, states, key):
    logits = jnp.where(states.legal_action_mask, 0.0, -jnp.inf)
    return jax.random.categorical(key, logits).astype(jnp.int32)


def _small(**kw):
    return get_preset(GAME, "tiny", **{**dict(num_envs=4, batch_size=8, eval_games=4,
                                              num_iterations=2, eval_every=2,
                                              checkpoint_every=2), **kw})


# --------------------------------------------------------------- evaluation progress
def test_a_match_in_chunks_plays_the_moves_of_one_call_and_reports_games_ending():
    import envs

    env = envs.make(GAME)
    key = jax.random.PRNGKey(3)
    one = jax.device_get(jax.jit(
        lambda k: play_match(env, _random, _random, None, None, k, 16, 9))(key))

    def steps(carry, limit):
        carry = match_steps(env, _random, _random, None, None, carry, limit)
        return carry, match_progress(carry)

    seen = []
    carry = play_match_chunked(jax.jit(lambda k: match_start(env, k, 16)), jax.jit(steps), key,
                               9, lambda *a: seen.append(a), chunk_steps=2, min_call_s=0)
    assert match_summary(jax.device_get(match_result(carry))) == match_summary(one)
    assert seen[0] == (0, 16, 0)  # before the first move
    steps = [s for _, _, s in seen[1:]]  # one call per 2 steps, until every game has ended
    assert steps[:-1] == list(range(2, 2 * len(steps), 2)) and steps[-1] == int(one["steps"])
    finished = [f for f, _, _ in seen]
    assert finished == sorted(finished) and finished[-1] == int(one["finished"]) == 16
    assert any(0 < f < 16 for f in finished)  # games seen ending one by one, not all at once
    with pytest.raises(ValueError, match="chunk_steps must be an int >= 1"):
        play_match_chunked(None, None, key, 9, chunk_steps=0)


def test_trainer_evaluation_shows_the_games_ending(capsys):
    trainer = Trainer(_small())
    seen = []
    with_progress = trainer.evaluate("random", progress=lambda *a: seen.append(a))
    assert with_progress == trainer.evaluate("random")  # the same games either way
    assert seen[0] == (0, 4, 0) and seen[-1][0] == with_progress["finished"]
    # quick calls double the steps of the next: a fast match is reported on at fewer points
    fast = []
    carry = play_match_chunked(
        trainer._match_start, functools.partial(trainer._evals["random"],
                                                trainer.variables(trainer.state.train_state)),
        jax.random.PRNGKey(0), 400, lambda *a: fast.append(a[2]), chunk_steps=1,
        min_call_s=60)
    assert fast[:4] == [0, 1, 3, 7] or fast[-1] < 7, fast
    # during `run`, the bar's description counts the games (tqdm writes it to stderr)
    trainer.run()
    out, err = capsys.readouterr()
    assert "evaluating vs random: 0/4 games over, move 0" in err
    assert re.search(r"evaluating vs random: 4/4 games over, move \d", err)
    # said once, above the bar, before the first evaluation's numbers
    assert "mean return = the agent's reward per finished game" in out
    assert out.count("evaluation opponents: random = uniform over the legal moves") == 1


def test_turbozero_eval_shows_a_bar_of_the_games(monkeypatch, capsys):
    bars = []

    class Bar:
        def __init__(self, total, **kwargs):
            self.total, self.n, self.kwargs, self.closed = total, 0, kwargs, False
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, text):
            self.postfix = text

        def close(self):
            self.closed = True

    monkeypatch.setattr(report, "tqdm_class", lambda: Bar)
    fixture = os.path.join(ROOT, "tests", "data", "ttt_run")  # read only: eval writes nothing
    assert cli.main(["eval", fixture, "--opponent", "random"]) == 0
    (bar,) = bars
    assert bar.total == 16 and bar.n == 16 and bar.closed  # every game over
    assert bar.kwargs["desc"] == "iteration 2 vs random" and bar.kwargs["disable"] is None
    assert "mean return: the agent's reward per finished game" in capsys.readouterr().out
    assert cli.main(["eval", fixture, "--no-progress", "--json"]) == 0
    assert bars[-1].kwargs["disable"] is True


# --------------------------------------------------------------------------- Ctrl-C
def _train(run_dir, *args, **popen):
    env = dict(os.environ, TURBOZERO_JAX_CACHE=jax.config.jax_compilation_cache_dir or "none")
    argv = ["train", GAME, "--run-dir", str(run_dir), "--no-progress", *args]
    # Python's own Ctrl-C handler, set again: a shell's background job may start with SIGINT
    # ignored, which Python would keep (a preexec_fn would fork this multithreaded process)
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            f"from turbozero.cli import main; sys.exit(main({argv!r}))")
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _iterations(run_dir) -> list[int]:
    return [r["iteration"] for r in read_metrics(os.path.join(run_dir, "metrics.jsonl"))]


def test_ctrl_c_stops_in_one_line_and_the_run_resumes(tmp_path):
    run = tmp_path / "run"
    # checkpoints only at the end (iteration 400): the one resumed from is the interrupt's
    proc = _train(run, "--iterations", "400", "--set", "checkpoint_every=400",
                  "--set", "eval_every=3", "--set", "eval_games=4")
    metrics = run / "metrics.jsonl"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 4:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    lines = [ln for ln in err.splitlines() if ln.startswith("turbozero:")]
    assert len(lines) == 1, err
    found = re.fullmatch(r"turbozero: interrupted after iteration (\d+); (\S+) resumes from the "
                         r"checkpoint of iteration (\d+): turbozero train pgx/tic_tac_toe "
                         r"--resume --run-dir (\S+)", lines[0])
    assert found, lines[0]
    done, checkpoint = int(found.group(1)), int(found.group(3))
    assert done == checkpoint >= 4 and found.group(4) == str(run)
    assert sorted(os.listdir(run / "checkpoints")) == [str(done)]
    # resumed as the line says, on to two more iterations: no iteration lost or repeated
    resumed = _train(run, "--resume", "--iterations", str(done + 2))
    out, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-3000:]
    assert _iterations(run) == list(range(1, done + 3))


def test_interrupted_trainer_saves_the_last_completed_iteration(tmp_path):
    from turbozero.training.loop import TrainingInterrupted

    trainer = Trainer(_small(num_iterations=6, checkpoint_every=5, eval_every=0,
                             eval_opponents=()), str(tmp_path / "run"))

    def stop(record):
        if record["iteration"] == 3:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted) as info:
        trainer.run(progress=False, callback=stop)
    # the callback runs after iteration 3 was completed and recorded
    assert (info.value.iteration, info.value.checkpoint) == (3, 3)
    assert trainer.run_dir.latest_step() == 3 and int(trainer.state.iteration) == 3
    trainer.run_dir.close()
    assert isinstance(info.value, KeyboardInterrupt)  # Python code that catches Ctrl-C still does
    assert "no run directory" in TrainingInterrupted(2, None, None).message()
    assert "--overwrite" in TrainingInterrupted(0, None, "/r").message()


# ---------------------------------------------------------------- what is printed
def test_every_column_opponent_and_loss_part_is_explained(capsys):
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    train_help = capsys.readouterr().out
    for word in ("mean return", "greedy", "random", "unfinished", "win rate", "policy_loss",
                 "value_loss", "reward_loss", "consistency_loss", "can rise while play improves",
                 "--tensorboard", "Ctrl-C"):
        assert word in train_help, word
    with pytest.raises(SystemExit):
        cli.main(["eval", "--help"])
    eval_help = capsys.readouterr().out
    assert "mean return" in eval_help and "what its search adds" in eval_help
    table = report.format_eval({"greedy": {
        "games": 32, "finished": 32, "unfinished": 0, "wins": 8, "draws": 0, "losses": 24,
        "win_rate": 0.25, "draw_rate": 0.0, "loss_rate": 0.75, "mean_return": -0.6,
        "steps": 90}}, 24, "runs/bg")
    assert "mean return: the agent's reward per finished game" in table
    assert "win rate: won / finished" in table


def test_loss_line_says_how_the_parts_add_up():
    az = report.explain_losses(get_preset(GAME, "tiny").algorithm.search)
    assert az.startswith("loss = policy_loss + value_loss;")
    mz = report.explain_losses(get_preset("gomoku", "tiny").algorithm.search)
    # gomoku's parts do not add up to the loss: the line gives the weights
    assert mz.startswith("loss = policy_loss + value_loss + reward_loss + 2 * consistency_loss")
    td = report.explain_losses(get_preset("backgammon", "tiny").algorithm.search)  # afterstate TD
    assert td.startswith("loss = value_loss (TD trains no policy head: policy_loss is 0);")


def test_readme_resume_example_ends_with_an_evaluation():
    """The resumed run of the README evaluates at its last iteration (the preset's eval_every
    is 24: resuming to 30 evaluated nothing and warned so)."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    line = next(ln for ln in readme.splitlines() if "--resume --run-dir runs/bg" in ln)
    args = line.split("#")[0].split()
    target = int(args[args.index("--iterations") + 1])
    base = get_preset("backgammon", "tiny")
    sets = dict(args[i + 1].split("=", 1) for i, a in enumerate(args) if a == "--set")
    eval_every = int(sets.get("eval_every", base.eval_every))
    assert target % eval_every == 0, line
    assert report.schedule_warnings(eval_every, base.eval_opponents, base.checkpoint_every, True,
                                    base.num_iterations, target) == []


# ------------------------------------------------------------------------ TensorBoard
def test_tensorboard_events_hold_the_metrics(tmp_path):
    pytest.importorskip("tensorboardX", reason="the tensorboard extra is not installed")
    from turbozero.training.metrics import read_tensorboard

    trainer = Trainer(_small(), str(tmp_path / "run"), tensorboard=True)
    trainer.run(progress=False)
    trainer.run_dir.close()
    trainer.tensorboard.close()
    records = read_metrics(str(tmp_path / "run" / "metrics.jsonl"))
    events = read_tensorboard(str(tmp_path / "run" / "tensorboard"))
    trained = [r for r in records if "loss" in r]
    assert trained, records
    assert events["loss/loss"] == [(r["iteration"], pytest.approx(r["loss"])) for r in trained]
    assert events["eval/random/win_rate"] == [(2, pytest.approx(records[-1]["eval_random_win_rate"]))]
    assert [s for s, _ in events["train/selfplay_positions_per_s"]] == [1, 2]
    # off by default
    other = Trainer(_small(), str(tmp_path / "plain"))
    other.run(progress=False)
    other.run_dir.close()
    assert not (tmp_path / "plain" / "tensorboard").exists() and other.tensorboard is None


def test_tensorboard_without_the_package_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tensorboardX", None)  # import fails as if missing
    with pytest.raises(ValueError, match=r'^tensorboard output needs the tensorboardX package: '
                                         r'pip install -e "\.\[tensorboard\]"'):
        Trainer(_small(), str(tmp_path / "run"), tensorboard=True)
    assert not (tmp_path / "run").exists()  # refused before anything was written
    code = cli.main(["train", GAME, "--run-dir", str(tmp_path / "cli"), "--tensorboard",
                     "--iterations", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith(
        "turbozero: error: tensorboard output needs the tensorboardX package"), err
    with pytest.raises(ValueError, match="tensorboard=True needs run_dir"):
        Trainer(_small(), tensorboard=True)
