"""Start-up time of `turbozero train`: cold and warm compilation cache, per preset, and where a
warm start's seconds go. Feeds docs/benchmarks.md, "Start-up and compile time" (issue 34, item 5).

    python benchmarks/throughput/startup.py presets [--games chess backgammon ...] [--preset tiny]
    python benchmarks/throughput/startup.py breakdown [--game chess --preset tiny]

presets: for each game, `turbozero train GAME --preset P --iterations 1` (evaluation and
checkpoints off) run twice as a fresh process on a fresh cache directory: cold (empty cache),
then warm (the cache the first run wrote). Reported: wall seconds from the command's start to
its exit after iteration 1, and the cache's entries.
breakdown: the same warm start in this process, step by step: imports, building the Trainer
(its state in one jitted call), then the self-play function's trace, lowering, compile (a
cache load when warm) and run, and the training updates (trace, load and run together).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cli(game: str, preset: str, cache: str, run_dir: str) -> float:
    cmd = [sys.executable, "-m", "turbozero.cli", "train", game, "--preset", preset,
           "--iterations", "1", "--run-dir", run_dir, "--no-progress", "--overwrite",
           "--set", "eval_every=0", "--set", "checkpoint_every=0"]
    env = dict(os.environ, TURBOZERO_JAX_CACHE=cache)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return seconds


def presets(games, preset: str) -> None:
    print(f"| game | preset | cold s | warm s | cache entries | (load {os.getloadavg()[0]:.1f})")
    print("| --- | --- | --- | --- | --- |")
    for game in games:
        with tempfile.TemporaryDirectory() as tmp:
            cache = os.path.join(tmp, "cache")
            cold = run_cli(game, preset, cache, os.path.join(tmp, "run1"))
            warm = run_cli(game, preset, cache, os.path.join(tmp, "run2"))
            print(f"| {game} | {preset} | {cold:.1f} | {warm:.1f} | {len(os.listdir(cache))} |",
                  flush=True)


def breakdown(game: str, preset: str) -> None:
    t0 = time.perf_counter()
    from turbozero.compile_cache import enable_compilation_cache

    enable_compilation_cache()
    import jax

    from turbozero.presets import get_preset
    from turbozero.training import Trainer

    cfg = get_preset(game, preset, eval_every=0, checkpoint_every=0, num_iterations=1)
    t1 = time.perf_counter()
    trainer = Trainer(cfg)
    jax.block_until_ready(trainer.state)
    t2 = time.perf_counter()
    traced = trainer._collect.trace(trainer.state)
    t3 = time.perf_counter()
    lowered = traced.lower()
    t4 = time.perf_counter()
    compiled = lowered.compile()
    t5 = time.perf_counter()
    state, stats = compiled(trainer.state)
    jax.block_until_ready(state)
    t6 = time.perf_counter()
    trainer.state = state
    trainer.state, metrics = trainer._train(trainer.state)
    jax.block_until_ready(metrics)
    t7 = time.perf_counter()
    parts = [("imports", t1 - t0), ("Trainer built", t2 - t1), ("self-play trace", t3 - t2),
             ("self-play lower", t4 - t3), ("self-play compile / cache load", t5 - t4),
             ("self-play run", t6 - t5), ("training: trace, load, run", t7 - t6)]
    print(f"{game} {preset}, cache {jax.config.jax_compilation_cache_dir}, "
          f"load {os.getloadavg()[0]:.1f}")
    print("| part | s |\n| --- | --- |")
    for name, sec in parts:
        print(f"| {name} | {sec:.1f} |")
    print(f"| all | {t7 - t0:.1f} |")


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
