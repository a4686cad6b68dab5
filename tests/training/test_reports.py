"""Results read honestly: counts next to every rate, no rate without a finished game, no `nan`
loss before training, evaluation shown in the progress bar, warnings for settings that never
evaluate or checkpoint."""

import warnings

import jax
import jax.numpy as jnp
import pytest

import envs
from turbozero.presets import get_preset
from turbozero.search.mctx_policies import random_actions
from turbozero.training import Trainer
from turbozero.training import report
from turbozero.training.evaluation import match_counts, match_summary, play_match

GAME = "pgx/tic_tac_toe"


def _random(variables, states, key):
    return random_actions(states, key)


def test_summary_counts_every_game_and_rates_only_finished_ones():
    finished = jnp.array([True, True, True, True, False, False])
    ret = jnp.array([1.0, -1.0, 0.0, 1.0, 1.0, 0.0])  # unfinished returns are ignored
    s = match_summary(match_counts(finished, ret, 7))
    assert (s["games"], s["finished"], s["unfinished"]) == (6, 4, 2)
    assert (s["wins"], s["draws"], s["losses"]) == (2, 1, 1)
    assert s["win_rate"] == 0.5 and s["draw_rate"] == 0.25 and s["loss_rate"] == 0.25
    assert s["mean_return"] == 0.25 and s["steps"] == 7
    assert all(isinstance(v, (int, float)) for v in s.values())  # JSON-ready


def test_no_finished_game_gives_no_rate():
    s = match_summary(match_counts(jnp.zeros(4, bool), jnp.ones(4), 3))
    assert (s["finished"], s["unfinished"], s["wins"]) == (0, 4, 0)
    assert s["win_rate"] is None and s["draw_rate"] is None and s["loss_rate"] is None
    assert s["mean_return"] is None
    line = report.format_match("random", s)
    assert line == ("random: won 0 / drew 0 / lost 0 of 0 finished (4 unfinished), "
                    "no win rate: no game finished")


@pytest.fixture(scope="module")
def ttt():
    return envs.make(GAME)


def test_play_match_counts_unfinished_games(ttt):
    """Tic-tac-toe needs at least 5 moves: a 2-step cap leaves every game unfinished."""
    run = jax.jit(lambda key, steps: play_match(ttt, _random, _random, None, None, key, 4, steps),
                  static_argnums=1)
    cut = match_summary(run(jax.random.PRNGKey(0), 2))
    assert (cut["games"], cut["finished"], cut["unfinished"]) == (4, 0, 4)
    assert cut["win_rate"] is None
    full = match_summary(run(jax.random.PRNGKey(0), 9))
    assert full["finished"] == 4 and full["unfinished"] == 0
    assert full["wins"] + full["draws"] + full["losses"] == 4
    assert full["win_rate"] == full["wins"] / 4


def test_lines_show_each_rate_with_its_count():
    result = {"games": 16, "finished": 16, "unfinished": 0, "wins": 12, "draws": 1, "losses": 3,
              "win_rate": 0.75, "draw_rate": 1 / 16, "loss_rate": 3 / 16, "mean_return": 0.5625,
              "steps": 9}
    assert report.format_match("random", result) == (
        "random: won 12 / drew 1 / lost 3 of 16 finished (0 unfinished), win rate 0.750")
    record = {"iteration": 4, "loss": 1.5, "policy_loss": 1.0, "value_loss": 0.5,
              **{f"eval_random_{k}": v for k, v in result.items()}}
    assert report.eval_results(record) == {"random": result}
    assert report.format_iteration(record) == (
        "iteration 4: loss 1.5000 (policy 1.0000, value 0.5000)\n"
        "  random: won 12 / drew 1 / lost 3 of 16 finished (0 unfinished), win rate 0.750")
    untrained = report.format_iteration({"iteration": 1})
    assert untrained == "iteration 1: not trained yet: replay has no finished games"
    assert report.progress_postfix(record)["random"] == "won 0.750 of 16"


def test_eval_table_is_readable(ttt):
    done = {"games": 16, "finished": 15, "unfinished": 1, "wins": 12, "draws": 1, "losses": 2,
            "win_rate": 0.8, "draw_rate": 1 / 15, "loss_rate": 2 / 15, "mean_return": 0.667,
            "steps": 9}
    none = dict(done, finished=0, unfinished=16, wins=0, draws=0, losses=0, win_rate=None,
                draw_rate=None, loss_rate=None, mean_return=None)
    table = report.format_eval({"random": done, "greedy": none}, 7, "runs/ttt", ttt).splitlines()
    assert table[0] == "runs/ttt: checkpoint of iteration 7"
    assert table[2].split() == ["opponent", "games", "finished", "unfinished", "won", "drew",
                                "lost", "win", "rate", "mean", "return"]
    assert table[3].split() == ["random", "16", "15", "1", "12", "1", "2", "0.800", "0.667"]
    assert table[4].split() == ["greedy", "16", "0", "16", "0", "0", "0", "-", "-"]
    assert "random = uniform over the legal moves" in table
    assert any(line.startswith("greedy = the same network at 1 ply") for line in table)


def test_opponents_are_explained():
    pyrat = envs.make("pyrat", width=5, height=5, cheese_count=3)
    assert "nearest cheese" in report.describe_opponent("greedy", pyrat)
    assert "0-ply" in report.describe_opponent("gnubg", envs.make("backgammon"))


def test_schedule_warnings():
    w = report.schedule_warnings
    assert w(5, ("random",), 5, True, 0, 10) == []
    assert w(5, ("random",), 20, True, 0, 10) == []  # the last iteration is always saved
    assert w(5, ("random",), 0, False, 0, 10) == []  # no run directory: nothing to save
    assert "no evaluation happens" in w(20, ("random",), 5, True, 0, 10)[0]
    assert "no evaluation happens" in w(5, ("random",), 5, True, 5, 9)[0]  # resumed past 5
    assert "never plays" in w(0, ("random",), 5, True, 0, 10)[0]
    assert w(0, (), 5, True, 0, 10) == []  # evaluation turned off on purpose
    assert "saves no checkpoint" in w(5, ("random",), 0, True, 0, 10)[0]
    assert w(50, ("random",), 0, True, 10, 10) == []  # nothing left to run
    # resumed at 20 to 24 with eval_every=20: was "set eval_every <= 24", which 20 already is
    (message,) = w(20, ("random",), 5, True, 20, 24)
    assert message == ("eval_every=20 but this run does iterations 21..24, none a multiple of "
                       "20: no evaluation happens; set eval_every <= 4 or train on to iteration "
                       "40 (--iterations 40)")
    assert "set eval_every <= 10 or train on to iteration 20" in w(20, ("random",), 5, True, 0,
                                                                   10)[0]


class _RecordingBar:
    """Stands in for tqdm: keeps every description, postfix and written line."""

    def __init__(self, *args, desc="", **kwargs):
        self.descriptions, self.postfixes, self.lines = [desc], [], []

    def set_description(self, desc, refresh=True):
        self.descriptions.append(desc)

    def set_postfix(self, post):
        self.postfixes.append(post)

    def write(self, line):
        self.lines.append(line)

    def update(self, n=1):
        pass

    def close(self):
        pass


@pytest.fixture(scope="module")
def untrained_run():
    """Tic-tac-toe with 2 moves per iteration (no game ends: nothing is trained) and a 2-step
    evaluation cap (no evaluation game ends), evaluated at iteration 2 of 2."""
    cfg = get_preset(GAME, "tiny", num_iterations=2, eval_every=2, eval_games=4, num_envs=4,
                     collect_steps=2, max_eval_steps=2, checkpoint_every=0)
    return Trainer(cfg)


def test_run_shows_evaluation_in_the_bar_and_warns_when_none_is_due(untrained_run, monkeypatch):
    trainer = untrained_run
    bars, seen_by_evaluate, records = [], [], []

    def new_bar(*args, **kwargs):
        bars.append(_RecordingBar(*args, **kwargs))
        return bars[-1]

    monkeypatch.setattr(report, "tqdm_class", lambda: new_bar)
    evaluate = trainer.evaluate

    def spy(opponent, *args, **kwargs):
        seen_by_evaluate.append(bars[-1].descriptions[-1])  # what the bar says meanwhile
        return evaluate(opponent, *args, **kwargs)

    monkeypatch.setattr(trainer, "evaluate", spy)
    with pytest.warns(UserWarning, match="eval_every=2 but this run does iterations 1..1"):
        trainer.run(num_iterations=1, callback=records.append)
    assert seen_by_evaluate == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # iteration 2 evaluates: no warning
        trainer.run(num_iterations=2, callback=records.append)
    assert seen_by_evaluate == ["evaluating vs random"]
    bar = bars[-1]
    assert bar.descriptions[-1] == f"train {GAME}"  # restored after the evaluation
    # said once, before the first numbers: the opponents, then what each result column means
    assert len(bar.lines) == 1
    opponents, results = bar.lines[0].split("\n")
    assert opponents == "evaluation opponents: random = uniform over the legal moves"
    assert results.startswith("results: games = games played") and "mean return = " in results
    last = records[-1]
    assert "loss" not in last and last["replay_samples"] == 0
    assert last["eval_random_unfinished"] == 4 and last["eval_random_win_rate"] is None
    assert bar.postfixes[-1] == {"random": "0 of 4 finished"}
    assert "nan" not in report.format_iteration(last)


def test_mean_return_has_its_standard_error():
    import numpy as np

    from turbozero.training.evaluation import match_counts

    ret = np.array([1.0, -2.0, 3.0, -1.0, 1.0, 0.5])
    finished = np.array([True, True, True, True, True, False])
    s = match_summary(match_counts(finished, ret, 4))
    done = ret[finished]
    assert s["mean_return_se"] == pytest.approx(done.std(ddof=1) / np.sqrt(len(done)), rel=1e-5)
    one = match_summary(match_counts(np.array([True, False]), np.array([1.0, 0.0]), 1))
    assert one["mean_return_se"] is None
