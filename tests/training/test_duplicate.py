"""Duplicate games (`evaluation.play_outside_match(duplicate=True)`): each pair of games sees
the same dice with the seats swapped, and points per game carry a standard error over the pairs.
"""

from __future__ import annotations

import importlib.util

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import envs
from turbozero import cli
from turbozero.training import report
from turbozero.training.evaluation import (duplicate_summary, mean_and_se, match_counts,
                                           match_summary, play_outside_match)

ENV = envs.make("backgammon")


@jax.jit
def _first_legal(variables, states, key):
    return jnp.argmax(states.legal_action_mask, axis=-1).astype(jnp.int32)


class _LastLegal:
    """An outside opponent that plays the last legal micro-action and records, per game, the
    dice of each turn (the roll of each decision state where the player to move changed)."""

    def __init__(self, states):
        self.turns = {g: [tuple(int(d) for d in states.dice[g])] for g in range(len(states.dice))}
        self.starts = [int(p) for p in np.asarray(states.current_player)]
        self.player = np.asarray(states.current_player).copy()

    def choose(self, game, states):
        return int(np.flatnonzero(states.legal_action_mask[game])[-1])

    def after_move(self, game, action, agent_output):
        pass

    def after_step(self, was_done, states):
        player = np.asarray(states.current_player)
        over = np.asarray(states.terminated)
        for g in np.flatnonzero((player != self.player) & ~over & ~was_done):
            self.turns[int(g)].append(tuple(int(d) for d in np.asarray(states.dice[g])))
        self.player = player.copy()


def _match(duplicate, key=7, games=4, steps=150):
    # 0 steps: the match's opening states (its own init keys), for the recorder
    opening = play_outside_match(ENV, _first_legal, None, jax.random.PRNGKey(key), games, 0,
                                 None, duplicate=duplicate).states
    opponent = _LastLegal(jax.device_get(opening))
    match = play_outside_match(ENV, _first_legal, None, jax.random.PRNGKey(key), games, steps,
                               opponent, duplicate=duplicate)
    return match, opponent


def test_pairs_see_the_same_dice_with_seats_swapped():
    match, opp = _match(duplicate=True)
    assert list(match.seat) == [0, 1, 0, 1]
    for a, b in ((0, 1), (2, 3)):
        # the same opening (roll and the player who plays it): the agent plays it in one game
        # of the pair and gnubg's seat in the other
        assert opp.starts[a] == opp.starts[b]
        n = min(len(opp.turns[a]), len(opp.turns[b]))
        assert n >= 8, (opp.turns[a], opp.turns[b])  # enough turns to mean something
        assert opp.turns[a][:n] == opp.turns[b][:n]
    # the two games of a pair are different games (other moves), and pairs differ
    assert not np.array_equal(np.asarray(match.states.board[0]), np.asarray(match.states.board[1]))
    assert opp.turns[0][:8] != opp.turns[2][:8]


def test_independent_games_see_other_dice():
    match, opp = _match(duplicate=False)
    assert list(match.seat) == [0, 1, 0, 1]
    assert opp.turns[0][:8] != opp.turns[1][:8]
    assert not match.duplicate and "pairs" not in match.summary()


def test_duplicate_needs_pairs_and_chance():
    with pytest.raises(ValueError, match="pairs"):
        play_outside_match(ENV, _first_legal, None, jax.random.PRNGKey(0), 3, 1,
                           None, duplicate=True)
    ttt = envs.make("pgx/tic_tac_toe")
    with pytest.raises(ValueError, match="chance"):
        play_outside_match(ttt, _first_legal, None, jax.random.PRNGKey(0), 2, 1, None,
                           duplicate=True)


def test_standard_error_is_taken_over_the_pairs():
    # pairs (2, -2), (1, -1), (-2, 0): pair means 0, 0, -1; mean -1/3;
    # sd = sqrt(((1/3)^2 + (1/3)^2 + (2/3)^2) / 2) = sqrt(1/3); SE = sd / sqrt(3) = 1/3
    own = np.array([2.0, -2.0, 1.0, -1.0, -2.0, 0.0])
    out = duplicate_summary(np.ones(6, bool), own, 99)
    assert out["pairs"] == 3
    assert out["mean_return"] == pytest.approx(-1 / 3)
    assert out["mean_return_se"] == pytest.approx(1 / 3)
    assert (out["wins"], out["draws"], out["losses"], out["steps"]) == (2, 1, 3, 99)
    # the same games taken as independent: the SE of six games (sd 1.633), larger here where
    # the dice favoured one seat in each pair
    alone = match_summary(match_counts(np.ones(6, bool), own, 99))
    assert alone["mean_return"] == pytest.approx(-1 / 3)
    assert alone["mean_return_se"] == pytest.approx(np.std(own, ddof=1) / 6 ** 0.5)
    assert alone["mean_return_se"] == pytest.approx(2 / 3)  # twice the pairs' SE
    assert out["mean_return_se_unpaired"] == pytest.approx(2 / 3)  # said beside it
    # a pair with an unfinished game is left out of the points, its finished game still counts
    finished = np.array([True, True, True, False, True, True])
    part = duplicate_summary(finished, own, 99)
    assert part["pairs"] == 2 and part["finished"] == 5 and part["unfinished"] == 1
    assert part["mean_return"] == pytest.approx((0 - 1) / 2)
    assert mean_and_se([]) == (None, None) and mean_and_se([2.0]) == (2.0, None)


def test_points_per_game_are_printed_with_their_standard_error():
    result = duplicate_summary(np.ones(6, bool), np.array([2.0, -2.0, 1.0, -1.0, -2.0, 0.0]), 9)
    line = report.format_match("gnubg", result)
    assert line == ("gnubg: won 2 / drew 1 / lost 3 of 6 finished (0 unfinished), win rate "
                    "0.333, points per game -0.333 ± 0.333 (3 duplicate pairs)")
    record = {"iteration": 2, **{f"eval_gnubg_{k}": v for k, v in result.items()}}
    assert report.eval_results(record)["gnubg"]["pairs"] == 3
    table = report.format_eval({"gnubg": result}, 2, "runs/bg", ENV).splitlines()
    assert table[3].split()[-3:] == ["-0.333", "±", "0.333"]
    assert any(line.startswith("gnubg: 3 duplicate pairs") for line in table)


def test_independent_games_print_their_points_too():
    # the example of docs/training.md: 12 wins, a draw and 3 losses of 16
    own = np.array([1.0] * 12 + [0.0] + [-1.0] * 3)
    line = report.format_match("random", match_summary(match_counts(np.ones(16, bool), own, 9)))
    assert line == ("random: won 12 / drew 1 / lost 3 of 16 finished (0 unfinished), win rate "
                    "0.750, points per game +0.562 ± 0.203")


def test_cli_refuses_odd_duplicate_matches_and_stray_flags():
    cli.check_duplicate("backgammon", ["gnubg"], 32)
    cli.check_duplicate("backgammon", ["gnubg"], 7, duplicate=False)  # independent: any count
    cli.check_duplicate("backgammon", ["random"], 7)
    with pytest.raises(ValueError, match="7 games cannot be paired; give --games N with N "
                       "even, or --no-duplicate"):
        cli.check_duplicate("backgammon", ["gnubg"], 7)
    with pytest.raises(ValueError, match="the random opponent plays no duplicate games"):
        cli.check_duplicate("backgammon", ["random"], 8, duplicate=False)
    args = cli.build_parser().parse_args(["eval", "runs/bg", "--opponent", "gnubg",
                                          "--no-duplicate"])
    assert args.no_duplicate


@pytest.mark.skipif(importlib.util.find_spec("gnubg") is None,
                    reason='gnubg is not installed: pip install -e ".[backgammon]"')
def test_train_refuses_an_odd_gnubg_evaluation_before_building_anything():
    with pytest.raises(ValueError, match="5 games cannot be paired; give --set eval_games=N"):
        cli._train_run(cli.build_parser().parse_args(
            ["train", "backgammon", "--set", "eval_games=5", "--set",
             "eval_opponents=random,gnubg", "--run-dir", "/nonexistent/never"]), True)


def test_the_python_api_refuses_odd_duplicate_matches_as_the_cli_does():
    """`Trainer.run` with an evaluation against an opponent that plays duplicate pairs refuses
    an odd eval_games before its first iteration (was: trained, then failed at the first
    evaluation), and `Trainer.evaluate` refuses the same before playing; duplicate=False is
    refused for an opponent without pairs. The CLI's words differ, the rule is one
    (`evaluation.check_duplicate_games`)."""
    from turbozero.presets import get_preset
    from turbozero.training import Trainer
    trainer = Trainer(get_preset("backgammon", "tiny", eval_games=5, eval_every=1,
                                 eval_opponents=("random", "gnubg"), num_envs=4, batch_size=8,
                                 replay_capacity=8))
    with pytest.raises(ValueError, match="^gnubg plays duplicate games, which come in pairs: 5 "
                       "games cannot be paired; give eval_games=N with N even$"):
        trainer.run(progress=False)
    assert int(trainer.state.iteration) == 0
    with pytest.raises(ValueError, match="5 games cannot be paired; give an even eval_games, "
                       "or duplicate=False"):
        trainer.evaluate("gnubg")
    with pytest.raises(ValueError, match="^duplicate=False: the random opponent plays no "
                       "duplicate games"):
        trainer.evaluate("random", duplicate=False)
