"""Command line: `turbozero train <game> --preset tiny`, `turbozero eval <run_dir>`."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Optional, Sequence

from turbozero import presets


def _parse_overrides(pairs: Sequence[str]) -> dict:
    """`key=value` pairs (values parsed as JSON when possible) into a dict."""
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise ValueError(f"--set expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def enable_compilation_cache() -> None:
    """A persistent XLA cache ($TURBOZERO_JAX_CACHE, default ~/.cache/turbozero-jax; "none"
    disables it): a second run of the same preset skips most compilation."""
    import jax

    path = os.environ.get(
        "TURBOZERO_JAX_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "turbozero-jax")
    )
    if path.lower() != "none":
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)


def _train(args: argparse.Namespace) -> int:
    from turbozero.training import Trainer

    overrides = _parse_overrides(args.set or [])
    if args.iterations is not None:
        overrides["num_iterations"] = args.iterations
    if args.seed is not None:
        overrides["seed"] = args.seed
    config = presets.get_preset(args.game, args.preset, **overrides)
    run_dir = args.run_dir or os.path.join(
        "runs", f"{args.game.replace('/', '_')}-{args.preset}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    trainer = Trainer(config, run_dir, resume=args.resume)
    with open(os.path.join(trainer.run_dir.path, "cli.json"), "w", encoding="utf-8") as f:
        json.dump({"game": args.game, "preset": args.preset, "overrides": overrides}, f)
    print(f"run directory: {trainer.run_dir.path}")
    trained: list[dict] = []
    last = {}

    def on_record(record: dict) -> None:
        nonlocal last
        if "loss" in record:
            trained.append(record)
        last = record
        evals = {k: round(v, 3) for k, v in record.items() if k.startswith("eval_") and k.endswith(("win_rate", "mean_return"))}
        if evals:
            tqdm_write(f"iteration {record['iteration']}: loss {record.get('loss', float('nan')):.4f} {evals}")

    trainer.run(progress=not args.no_progress, callback=on_record)
    trainer.run_dir.close()
    if trained:
        k = max(1, min(3, len(trained) // 3))
        for name in ("loss", "policy_loss", "value_loss"):
            first = sum(r[name] for r in trained[:k]) / k
            end = sum(r[name] for r in trained[-k:]) / k
            print(f"{name}: {first:.4f} -> {end:.4f} (mean of the first / last {k} trained iterations)")
    for k, v in sorted(last.items()):
        if k.startswith("eval_") and k.endswith("win_rate"):
            print(f"{k}: {v:.3f}")
    print(f"metrics: {trainer.run_dir.metrics_path}")
    return 0


def tqdm_write(msg: str) -> None:
    from tqdm.auto import tqdm

    tqdm.write(msg)


def _eval(args: argparse.Namespace) -> int:
    from turbozero.training import Trainer

    path = os.path.join(args.run_dir, "cli.json")
    if not os.path.exists(path):
        raise ValueError(f"{args.run_dir} is not a run directory made by `turbozero train`")
    with open(path, encoding="utf-8") as f:
        made = json.load(f)
    overrides = dict(made["overrides"])
    if args.games is not None:
        overrides["eval_games"] = args.games
    config = presets.get_preset(made["game"], made["preset"], **overrides)
    trainer = Trainer(config, args.run_dir, resume=True)
    if trainer.run_dir.latest_step() is None:
        raise ValueError(f"no checkpoint in {args.run_dir}")
    result = trainer.evaluate(args.opponent)
    print(json.dumps({"iteration": int(trainer.state.iteration), "opponent": args.opponent, **result}))
    trainer.run_dir.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="turbozero", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a game with a preset")
    t.add_argument("game")
    t.add_argument("--preset", default="tiny")
    t.add_argument("--run-dir", default=None, help="default: runs/<game>-<preset>-<time>")
    t.add_argument("--resume", action="store_true", help="continue the run in --run-dir")
    t.add_argument("--iterations", type=int, default=None)
    t.add_argument("--seed", type=int, default=None)
    t.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a config field")
    t.add_argument("--no-progress", action="store_true")
    t.set_defaults(func=_train)
    e = sub.add_parser("eval", help="play a checkpoint against a baseline")
    e.add_argument("run_dir")
    e.add_argument("--opponent", default="random", help="random, greedy or gnubg (backgammon)")
    e.add_argument("--games", type=int, default=None)
    e.set_defaults(func=_eval)
    p = sub.add_parser("presets", help="list the presets of a game")
    p.add_argument("game")
    p.set_defaults(func=lambda a: print(", ".join(presets.available_presets(a.game)) or "none") or 0)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    enable_compilation_cache()
    try:
        return args.func(args)
    except ValueError as err:
        print(f"turbozero: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
