"""Command line: `turbozero train <game> --preset tiny`, `turbozero eval <run_dir>`,
`turbozero plot <run_dir>`."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
import textwrap
import time
import warnings
from typing import Optional, Sequence

import jax
from tqdm.auto import tqdm

from turbozero import presets
from turbozero.compile_cache import enable_compilation_cache
from turbozero.games import GAMES, game_hook, game_spec
from turbozero.play import load_agent, move_text_for, play_game, playable_games
from turbozero.runs import evaluation_config, load_run_config
from turbozero.search.checks import evaluator_error_line
from turbozero.training import Trainer, distributed, report
from turbozero.training.algorithms import tree_config
from turbozero.training.checkpoints import (load_checkpoint, newest_whole_step, restore_network,
                                            write_json_atomic)
from turbozero.training.loop import TrainingInterrupted
from turbozero.training.evaluation import check_duplicate_games
from turbozero.training.metrics import plot_metrics
from turbozero.training.nonfinite import NonFiniteTraining
from turbozero.training.run_config import parse_overrides, with_overrides
from turbozero.validation import check_int

DEFAULT_PRESET = "tiny"


def games_with_presets() -> list[str]:
    return [g for g in sorted(GAMES) if presets.available_presets(g)]


def check_opponents(game: str, opponents: Sequence[str]) -> None:
    """Fail before any training or compiling when an opponent cannot play: an opponent beyond
    the baselines is registered by its game (`GameSpec.referees`) with the package it needs."""
    referees = {r.name: r for r in game_spec(game).referees}
    registered = {o.name for o in game_spec(game).opponents}
    for opp in opponents:
        if opp in ("random", "greedy") or (opp in registered and opp not in referees):
            continue
        if opp not in referees:
            raise ValueError(f"the {opp} opponent does not play {game}; choose from random, "
                             f"greedy{''.join(', ' + n for n in sorted(registered - {'greedy'}))}")
        try:
            __import__(referees[opp].module)
        except ImportError:
            raise ValueError(f"the {opp} opponent needs the {referees[opp].module} package: "
                             f"{referees[opp].install}") from None


def check_duplicate(game: str, opponents: Sequence[str], games: int,
                    duplicate: Optional[bool] = None,
                    fix: str = "--games N with N even, or --no-duplicate for independent "
                               "games") -> None:
    """Fail before any training or compiling where duplicate games cannot be played
    (`evaluation.check_duplicate_games`, which the Python API asks too, in the CLI's words)."""
    check_duplicate_games({o.name for o in game_spec(game).opponents if o.duplicate},
                          opponents, games, duplicate, fix=fix, independent="--no-duplicate")


def skipped_opponent_notes(args: argparse.Namespace, preset: str) -> list[str]:
    """One line for each opponent the preset evaluates against only where its package is
    installed (`presets.missing_opponents`) that this run leaves out; none when the run's
    opponents come from elsewhere (--resume, --set eval_opponents=...)."""
    if args.resume or any(s.split("=", 1)[0].strip() == "eval_opponents"
                          for s in args.set or []):
        return []
    return [f"{name}: not installed, so not an evaluation opponent ({install} adds it)"
            for name, install in presets.missing_opponents(args.game, preset)]


def _recorded_preset(run_dir: str) -> Optional[str]:
    """The preset `turbozero train` recorded in the run's cli.json (None for runs made from
    Python)."""
    path = os.path.join(run_dir, "cli.json")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f).get("preset")


def train_config(args: argparse.Namespace):
    """The config `turbozero train` runs: the preset's (or, with --resume, the run's stored
    one) with --set / --iterations / --seed applied, each value checked against its field."""
    if args.resume and args.overwrite:
        raise ValueError("--resume and --overwrite exclude each other: --resume continues the "
                         "run in --run-dir, --overwrite starts it again from iteration 1")
    if args.overwrite and args.run_dir is None:
        raise ValueError("--overwrite needs --run-dir DIR, the run to replace")
    if args.resume:
        if args.run_dir is None:
            raise ValueError("--resume needs --run-dir DIR, the run to continue")
        base = load_run_config(args.run_dir)  # a missing directory is an error here
        if base.game != args.game:
            raise ValueError(f"{args.run_dir} is a run of {base.game}, not {args.game}")
        if args.preset is not None and args.preset != _recorded_preset(args.run_dir):
            raise ValueError(f"--preset {args.preset}: {args.run_dir} was not made with that "
                             "preset; --resume continues the run's stored config (change "
                             "fields with --set)")
    else:
        base = presets.get_preset(args.game, args.preset or DEFAULT_PRESET)
    overrides = parse_overrides(base, args.set or [])
    if args.iterations is not None:
        overrides["num_iterations"] = args.iterations
    if args.seed is not None:
        overrides["seed"] = args.seed
    return with_overrides(base, overrides)


def _join_processes(args: argparse.Namespace) -> bool:
    """With --distributed or any of its settings, join the run's other processes (before
    anything touches a device); whether it did."""
    if not (args.distributed or args.coordinator is not None or args.num_processes is not None
            or args.process_id is not None):
        return False

    if args.run_dir is None:
        raise ValueError("--run-dir is needed with several processes: they all write one run "
                         "directory (on a file system they share)")
    distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    return True


def _train(args: argparse.Namespace) -> int:
    """Every process of a run trains; only the primary prints and writes cli.json."""
    joined = _join_processes(args)
    if distributed.is_primary():
        code = _train_run(args, True)
    else:
        args.no_progress = True
        with open(os.devnull, "w", encoding="utf-8") as quiet, contextlib.redirect_stdout(quiet):
            code = _train_run(args, False)
    if joined:  # every process arrives here after the same last checkpoint
        distributed.shutdown()
    return code


def _train_run(args: argparse.Namespace, primary: bool) -> int:
    if args.run_dir is not None:  # before anything is built: a mistake costs no compile
        check_writable_dir(args.run_dir, "--run-dir")
    config = train_config(args)
    if args.resume:  # nothing to train: said before the run directory is opened, so untouched
        done = newest_whole_step(args.run_dir)
        if done is not None and done >= config.num_iterations:
            print(f"{args.run_dir} has done {done} iterations (its newest checkpoint), "
                  f"{config.num_iterations} asked: nothing to train and nothing changed; "
                  f"--iterations N (N > {done}) trains it on")
            return 0
    check_opponents(config.game, config.eval_opponents)
    if config.eval_every:
        check_duplicate(config.game, config.eval_opponents, config.eval_games,
                        fix="--set eval_games=N with N even")
    preset = args.preset or DEFAULT_PRESET
    notes = skipped_opponent_notes(args, preset)
    run_dir = args.run_dir or os.path.join(
        "runs", f"{args.game.replace('/', '_')}-{preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    if args.run_dir is None:
        check_writable_dir(run_dir, "the run directory")
    trainer = Trainer(config, run_dir, resume=args.resume, overwrite=args.overwrite,
                      tensorboard=args.tensorboard)
    if not args.resume and primary:  # the command that made the run; the config is in the marker
        write_json_atomic(os.path.join(trainer.run_dir.path, "cli.json"),
                          {"game": args.game, "preset": preset, "set": args.set or [],
                           "iterations": args.iterations, "seed": args.seed})
    print(f"run directory: {trainer.run_dir.path}")
    if trainer.run_dir.replaced:  # --overwrite: what of the old run is gone
        print(f"--overwrite removed the run that was there: {', '.join(trainer.run_dir.replaced)}")
    for note in notes:
        print(note)
    if int(trainer.state.iteration) >= config.num_iterations:
        print(f"the run has done {int(trainer.state.iteration)} iterations, "
              f"{config.num_iterations} asked; --iterations N (N > "
              f"{int(trainer.state.iteration)}) trains it on")
        _close(trainer)
        return 0
    if trainer.tensorboard is not None:
        print(f"tensorboard: tensorboard --logdir {trainer.tensorboard.log_dir}")
    print(report.explain_losses(config.algorithm.search))  # the numbers the bar and the summary show
    trained: list[dict] = []
    evaluated: list[dict] = []

    def on_record(record: dict) -> None:
        if "loss" in record:
            trained.append(record)
        if report.eval_results(record):
            if args.no_progress and not evaluated:  # with a progress bar, Trainer.run says it
                print(report.explain_evaluation(
                    [report.describe_opponent(opp, trainer.env) for opp in config.eval_opponents]))
            evaluated.append(record)
            # the last iteration's evaluation is the summary's, printed once below (it was
            # printed here too, the same lines twice a few lines apart)
            if record["iteration"] != config.num_iterations:
                tqdm_write(report.format_iteration(record))

    try:
        trainer.run(progress=not args.no_progress, callback=on_record,
                    stop_on_nonfinite=not args.allow_nonfinite)
    except NonFiniteTraining as stop:  # nothing learned: one line, exit 1, the run resumable
        _close(trainer)
        if evaluated and evaluated[-1]["iteration"] == config.num_iterations:
            tqdm_write(report.format_iteration(evaluated[-1]))  # held back for the summary
        print(f"turbozero: {stop.message()}", file=sys.stderr)
        return 1
    except jax.errors.JaxRuntimeError:  # main() says it (the evaluator check's line)
        _close(trainer)
        raise
    except TrainingInterrupted as stop:  # Ctrl-C: the run is left resumable, one line says how
        _close(trainer)
        line = f"turbozero: {stop.message()}"
        if stop.checkpoint is not None:
            line += (f": turbozero train {args.game} --resume --run-dir "
                     f"{shlex.quote(trainer.run_dir.path)}")
        print(line, file=sys.stderr)
        return 130
    _close(trainer)
    if trained:
        k = max(1, min(3, len(trained) // 3))
        for name in [n for n in report.LOSS_PARTS_ORDER if all(n in r for r in trained)]:
            first = sum(r[name] for r in trained[:k]) / k
            end = sum(r[name] for r in trained[-k:]) / k
            print(f"{name}: {first:.4f} -> {end:.4f} (mean of the first / last {k} trained iterations)")
    else:
        print(report.NOT_TRAINED)
    if evaluated:
        print(f"evaluation at iteration {evaluated[-1]['iteration']}:")
        for opp, result in report.eval_results(evaluated[-1]).items():
            print(f"  {report.format_match(opp, result)}")
    print(f"metrics: {trainer.run_dir.metrics_path}")
    return 0


def _close(trainer) -> None:
    """The run directory's checkpoint manager and the TensorBoard writer, closed."""
    trainer.run_dir.close()
    if trainer.tensorboard is not None:
        trainer.tensorboard.close()


def tqdm_write(msg: str) -> None:
    tqdm.write(msg)


def _eval(args: argparse.Namespace) -> int:
    # any run directory: made by `turbozero train` or by `Trainer(config, run_dir)` in Python;
    # --set (e.g. a larger evaluation search) is seen by this evaluation only
    check_path(args.run_dir, "RUN_DIR", want="dir")
    config = evaluation_config(args.run_dir, args.games, args.set or ())
    check_opponents(config.game, [args.opponent])
    duplicate = False if args.no_duplicate else None  # None: the opponent's default
    check_duplicate(config.game, [args.opponent], config.eval_games, duplicate)
    trainer = Trainer(config)  # no run directory: evaluating reads the run, never writes it
    # the network only: a run saved by another version (other replay fields) still evaluates
    trainer.state, _ = load_checkpoint(args.run_dir, trainer.state, restore_network)
    iteration = int(trainer.state.iteration)
    # games over / games, on stderr (a terminal only: tqdm's disable=None), or the wait for a
    # long match looks like a hang
    bar = report.tqdm_class()(total=config.eval_games, unit="game", leave=False,
                              desc=f"iteration {iteration} vs {args.opponent}",
                              disable=True if args.no_progress else None)

    def progress(finished: int, games: int, steps: int) -> None:
        bar.update(finished - bar.n)
        bar.set_postfix_str(f"move {steps}")

    try:
        result = trainer.evaluate(args.opponent, progress=progress, duplicate=duplicate)
    finally:
        bar.close()
    if args.json:
        print(json.dumps({"iteration": iteration, "opponent": args.opponent, **result}))
    else:
        print(report.format_eval({args.opponent: result}, iteration, args.run_dir, trainer.env))
    return 0


def _play(args: argparse.Namespace) -> int:
    text = move_text_for(args.game)  # before loading: a game without move text fails at once
    check_path(args.run_dir, "RUN_DIR", want="dir")
    if args.seed is not None:  # before the agent is loaded
        check_int("--seed", args.seed, minimum=0)
    first = "human" if args.human_first else "agent" if args.agent_first else None
    return play_game(load_agent(args.game, args.run_dir, args.plies), text, seed=args.seed,
                     first=first)


def _error_rate(args: argparse.Namespace) -> int:
    game = load_run_config(args.run_dir).game
    report_fn = game_hook(game, "error_rate", f"{args.run_dir} is a run of {{game}}, which has "
                          "no error-rate analysis (games with one: {games})")
    bar = report.tqdm_class()(total=args.positions, unit="position", leave=False,
                              desc="judging", disable=True if args.no_progress else None)

    def progress(done: int, total: int) -> None:
        bar.update(done - bar.n)

    try:
        text = report_fn(args.run_dir, positions=args.positions, seed=args.seed,
                         judge_plies=args.judge_plies, plies=args.plies, as_json=args.json,
                         cache=not args.no_cache, progress=progress)
    finally:
        bar.close()
    print(text)
    return 0


def _notes(title: str, notes: dict) -> str:
    """A help section: one wrapped paragraph per note."""
    return title + "\n" + "\n".join(
        textwrap.fill(f"{k}: {v}", width=94, initial_indent="  ", subsequent_indent="    ")
        for k, v in notes.items())


OPPONENT_NOTES = {name: text.split(" = ", 1)[1] for name, text in
                  report.GENERIC_OPPONENTS.items()}
OPPONENT_NOTES["gnubg, material, stockfish"] = (
    "what a game registers (backgammon: GNU Backgammon at 0-ply; chess: 1-ply material greedy, "
    "Stockfish skill 0 depth 1); the first evaluation prints what each opponent is")
TRAIN_EPILOG = "\n\n".join([
    _notes("the loss parts (the progress bar, metrics.jsonl, the summary at the end):",
           {"loss": "policy_loss + value_loss for AlphaZero; MuZero (gomoku) weights its "
                    "parts, printed at the start of the run", **report.LOSS_PARTS}),
    _notes("evaluation opponents:", OPPONENT_NOTES),
    _notes("evaluation results:", report.COLUMNS),
    "Ctrl-C stops the run resumable: the last completed iteration is saved as a checkpoint,\n"
    "and one line gives the command that resumes it (turbozero train GAME --resume --run-dir RUN)."])
EVAL_EPILOG = "\n\n".join([_notes("opponents:", OPPONENT_NOTES),
                            _notes("columns:", report.COLUMNS)])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="turbozero", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    games = games_with_presets()
    t = sub.add_parser("train", help="train a game with a preset",
                       description="Train GAME with a preset; `turbozero presets GAME` lists "
                       "the presets with their sizes and times.",
                       epilog=TRAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    t.add_argument("game", metavar="GAME", choices=games, help="one of: " + ", ".join(games))
    t.add_argument("--preset", default=None,
                   help=f"preset name (default: {DEFAULT_PRESET}; with --resume: the run's own "
                   "stored config)")
    t.add_argument("--run-dir", default=None, help="default: runs/<game>-<preset>-<time>")
    t.add_argument("--resume", action="store_true",
                   help="continue the run in --run-dir (which must exist) from its newest "
                   "intact checkpoint, with the config it stored")
    t.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --run-dir (its checkpoints, metrics and "
                   "config) with a new one; without it such a run directory is refused")
    t.add_argument("--iterations", type=int, default=None, help="set num_iterations")
    t.add_argument("--seed", type=int, default=None)
    t.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a config field, checked against its type; repeatable. "
                   "Nested: search.num_simulations=16; tuples: eval_opponents=random,greedy; "
                   'dicts merge: network={"num_filters": 8} or network.num_filters=8')
    t.add_argument("--no-progress", action="store_true",
                   help="no progress bar (the evaluations still print one line per opponent)")
    t.add_argument("--allow-nonfinite", action="store_true",
                   help="train on through iterations whose every update was skipped as "
                   "non-finite (NaN or infinite loss, gradients or parameters); without it "
                   "the run stops after the first such iteration")
    t.add_argument("--tensorboard", action="store_true",
                   help="also write the metrics as TensorBoard events to RUN_DIR/tensorboard/ "
                   "(needs the tensorboard extra: pip install -e \".[tensorboard]\"); "
                   "give it again with --resume")
    d = t.add_argument_group(
        "several processes (jax.distributed; docs/training.md, \"Several processes and machines\")")
    d.add_argument("--distributed", action="store_true",
                   help="join a run of several processes: settings from the options below, else "
                   "JAX_COORDINATOR_ADDRESS / JAX_NUM_PROCESSES / JAX_PROCESS_ID, else JAX's "
                   "cluster detection (Slurm, Open MPI); needs --run-dir")
    d.add_argument("--coordinator", default=None, metavar="HOST:PORT",
                   help="process 0's address and a free port (implies --distributed)")
    d.add_argument("--num-processes", type=int, default=None, metavar="N")
    d.add_argument("--process-id", type=int, default=None, metavar="I", help="0 .. N-1")
    t.set_defaults(func=_train)
    e = sub.add_parser("eval", help="play a checkpoint against a baseline",
                       description="Play the newest checkpoint of RUN_DIR against an opponent.",
                       epilog=EVAL_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("run_dir")
    e.add_argument("--opponent", default="random",
                   help="random, greedy, or an opponent the game registers (gnubg for "
                        "backgammon, an optional extra); checked against the run's game")
    e.add_argument("--games", type=int, default=None)
    e.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a field of the run's config for this evaluation only, e.g. "
                        "eval_search.num_simulations=512 (the run directory is not changed)")
    e.add_argument("--no-duplicate", action="store_true",
                   help="independent games against an opponent that plays duplicate games by "
                        "default (each chance sequence played twice with the seats swapped, the "
                        "standard error taken over the pairs; docs/learning.md)")
    e.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    e.add_argument("--no-progress", action="store_true",
                   help="no progress bar of the games (shown on a terminal only)")
    e.set_defaults(func=_eval)
    y = sub.add_parser("play", help="play a run's agent yourself, typing moves in the terminal",
                       description="Play GAME against the newest checkpoint of RUN_DIR: the "
                       "complete-move player over its network (docs/backgammon.md, 'Play it').")

    y.add_argument("game", metavar="GAME", choices=playable_games(),
                   help="one of: " + ", ".join(playable_games()))
    y.add_argument("run_dir", metavar="RUN_DIR")
    y.add_argument("--plies", type=int, choices=(0, 1, 2), default=0,
                   help="the agent's look-ahead over the dice (default 0: its network alone)")
    y.add_argument("--seed", type=int, default=None, help="dice and opening (default: random)")
    y_first = y.add_mutually_exclusive_group()
    y_first.add_argument("--human-first", action="store_true", help="you play the opening roll")
    y_first.add_argument("--agent-first", action="store_true",
                         help="the agent plays the opening roll (default: the roll decides)")
    y.set_defaults(func=_play)
    r = sub.add_parser("error-rate", help="a run's error rate judged by its game's referee",
                       description="The mean value a run's player loses per decision (x1000), "
                       "judged by the referee its game registers (GameSpec.error_rate) at "
                       "--judge-plies on a fixed, seeded set of positions, beside the "
                       "referee's reference players on the same positions (docs/learning.md).")
    r.add_argument("run_dir", metavar="RUN_DIR")
    r.add_argument("--positions", type=int, default=500,
                   help="decisions in the set (default 500; the set is the same for the same "
                        "--positions and --seed)")
    r.add_argument("--seed", type=int, default=0, help="the position set's seed (default 0)")
    r.add_argument("--judge-plies", type=int, default=2,
                   help="the referee's look-ahead when judging (default 2; a depth the referee "
                        "cannot judge at is refused in one line)")
    r.add_argument("--plies", type=int, choices=(0, 1, 2), default=0,
                   help="the run's player's look-ahead over the dice (default 0)")
    r.add_argument("--json", action="store_true", help="print one JSON object")
    r.add_argument("--no-cache", action="store_true",
                   help="judge every position again (default: the referee's judgments are kept in "
                        "~/.cache/turbozero-error-rate and reused)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    r.set_defaults(func=_error_rate)
    p = sub.add_parser("presets", help="list the presets of a game: sizes and times")
    p.add_argument("game", metavar="GAME", help="one of: " + ", ".join(games))
    p.set_defaults(func=_presets)
    g = sub.add_parser("plot", help="draw a run's curves (loss, win rates, throughput) to a PNG")
    g.add_argument("run_dir")
    g.add_argument("-o", "--output", default=None, help="default: RUN_DIR/metrics.png")
    g.set_defaults(func=_plot)
    return parser


def _plot(args: argparse.Namespace) -> int:
    """A run directory's metrics.jsonl, or a metrics file named itself (as `plot_metrics`
    takes one), drawn to a PNG."""
    check_path(args.run_dir, "RUN_DIR")
    if os.path.isfile(args.run_dir):  # a metrics file: FILE.jsonl -> FILE.png beside it
        path = args.run_dir
        default_out = os.path.splitext(path)[0] + ".png"
    else:
        path = os.path.join(args.run_dir, "metrics.jsonl")
        default_out = os.path.join(args.run_dir, "metrics.png")
        if not os.path.lexists(path):
            raise ValueError(f"{args.run_dir} has no metrics.jsonl (not a run directory, or no "
                             "iteration finished yet)")
        check_path(path, "metrics file", want="file")
    out = args.output or default_out
    check_writable_file(out, "-o" if args.output else "the plot")
    plot_metrics(path, save_to=out)
    print(f"wrote {out}")
    return 0


# ----------------------------------------------------------------- file-system mistakes
def check_path(path: str, what: str, want: Optional[str] = None) -> None:
    """One line naming `path` when it cannot be what `want` says ("file", "dir", or either
    when None): a symlink loop, a file where a folder is meant or the other way round, a
    folder that cannot be read."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return  # the command says what a missing path means to it
    except NotADirectoryError:  # a file on the way: FILE/below
        raise ValueError(f"{what} {path}: its parent {_nearest_existing(path)} is a file, not "
                         "a folder") from None
    except OSError as err:  # a symlink loop (ELOOP), a too long name, ...
        raise ValueError(f"{what} {path}: {err.strerror.lower()}") from None
    if want == "file" and os.path.isdir(path):
        raise ValueError(f"{what} {path} is a folder, not a file")
    if want == "dir" and not os.path.isdir(path):
        raise ValueError(f"{what} {path} is a file, not a folder")
    if os.path.isdir(path) and not os.access(path, os.R_OK | os.X_OK):
        raise ValueError(f"{what} {path}: permission denied (the folder cannot be read)")


def _nearest_existing(path: str) -> str:
    """`path`'s nearest folder (itself or an ancestor) that exists."""
    path = os.path.abspath(path)
    while not os.path.lexists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def check_writable_dir(path: str, what: str) -> None:
    """One line naming the path unless `path` is (or can be made) a folder this process can
    write into: checked before anything is built, so a mistake costs no compile."""
    check_path(path, what, want="dir")
    if os.path.isdir(path):
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"{what} {path}: permission denied (the folder is not writable)")
        return
    base = _nearest_existing(path)
    if not os.path.isdir(base):
        raise ValueError(f"{what} {path}: its parent {base} is a file, not a folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {path} cannot be made: {base} is not writable")


def check_writable_file(path: str, what: str) -> None:
    """One line naming the path unless a file can be written at `path`: its folder exists
    (a plot does not make folders) and is writable, and `path` is not a folder."""
    check_path(path, what, want="file")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ValueError(f"{what} {path}: the folder {os.path.dirname(path) or parent} does "
                         "not exist (make it first)")
    if not os.access(parent, os.W_OK | os.X_OK) or (
            os.path.exists(path) and not os.access(path, os.W_OK)):
        raise ValueError(f"{what} {path}: permission denied (not writable)")


def _simulations(search) -> object:
    """The simulations per move of a search config; "?" when it has none."""
    try:
        return tree_config(search).num_simulations
    except ValueError:
        return "?"


def _presets(args: argparse.Namespace) -> int:
    print(format_presets(args.game))
    return 0


def _sizes(value) -> str:
    """A network option as typed on the command line: (64, 64) -> 64,64."""
    if isinstance(value, (tuple, list)):
        return ",".join(_sizes(v) for v in value)
    return str(value)


def format_presets(game: str) -> str:
    """One line per preset of `game`: its sizes and its wall time on 2 CPU cores."""
    names = presets.available_presets(game)
    if not names:
        raise ValueError(f"no presets for game {game!r}; games with presets: "
                         + ", ".join(games_with_presets()))
    rows = [("preset", "num_envs", "simulations", "iterations", "network",
             "time on 2 CPU cores")]
    for name in names:
        cfg = presets.get_preset(game, name)
        network = " ".join(f"{k}={_sizes(v)}" for k, v in dict(cfg.network).items()) or "default"
        rows.append((name, str(cfg.num_envs), str(_simulations(cfg.algorithm.search)),
                     str(cfg.num_iterations), network,
                     presets.measured_time(game, name)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    return f"{game}\n" + "\n".join(lines)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """Warnings on the command line as one line each, without the source line under them."""
    print(f"turbozero: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    enable_compilation_cache()
    with warnings.catch_warnings():
        warnings.showwarning = _one_line_warning
        try:
            return args.func(args)
        except ValueError as err:
            print(f"turbozero: error: {err}", file=sys.stderr)
            return 2
        except OSError as err:  # a file-system mistake no check above foresaw: one line
            where = f"{err.filename}: " if err.filename else ""
            print(f"turbozero: error: {where}{err.strerror or err}", file=sys.stderr)
            return 2
        except jax.errors.JaxRuntimeError as err:
            line = evaluator_error_line(err)  # TURBOZERO_CHECK_EVALUATOR=1 found a NaN
            if line is None:
                raise
            print(f"turbozero: error: {line}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:  # Ctrl-C outside a training loop (which says more itself)
            print("turbozero: interrupted", file=sys.stderr)
            return 130


if __name__ == "__main__":
    sys.exit(main())
