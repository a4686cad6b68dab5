"""The error rate judged by gnubg (`turbozero.games.backgammon.error_rate`): the computation on a
hand-worked case, the position set, gnubg's judge against itself and a random player, the run
player's moves mapped back to gnubg's boards, and the refusals."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from turbozero import cli
from turbozero.games.backgammon import error_rate as er

try:
    import gnubg  # noqa: F401
    import gnubg_nn  # noqa: F401
    HAVE_GNUBG = True
except ImportError:
    HAVE_GNUBG = False
needs_gnubg = pytest.mark.skipif(not HAVE_GNUBG, reason='gnubg is not installed: '
                                 'pip install -e ".[backgammon]" (the backgammon extra)')


# ------------------------------------------------------------------- plain Python
class _TableJudge:
    """A judge read from a table: the best equity of each decision, the equity of each result."""

    def __init__(self, best, equity):
        self._best, self._equity = best, equity

    def best(self, d):
        return self._best[d.board]

    def equity(self, result):
        return self._equity[result]


def test_error_rate_of_a_hand_worked_case():
    # three decisions (boards named by strings: the judge and the moves are tables)
    d = [er.Decision("A", (3, 1), er.CONTACT), er.Decision("B", (6, 6), er.CONTACT),
         er.Decision("C", (2, 1), er.RACE)]
    moves = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2"], "C": ["c1", "c2"]}
    # best per decision; "a3" scores above the best found (a move the filters left out): no error
    judge = _TableJudge({"A": 0.20, "B": -0.10, "C": 0.50},
                        {"a1": 0.20, "a2": 0.05, "a3": 0.25, "b1": -0.10, "b2": -0.40,
                         "c1": 0.50, "c2": 0.49})
    picks = {"first": {"A": "a1", "B": "b1", "C": "c1"},
             "second": {"A": "a2", "B": "b2", "C": "c2"},
             "third": {"A": "a3", "B": "b1", "C": "c2"}}
    players = {name: (lambda dec, results, p=p: p[dec.board]) for name, p in picks.items()}
    errors = er.judge_players(d, players, judge, moves=lambda board, dice: moves[board],
                              position_key=str)
    assert errors["first"] == [0.0, 0.0, 0.0]
    assert errors["second"] == pytest.approx([0.15, 0.30, 0.01])
    assert errors["third"] == pytest.approx([0.0, 0.0, 0.01])
    rates = er.error_rates(errors["second"], [x.phase for x in d])
    # contact: (0.15 + 0.30) / 2 = 0.225 -> 225; SE = sd(0.15, 0.30) / sqrt 2 = 0.075 -> 75
    assert rates[er.CONTACT].decisions == 2
    assert rates[er.CONTACT].rate == pytest.approx(225.0)
    assert rates[er.CONTACT].se == pytest.approx(75.0)
    # race: one decision, 0.01 -> 10, no SE; all: 0.46 / 3 -> 153.3
    assert (rates[er.RACE].decisions, rates[er.RACE].se) == (1, None)
    assert rates[er.RACE].rate == pytest.approx(10.0)
    assert rates["all"].rate == pytest.approx(460 / 3)
    empty = er.error_rates([], [])
    assert empty["all"] == er.PhaseRate(0, None, None)
    # a player's move that is not one of the position's is refused
    with pytest.raises(ValueError, match="no legal move"):
        er.judge_players(d, {"bad": lambda dec, results: "zz"}, judge,
                         moves=lambda board, dice: moves[board], position_key=str)


def test_judge_cache_round_trip(tmp_path):
    path = str(tmp_path / "judge.json")
    cache = er.JudgeCache(path, {"positions": 3})
    cache.best["x:31"], cache.equity["y"], cache.dirty = 0.25, -0.5, True
    cache.save()
    again = er.JudgeCache(path, {"positions": 3})
    assert again.best == {"x:31": 0.25} and again.equity == {"y": -0.5}
    assert er.JudgeCache(path, {"positions": 4}).best == {}  # another set: not reused
    (tmp_path / "judge.json").write_text("{not json")
    assert er.JudgeCache(path, {"positions": 3}).best == {}  # unreadable: judged again


def test_bad_judge_plies_and_positions_are_refused_in_one_line():
    for bad in (-1, 5, 8, True, 2.0):
        with pytest.raises(ValueError, match=r"gnubg judges at 0 to 4 plies") as err:
            er.check_judge_plies(bad)
        assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="at least 1 position"):
        er.check_positions(0)


def test_cli_refuses_bad_judge_plies_before_loading(tmp_path, capsys):
    from turbozero.presets import get_preset
    from turbozero.training.checkpoints import MARKER
    from turbozero.training.run_config import config_to_json

    run = tmp_path / "bg"
    run.mkdir()
    (run / MARKER).write_text(json.dumps({"config": config_to_json(
        get_preset("backgammon", "tiny"))}))
    assert cli.main(["error-rate", str(run), "--judge-plies", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("turbozero: error: judge plies 7: gnubg judges")
    ttt = tmp_path / "ttt"
    ttt.mkdir()
    (ttt / MARKER).write_text(json.dumps({"config": config_to_json(
        get_preset("pgx/tic_tac_toe", "tiny"))}))
    assert cli.main(["error-rate", str(ttt)]) == 2
    assert "no error-rate analysis (games with one: backgammon)" in capsys.readouterr().err


def test_gnubg_missing_is_one_line_naming_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "gnubg", None)  # `import gnubg` raises ImportError
    with pytest.raises(ValueError, match=r'not installed: pip install -e "\.\[backgammon\]"'):
        er.import_gnubg()
    with pytest.raises(ValueError, match="not installed"):
        er.report("runs/none")  # refused before reading the run


# ------------------------------------------------------------------- against gnubg
@needs_gnubg
def test_position_set_is_fixed_by_its_seed():
    a, b = er.self_play_decisions(12, 3), er.self_play_decisions(12, 3)
    assert a == b
    assert a != er.self_play_decisions(12, 4)
    assert all(len(er.legal_results(d.board, d.dice)) >= 2 for d in a)
    assert {d.phase for d in er.self_play_decisions(200, 0)} == {er.CONTACT, er.RACE}


@needs_gnubg
def test_gnubg_judges_its_own_0_ply_below_random():
    decisions = er.self_play_decisions(16, 0)
    players = {"gnubg 0-ply": er.gnubg_player(0), "random": er.random_player(1)}
    # judged at 0 plies, gnubg 0-ply's move is the judge's best: no error at all (the best of
    # findbestmoves is the best of gnubg.evaluate over the results: the two agree)
    at0 = er.judge_players(decisions, players, er.Judge(0))
    assert at0["gnubg 0-ply"] == pytest.approx([0.0] * 16, abs=1e-6)
    # judged at 1 ply, gnubg 0-ply makes small errors, random large ones
    at1 = er.judge_players(decisions, players, er.Judge(1))
    phases = [d.phase for d in decisions]
    g, r = (er.error_rates(at1[n], phases)["all"].rate for n in ("gnubg 0-ply", "random"))
    assert 0 < g < 30 and r > 3 * g, (g, r)


@needs_gnubg
def test_run_player_results_are_gnubgs_boards():
    """The mapping of a complete-move player's choice back to gnubg's (opponent, mover) board:
    every slot of the env's complete moves, chosen in turn, gives exactly gnubg-nn's results."""
    from envs.backgammon import from_gnubg_board
    from envs.backgammon.gnubg_bridge import _afterstates_fn

    class _Agent:
        slot = 0

        def choose(self, state):
            moves = _afterstates_fn()(state)
            return moves, self.slot, 0.0

    agent = _Agent()
    play = er.agent_player(agent)
    for d in er.self_play_decisions(6, 1):
        results = er.legal_results(d.board, d.dice)
        valid = np.flatnonzero(np.asarray(_afterstates_fn()(
            from_gnubg_board(d.board, d.dice)).valid))
        seen = set()
        for slot in valid:
            agent.slot = int(slot)
            seen.add(play(d, results))
        assert seen == set(results)


@needs_gnubg
def test_cli_reports_a_runs_error_rate_beside_the_references(tmp_path, capsys):
    """`turbozero error-rate RUN --json` end to end on a saved td-preset run (untrained: the
    figures are not the point, the report is): every player judged on the same decisions,
    gnubg 0-ply without error under a 0-ply judge, the position set's phase counts."""
    from turbozero.presets import get_preset
    from turbozero.training import Trainer
    from turbozero.training.run_config import with_overrides

    small = {"num_envs": 2, "replay_capacity": 4, "collect_steps": 2, "train_steps": 1,
             "batch_size": 2, "eval_every": 0, "eval_opponents": ()}
    trainer = Trainer(with_overrides(get_preset("backgammon", "td"), small), str(tmp_path / "td"))
    trainer.run_dir.save(0, trainer.state)
    trainer.run_dir.close()
    argv = ["error-rate", str(tmp_path / "td"), "--positions", "6", "--judge-plies", "0",
            "--no-cache", "--json", "--no-progress"]
    assert cli.main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    rates = out["error_rate"]
    assert set(rates) == {"run, iteration 0, 0-ply", "gnubg 0-ply", "pubeval", "random"}
    phases = [d.phase for d in er.self_play_decisions(6, 0)]
    for by_phase in rates.values():
        assert by_phase["all"]["decisions"] == 6
        assert by_phase["contact"]["decisions"] == phases.count(er.CONTACT)
    assert rates["gnubg 0-ply"]["all"]["rate"] == pytest.approx(0.0, abs=1e-3)
    assert rates["random"]["all"]["rate"] > 0
