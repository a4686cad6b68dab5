"""`turbozero play backgammon RUN_DIR` (turbozero.play): a person against a run's agent, driven
by scripted input through the command line and through the game loop's read/write callables."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

from envs import backgammon as bg
from envs.backgammon.moves_text import MOVE_TEXT
from turbozero import cli
from turbozero.play import _agent_turn, _human_turn, load_agent, play_game
from turbozero.presets import get_preset
from turbozero.training import Trainer
from turbozero.training.run_config import with_overrides

SMALL = {"num_envs": 2, "replay_capacity": 4, "collect_steps": 2, "train_steps": 1,
         "batch_size": 2, "eval_every": 0, "eval_opponents": ()}
PROMPT = re.compile(r"your move \(\d-\d\)> ")


def _saved_run(path, preset: str) -> str:
    """A run directory as the Trainer writes it (marker, stored config, an orbax checkpoint)
    for a backgammon preset, shrunk; its state saved before any iteration (an iteration would
    add a minute of compiling self-play: the loop reads the network alone either way)."""
    trainer = Trainer(with_overrides(get_preset("backgammon", preset), SMALL), str(path))
    trainer.run_dir.save(0, trainer.state)
    trainer.run_dir.close()
    return str(path)


@pytest.fixture(scope="module")
def td_run(tmp_path_factory):
    return _saved_run(tmp_path_factory.mktemp("play") / "td", "td")


@pytest.fixture(scope="module")
def az_run(tmp_path_factory):
    return _saved_run(tmp_path_factory.mktemp("play") / "az", "az-tiny")


@pytest.fixture(scope="module")
def agent(td_run):
    return load_agent("backgammon", td_run)


def _opening_moves(agent, seed):
    """The legal moves of the opening of `--seed seed`, as the game writes them."""
    state = agent.init(jax.random.PRNGKey(seed))
    moves, _, _ = agent.list_moves(state)
    rows = np.asarray(moves.actions)[np.asarray(moves.valid)]
    return [MOVE_TEXT.describe(state, a) for a in rows]


def _run_cli(argv, text, monkeypatch, capsys):
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code = cli.main(argv)
    return code, capsys.readouterr()


def test_cli_answers_bad_lines_with_one_line_and_plays_a_legal_move(az_run, agent, monkeypatch,
                                                                    capsys):
    """On an AlphaZero preset's run: an illegal move, a malformed one and a command each get one
    line and a new prompt; a legal move is played; the end of input ends the game with code 0."""
    legal = _opening_moves(agent, 5)  # the opening: env.init(PRNGKey(seed)), any network
    two_parts = next(m for m in legal if " " in m)
    half = two_parts.split()[0]  # one die of an opening roll: never a complete move
    typed = [half, "8/x", "1/off", "", two_parts]
    code, out = _run_cli(["play", "backgammon", az_run, "--seed", "5", "--human-first"],
                         "\n".join(typed) + "\n", monkeypatch, capsys)
    assert code == 0 and out.err == ""
    answers = PROMPT.split(out.out)[1:]  # what follows each prompt, up to the next one
    assert answers[0].startswith(f"illegal: {half} is not a legal complete move for ")
    assert "; legal moves include " in answers[0] and answers[0].count("\n") == 1
    assert answers[1] == "not a move: '8/x': 'x' is not a point (1-24, bar or off)\n"
    assert answers[2].startswith("illegal: 1/off: no checker of yours on 1; legal moves ")
    assert answers[3] == ""  # an empty line: the prompt again
    assert answers[4].startswith(f"you play {two_parts}\nagent rolls ")
    assert out.out.rstrip().endswith("end of input; game abandoned")
    assert "Traceback" not in out.out


def test_cli_quit_and_flags(td_run, monkeypatch, capsys):
    code, out = _run_cli(["play", "backgammon", td_run, "--seed", "2", "--agent-first"],
                         "quit\n", monkeypatch, capsys)
    assert code == 0
    lines = out.out.splitlines()
    assert lines[2].endswith("the agent moves first")
    assert lines[3].startswith("agent rolls ") and "its equity " in lines[3]
    assert out.out.rstrip().endswith("quit; game abandoned")


def test_cli_refuses_a_run_of_another_game(monkeypatch, capsys):
    run = os.path.join(os.path.dirname(__file__), "data", "ttt_run")
    code, out = _run_cli(["play", "backgammon", run], "", monkeypatch, capsys)
    assert code == 2
    assert out.err.strip() == f"turbozero: error: {run} is a run of pgx/tic_tac_toe, not backgammon"


def test_ctrl_c_ends_without_a_traceback(agent):
    out = []

    def interrupted(prompt):
        raise KeyboardInterrupt

    assert play_game(agent, MOVE_TEXT, seed=0, first="human", read=interrupted,
                     write=out.append) == 0
    assert out[-1] == "\ninterrupted; game abandoned"
    with pytest.raises(ValueError, match="first must be None, 'human' or 'agent'"):
        play_game(agent, MOVE_TEXT, seed=0, first="me", read=interrupted, write=out.append)


def test_a_whole_game_to_its_end(agent):
    """The person's side typed from the game's own 'moves' list (always its first move), with
    'hint', 'board' and 'help' asked on the way: the game ends with its result."""
    out: list[str] = []
    asked = {"n": 0}

    def person(prompt):
        asked["n"] += 1
        if asked["n"] <= 3:
            return ("hint", "board", "help")[asked["n"] - 1]
        if not out[-1].split(":")[0].endswith("legal moves"):
            return "moves"
        return out[-1].split(": ", 1)[1].split(", ")[0]

    assert play_game(agent, MOVE_TEXT, seed=11, first="agent", read=person,
                     write=out.append) == 0
    text = "\n".join(out)
    assert out[0].startswith("turbozero play: you are player ")
    assert re.search(r"^hint \(0 plies, equity for you\): 1\. \S.* [+-]\d\.\d{3}(; \d\. .*)?$",
                     text, re.M)
    assert text.count("you play ") > 5 and text.count("agent rolls ") > 5
    played = re.findall(r"^agent rolls \d-\d and plays (\S.*) \(from your side; (\S.*) from "
                        r"its own\); its equity [+-]\d\.\d{3} \(0 plies\)$", text, re.M)
    assert len(played) > 5
    for yours, its in played:  # the same move, each point n of one side 25 - n of the other
        assert MOVE_TEXT.mirror(its) == yours and MOVE_TEXT.mirror(yours) == its
    end = out[-1]
    m = re.fullmatch(r"game over: (you win|the agent wins) a (single game|gammon|backgammon), "
                     r"([+-]\d) points for you", end)
    assert m, end
    points = {"single game": 1, "gammon": 2, "backgammon": 3}[m.group(2)]
    assert int(m.group(3)) == (points if m.group(1) == "you win" else -points)
    # was "X is the winner" under the board, X being whoever won (the agent, at times, one
    # line before "the agent wins"): the board names no colour, the last line says who
    assert "winner" not in text.replace("drawn from the winner's side", "")
    assert out[-2].endswith("(the final board, drawn from the winner's side)")


def test_no_legal_move_and_a_forced_one_are_played_without_asking(agent):
    """X on the bar against a closed board: no move, the turn passes (for either side); one
    entry point open and nothing else playable: the only move is played and said."""
    # gnubg pairs (opponent, on roll), each side's own points 1-24 then its bar: O holds its
    # points 1-6 (where X enters: X's 24-19), X has one checker on the bar, 14 on its 5 point
    me = (0,) * 4 + (14,) + (0,) * 19 + (1,)
    state = bg.from_gnubg_board(((2, 2, 2, 2, 2, 3) + (0,) * 18 + (2,), me), (6, 5))
    out: list[str] = []

    def never(prompt):
        raise AssertionError("asked for a move")

    after = _human_turn(agent, MOVE_TEXT, state, never, out.append)
    assert out[-1] == "you roll 6-5: no legal move, the turn passes"
    assert bool(after.is_chance) and int(after.current_player) == 1 - int(state.current_player)
    out.clear()
    _agent_turn(agent, MOVE_TEXT, state, out.append)
    assert out == ["agent rolls 6-5: no legal move"]
    # O's 1 point open: the 1 enters (bar/24); the 5 then has no move (24/19 is blocked, and
    # the checkers on 5 cannot bear off while one is out of the home board)
    state = bg.from_gnubg_board(((0, 2, 2, 2, 2, 2) + (0,) * 18 + (5,), me), (5, 1))
    out.clear()
    _human_turn(agent, MOVE_TEXT, state, never, out.append)
    assert out[-1] == "you roll 5-1: your only legal move is bar/24, played for you"


def test_hint_lists_the_best_moves_with_their_equities(agent):
    """`hint`: the best few complete moves, best first, the first the agent's own 0-ply choice
    (`hint 1`, the same candidates valued by the average over the opponent's 21 rolls of minus
    its best 0-ply reply, is checked roll by roll in the slow test below)."""
    from turbozero.play import HINT_MOVES, _hint

    state = agent.init(jax.random.PRNGKey(4))
    moves, slots, values = agent.rank(state, 0)
    slots, values = np.asarray(slots), np.asarray(values)
    _, chosen, value = agent.list_moves(state)
    # the same network on the same afterstate, in calls of different row counts (the hint
    # lists HUMAN_MAX_AFTERSTATES slots, the agent its own M, each valuing its valid slots
    # packed): float32 sums in another order, so equal to float32 noise, not bit for bit
    assert int(slots[0]) == int(chosen) and float(values[0]) == pytest.approx(float(value),
                                                                              abs=1e-5)
    assert len(slots) == HINT_MOVES and np.all(np.diff(values) <= 0)
    line = _hint(agent, MOVE_TEXT, state, "hint")
    actions = np.asarray(moves.actions)
    assert line == "hint (0 plies, equity for you): " + "; ".join(
        f"{i + 1}. {MOVE_TEXT.describe(state, actions[int(k)])} {float(v):+.3f}"
        for i, (k, v) in enumerate(zip(slots, values)))
    assert _hint(agent, MOVE_TEXT, state, "hint 2").startswith("not a hint: 'hint 2'")


@pytest.mark.slow  # compiling the 1-ply ranking: ~40 s on 2 loaded cores
def test_hint_at_one_ply_averages_the_opponents_replies(agent):
    from turbozero.play import _hint

    state = agent.init(jax.random.PRNGKey(4))
    _, slots, _ = agent.rank(state, 0)
    slots = np.asarray(slots)
    # 1 ply, by hand for the best of them
    moves1, slots1, values1 = agent.rank(state, 1)
    assert set(np.asarray(slots1).tolist()) == set(slots.tolist())
    k = int(np.asarray(slots1)[0])
    after = jax.tree_util.tree_map(lambda x: x[k], moves1.states)
    probs = np.asarray(agent.outcome_probs(after))
    expected = 0.0
    for o in np.flatnonzero(probs):
        rolled = agent.roll(after, int(o))
        _, _, reply = agent.rank(rolled, 0)
        expected += probs[o] * -float(np.asarray(reply)[0])
    assert float(np.asarray(values1)[0]) == pytest.approx(expected, abs=1e-5)
    assert np.all(np.diff(np.asarray(values1)) <= 0)
    assert _hint(agent, MOVE_TEXT, state, "hint 1").startswith("hint (1 plies, equity for you)")


@pytest.mark.slow
def test_trained_run_through_a_pipe_at_one_ply(tmp_path):
    """`turbozero train` (the td preset, one iteration, shrunk) then `turbozero play` as a
    separate process reading a pipe: the agent opens at 1 ply, the person lists the moves and
    quits."""
    env = dict(os.environ, TURBOZERO_JAX_CACHE=jax.config.jax_compilation_cache_dir)
    run = str(tmp_path / "run")
    train = [sys.executable, "-m", "turbozero.cli", "train", "backgammon", "--preset", "td",
             "--iterations", "1", "--run-dir", run, "--no-progress"]
    for key, value in SMALL.items():
        train += ["--set", f"{key}={','.join(value) if isinstance(value, tuple) else value}"]
    subprocess.run(train, check=True, env=env, capture_output=True, timeout=900)
    out = subprocess.run([sys.executable, "-m", "turbozero.cli", "play", "backgammon", run,
                          "--plies", "1", "--seed", "4", "--agent-first"], input="moves\nquit\n",
                         env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "network at iteration 1, 1 plies" in out.stdout
    assert re.search(r"^agent rolls \d-\d and plays .*\(1 plies\)$", out.stdout, re.M)
    assert re.search(r"> \d+ legal moves: ", out.stdout)
    assert out.stdout.rstrip().endswith("quit; game abandoned")
