"""Start-up time of `turbozero train`: cold and warm compilation cache, per preset, and where a
warm start's seconds go. Feeds docs/benchmarks.md, "Start-up and compile time" (issue 34, item 5).

    python benchmarks/throughput/startup.py presets [--games chess backgammon ...] [--preset tiny]
    python benchmarks/throughput/startup.py breakdown [--game chess --preset tiny]

presets: for each game, `turbozero train GAME --preset P --iterations 1` (evaluation and
checkpoints off) run twice as a fresh process on a fresh cache directory: cold (empty cache),
then warm (the cache the first run wrote, and the functions it stored lowered,
turbozero/stored_functions.py; TURBOZERO_STORED_FUNCTIONS=none in the environment measures
without them). Reported: wall seconds from the command's start to its exit after iteration 1,
the command's CPU seconds (user + system), and the cache's entries.
breakdown: the same warm start in this process, step by step: imports, building the Trainer
(its state in one jitted call), then the self-play function: loading its stored export
(turbozero/stored_functions.py; exporting and storing it when there is none), the trace and
lowering of the call (of the stored export's small call, or of the whole function where
stored functions are off: TURBOZERO_STORED_FUNCTIONS=none), compile (a cache load when warm)
and run, and the training updates (trace or load, lowering, cache load and run together).
Wall and CPU seconds (CPU seconds are the figure to read on a loaded machine).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cli(game: str, preset: str, cache: str, run_dir: str) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the child's own) of one command."""
    cmd = [sys.executable, "-m", "turbozero.cli", "train", game, "--preset", preset,
           "--iterations", "1", "--run-dir", run_dir, "--no-progress", "--overwrite",
           "--set", "eval_every=0", "--set", "checkpoint_every=0"]
    env = dict(os.environ, TURBOZERO_JAX_CACHE=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu


def presets(games, preset: str) -> None:
    print(f"| game | preset | cold s (CPU s) | warm s (CPU s) | cache entries | "
          f"(load {os.getloadavg()[0]:.1f})")
    print("| --- | --- | --- | --- | --- |")
    for game in games:
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache")
            cold = run_cli(game, preset, cache, os.path.join(tmp, "run1"))
            warm = run_cli(game, preset, cache, os.path.join(tmp, "run2"))
            print(f"| {game} | {preset} | {cold[0]:.1f} ({cold[1]:.1f}) | {warm[0]:.1f} "
                  f"({warm[1]:.1f}) | {len(os.listdir(cache))} | load {os.getloadavg()[0]:.1f}",
                  flush=True)


def breakdown(game: str, preset: str) -> None:
    clock = lambda: (time.perf_counter(), time.process_time())  # noqa: E731
    marks = [("start", clock())]
    from turbozero.compile_cache import enable_compilation_cache

    enable_compilation_cache()
    import jax

    from turbozero.presets import get_preset
    from turbozero.training import Trainer

    cfg = get_preset(game, preset, eval_every=0, checkpoint_every=0, num_iterations=1)
    marks.append(("imports", clock()))
    trainer = Trainer(cfg)
    jax.block_until_ready(trainer.state)
    marks.append(("Trainer built", clock()))
    collect = trainer._collect
    if hasattr(collect, "loaded"):  # a stored function (turbozero/stored_functions.py)
        call = collect._resolve((trainer.state,))
        marks.append(("self-play: key, then load (hit) or export and store (miss)", clock()))
        what = "loaded" if collect.loaded else "exported now"
    else:
        call, what = collect, "stored functions off"
    traced = call.trace(trainer.state)
    marks.append(("self-play trace" + (" (of the stored call)" if call is not collect else ""),
                  clock()))
    lowered = traced.lower()
    marks.append(("self-play lower to StableHLO", clock()))
    compiled = lowered.compile()
    marks.append(("self-play compile / cache load", clock()))
    state, stats = compiled(trainer.state)
    jax.block_until_ready(state)
    marks.append(("self-play run", clock()))
    trainer.state = state
    trainer.state, metrics = trainer._train(trainer.state)
    jax.block_until_ready(metrics)
    marks.append(("training: trace (or load), lower, cache load, run", clock()))
    print(f"{game} {preset}, cache {jax.config.jax_compilation_cache_dir}, self-play function "
          f"{what}, load {os.getloadavg()[0]:.1f}")
    print("| part | wall s | CPU s |\n| --- | --- | --- |")
    for (name, (w, c)), (_, (w0, c0)) in zip(marks[1:], marks):
        print(f"| {name} | {w - w0:.2f} | {c - c0:.2f} |")
    (w0, c0), (w1, c1) = marks[0][1], marks[-1][1]
    print(f"| all | {w1 - w0:.2f} | {c1 - c0:.2f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["presets", "breakdown"])
    p.add_argument("--games", nargs="+",
                   default=["backgammon", "chess", "gomoku", "pacosako", "pyrat"])
    p.add_argument("--game", default="chess")
    p.add_argument("--preset", default="tiny")
    a = p.parse_args()
    if a.what == "presets":
        presets(a.games, a.preset)
    else:
        breakdown(a.game, a.preset)


if __name__ == "__main__":
    main()
