"""The headline benchmarks, one after another in one process, into one table.

    python benchmarks/throughput/suite.py --out DIR            # full sizes (meant for a GPU; 6 min budget)
    python benchmarks/throughput/suite.py --quick --out DIR    # small sizes, on CPU in under 3 min (a test)

Feeds docs/benchmarks.md, "The benchmark suite". Sections, in this order (never two at once:
one process, each timed call blocked until its results are ready):

- env: random-play steps/s of every registered game (`envs.available_envs()`), a batch of
  games stepped by `vmap(env.step)` inside one jitted `lax.scan`, finished games restarted in
  place; beside pgx's implementation where pgx has the game.
- search: simulations/s of one search per game on the game's network (tiny sizes), the tree
  kernel against mctx (`MctxConfig`), and the model floor: the env transition, observation and
  network alone, as many sequential calls as the search has simulations.
- mcgs: playouts/s of the graph search on the simultaneous-move game at batch 1, 64 and 1024,
  with and without transpositions.

Search and mcgs rows also give the **trips and kernels per simulation**, figures that need no
GPU (docs/benchmarks.md, "Trips and kernels per simulation"): the while-loop trips of the
search's walks and backups per simulation (the search counts them, `stats["loop_trips"]`; on a
GPU each is a host round trip), and the kernels of one trip of the compiled simulation loop
(`benchmarks/tools/hlo_loops.py`; loops of known trip count inside it counted as often as they
run), then, as d(...), each inner loop's kernels per trip where the data decide its trips;
beside mctx's and the floor's. `--walk-unroll N` searches with N levels per loop trip (default: the backend's).
- training: samples/s of the same updates as one jitted call per update from Python
  (`updates.PerStepUpdates`) and as one `lax.scan` (`updates.ScanUpdates`).

Every row also gives the seconds its compiled functions took to lower and compile (XLA, cold:
the suite sets no persistent cache unless `--compile-cache DIR` names one; the test suite's run
does, so that CI compiles the quick suite's functions once, and its compile seconds are then
mostly cache loads). Timed calls go through `benchmarks/tools/timing.py`, which
refuses a timed call that compiles or runs JAX eagerly. `DIR/suite.json` is rewritten after
every row (a run cut short keeps what it measured); `DIR/suite.md` holds the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import sys
import time
import traceback
from typing import Callable, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import envs  # noqa: E402
from envs.sampling import uniform_legal_action  # noqa: E402
from benchmarks.tools.hlo_loops import loop_profile  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Sizes:
    """The shapes of one suite mode (static: each is compiled once)."""

    env_batch: int
    env_steps: int  # plies per timed call
    env_config: dict  # per game: envs.make keywords of the env section
    search_games: tuple[str, ...]
    search_batch: int
    search_sims: int
    search_plies: int  # random plies played from the start so that the games differ
    mcgs_batches: tuple[int, ...]
    mcgs_sims: int
    train_preset: tuple[str, str]  # (game, preset) of the training section
    train_overrides: dict
    train_sims: int  # self-play simulations while filling the replay (not timed)
    repeats: int
    walk_unroll: Optional[int] = None  # levels per loop trip of the searches (None: backend's)
    with_mctx: bool = True  # the search section times mctx beside the kernel


QUICK = Sizes(
    env_batch=64, env_steps=16, env_config={"gomoku": {"size": 100}},
    search_games=("chess",), search_batch=4, search_sims=8,
    search_plies=0,
    mcgs_batches=(8,), mcgs_sims=16,
    train_preset=("chess", "tiny"),
    train_overrides={"num_envs": 8, "collect_steps": 4, "max_self_play_steps": 4,
                     "batch_size": 32, "train_steps": 4, "replay_capacity": 64},
    train_sims=4, repeats=3)

FULL = Sizes(
    env_batch=4096, env_steps=64, env_config={"gomoku": {"size": 100}},
    search_games=("chess", "backgammon", "pacosako", "gomoku"), search_batch=512, search_sims=64,
    search_plies=6,
    mcgs_batches=(1, 64, 1024), mcgs_sims=64,
    train_preset=("chess", "large"),
    train_overrides={"num_envs": 64, "collect_steps": 8, "max_self_play_steps": 8,
                     "batch_size": 256, "train_steps": 16, "replay_capacity": 1024},
    train_sims=8, repeats=5)

# the games pgx also implements, under pgx's name
PGX_GAMES = {"chess": "chess", "backgammon": "backgammon"}
# the network of the search and mcgs sections, by the game's trunk (turbozero.games.GameSpec):
# tiny, so that the figures show the search's own cost more than the network's
TINY_NETWORKS = {"resnet": {"num_filters": 8, "num_blocks": 1},
                 "mlp": {"hidden_sizes": (64, 64)},
                 "two_player": {"num_filters": 8, "num_layers": 1, "hidden": 32}}


class Report:
    """The rows measured so far, written to DIR after each one."""

    def __init__(self, out: str, mode: str):
        self.out = out
        self.rows: list[dict] = []
        device = jax.devices()[0]
        self.meta = {
            "mode": mode,
            "device": f"{device.platform}: {getattr(device, 'device_kind', '')}",
            "device_count": jax.device_count(),
            "jax": jax.__version__,
            "host": f"{platform.machine()}, {os.cpu_count()} cpus",
            "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        }
        self.t0 = time.perf_counter()
        os.makedirs(out, exist_ok=True)

    def add(self, section: str, name: str, shape: str, unit: str, value: float,
            reference: Optional[str] = None, reference_value: Optional[float] = None,
            floor_value: Optional[float] = None, compile_s: Optional[dict] = None,
            note: str = "", trips_per_sim: Optional[float] = None,
            kernels: Optional[dict] = None) -> None:
        row = {"section": section, "name": name, "shape": shape, "unit": unit, "value": value,
               "reference": reference, "reference_value": reference_value,
               "ratio": value / reference_value if reference_value else None,
               "floor_value": floor_value,
               "share_of_floor": value / floor_value if floor_value else None,
               "compile_s": compile_s or {}, "note": note,
               "trips_per_sim": trips_per_sim, "kernels": kernels or {}}
        self.rows.append(row)
        self.write()
        print(_row_md(row), flush=True)

    def write(self) -> None:
        self.meta["seconds"] = round(time.perf_counter() - self.t0, 1)
        with open(os.path.join(self.out, "suite.json"), "w") as f:
            json.dump({"meta": self.meta, "rows": self.rows}, f, indent=1)
        with open(os.path.join(self.out, "suite.md"), "w") as f:
            f.write(markdown(self.meta, self.rows))


def _fmt(x: Optional[float]) -> str:
    if x is None:
        return ""
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def _kernels_md(profile: dict) -> str:
    """'288 + d(25, 16)': kernels of one trip of the simulation loop (loops of known trip count
    inside it counted as often as they run), then the kernels per trip of each loop inside it
    whose trips the data decide (`benchmarks/tools/hlo_loops.py`)."""
    data = ", ".join(str(k) for k in profile["data_loops"])
    return f"{profile['loop_kernels']}" + (f" + d({data})" if data else "")


def _row_md(row: dict) -> str:
    ratio = f"{row['ratio']:.2f}x" if row["ratio"] else ""
    floor = f"{row['share_of_floor']:.0%}" if row["share_of_floor"] else ""
    compiles = ", ".join(f"{k} {v:.1f}" for k, v in row["compile_s"].items())
    ref = f"{row['reference']} {_fmt(row['reference_value'])}" if row["reference"] else ""
    trips = f"{row['trips_per_sim']:.2f}" if row.get("trips_per_sim") is not None else ""
    kernels = "; ".join(f"{k} {_kernels_md(v)}" for k, v in row.get("kernels", {}).items())
    return (f"| {row['name']} | {row['shape']} | {_fmt(row['value'])} {row['unit']} | {ref} | "
            f"{ratio} | {floor} | {trips} | {kernels} | {compiles} | {row['note']} |")


def markdown(meta: dict, rows: list[dict]) -> str:
    lines = [f"Suite ({meta['mode']}) on {meta['device']} x{meta['device_count']}, jax "
             f"{meta['jax']}, host {meta['host']}, {meta['started']}, {meta['seconds']} s "
             "in all.", ""]
    for section in dict.fromkeys(r["section"] for r in rows):
        lines += [f"### {section}", "",
                  "| what | shape | rate | reference | ratio | of floor | trips/sim "
                  "| loop kernels | compile s | note |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        lines += [_row_md(r) for r in rows if r["section"] == section]
        lines.append("")
    return "\n".join(lines)


def compile_timed(fn: Callable, *args) -> tuple[Callable, float]:
    """`fn` jitted, lowered and compiled for `args`: (the compiled function, seconds)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    return compiled, time.perf_counter() - t0


# ------------------------------------------------------------------------------------ env
def random_play(init: Callable, step: Callable, batch: int, steps: int) -> Callable:
    """key -> a checksum: `steps` random plies on `batch` games, a game that ends restarted
    in place from its slot's first state (every step is a live step; `init` runs once per
    slot, not per step: a maze or a first roll can cost more than a step). `step(state,
    action, key)` (both protocols take the key; a deterministic game ignores it)."""

    def one(state, fresh, key):
        k1, k2 = jax.random.split(key)
        mask = state.legal_action_mask
        mask = mask.reshape((-1, mask.shape[-1]))  # one action per player where there are two
        action = jax.vmap(uniform_legal_action)(jax.random.split(k1, mask.shape[0]), mask)
        nxt = step(state, action.reshape(state.legal_action_mask.shape[:-1]), k2)
        done = nxt.terminated | nxt.truncated
        return jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), fresh, nxt)

    def run(key):
        k0, k1 = jax.random.split(key)
        fresh = jax.vmap(init)(jax.random.split(k0, batch))

        def body(states, k):
            return jax.vmap(one)(states, fresh, jax.random.split(k, batch)), None

        states, _ = jax.lax.scan(body, fresh, jax.random.split(k1, steps))
        return jnp.sum(states.rewards)

    return run


def env_section(report: Report, sizes: Sizes) -> None:
    key = jax.random.PRNGKey(0)
    n = sizes.env_batch * sizes.env_steps
    for game in envs.available_envs():
        config = sizes.env_config.get(game, {})
        env = envs.make(game, **config)
        fns, compile_s = {}, {}
        fns["ours"], compile_s["ours"] = compile_timed(
            random_play(env.init, env.step, sizes.env_batch, sizes.env_steps), key)
        if game in PGX_GAMES:
            import pgx

            theirs = pgx.make(PGX_GAMES[game])
            fns["pgx"], compile_s["pgx"] = compile_timed(
                random_play(theirs.init, theirs.step, sizes.env_batch, sizes.env_steps), key)
        t = time_compiled(fns, args=lambda r: (jax.random.PRNGKey(r + 10),),
                          repeats=sizes.repeats)
        label = game + "".join(f" {k}={v}" for k, v in config.items())
        report.add("env", label, f"{sizes.env_batch} games x {sizes.env_steps} steps", "steps/s",
                   n / t["ours"].median, "pgx" if "pgx" in t else None,
                   n / t["pgx"].median if "pgx" in t else None, compile_s=compile_s,
                   note="step builds the observation")


# --------------------------------------------------------------------------------- search
def _search_setup(game: str, sizes: Sizes):
    from turbozero.games import build_network, game_spec
    from turbozero.search import NetworkEvaluator

    env = envs.make(game)
    spec = game_spec(game)
    net = build_network(spec, env, dict(TINY_NETWORKS[spec.trunk]))
    batch = sizes.search_batch

    @jax.jit
    def start(key):
        def ply(i, states):
            k = jax.random.fold_in(key, i)
            a = jax.vmap(uniform_legal_action)(jax.random.split(k, batch),
                                               states.legal_action_mask)
            return jax.vmap(env.step)(states, a, jax.random.split(jax.random.fold_in(k, 1),
                                                                  batch))

        states = jax.vmap(env.init)(jax.random.split(key, batch))
        return jax.lax.fori_loop(0, sizes.search_plies, ply, states)

    states = start(jax.random.PRNGKey(0))
    variables = jax.jit(net.init)(jax.random.PRNGKey(1), states.observation[:1])
    return env, NetworkEvaluator(net.apply, spec.value_format), variables, states


def model_floor(env, evaluator, sims: int) -> Callable:
    """`sims` sequential model steps (env transition + observation + network) on the batch:
    the work a search of `sims` simulations cannot avoid."""
    from turbozero.search.model import EnvModel

    model = EnvModel(env, evaluator)

    def run(variables, states, key):
        emb, out = model.root(variables, states)
        first = jnp.argmax(out.legal, axis=-1).astype(jnp.int32)

        def body(i, acc):
            # the action depends on the carry, so XLA cannot hoist the step out of the loop
            shift = (acc > 1e9).astype(jnp.int32)
            _, reward, o = model.step(variables, jax.random.fold_in(key, i), emb, first + shift)
            return acc + 1.0 + 1e-9 * (o.value.sum() + reward.sum())

        return jax.lax.fori_loop(0, sims, body, jnp.zeros(()))

    return run


def _with_trips(result) -> tuple:
    """What a timed search returns: its policy and its loop trips (one int32; the searches
    that count none give -1)."""
    trips = result.stats.get("loop_trips") if isinstance(result.stats, dict) else None
    return result.policy, (trips[0] if trips is not None else jnp.int32(-1))


def _trips_per_sim(compiled, args, sims: int) -> Optional[float]:
    trips = int(compiled(*args)[1])
    return trips / sims if trips >= 0 else None


def search_section(report: Report, sizes: Sizes) -> None:
    from turbozero.search import MctxConfig, TreeSearchConfig, search

    key = jax.random.PRNGKey(3)
    sims, batch = sizes.search_sims, sizes.search_batch
    for game in sizes.search_games:
        env, ev, variables, states = _search_setup(game, sizes)
        fns, compile_s, notes, kernels = {}, {}, [], {}
        tree_cfg = TreeSearchConfig(num_simulations=sims, walk_unroll=sizes.walk_unroll)
        configs = [("kernel", tree_cfg)] + (
            [("mctx", MctxConfig(num_simulations=sims))] if sizes.with_mctx else [])
        for name, config in configs:
            try:
                fns[name], compile_s[name] = compile_timed(
                    lambda v, s, k, c=config: _with_trips(search(env, ev, v, s, k, c)),
                    variables, states, key)
                kernels[name] = loop_profile(fns[name].as_text())
            except ValueError as err:  # a family that does not take this game says why
                notes.append(f"{name}: {str(err).splitlines()[0][:120]}")
        fns["floor"], compile_s["floor"] = compile_timed(
            model_floor(env, ev, sims), variables, states, key)
        kernels["floor"] = loop_profile(fns["floor"].as_text())
        args = (variables, states, key)
        trips = _trips_per_sim(fns["kernel"], args, sims) if "kernel" in fns else None
        t = time_compiled(fns, args=args, repeats=sizes.repeats)
        rate = {k: batch * sims / v.median for k, v in t.items()}
        report.add("search", game, f"{batch} games x {sims} sims", "sims/s",
                   rate.get("kernel", float("nan")), "mctx" if "mctx" in rate else None,
                   rate.get("mctx"), floor_value=rate["floor"], compile_s=compile_s,
                   note="; ".join(notes) or f"floor {_fmt(rate['floor'])} sims/s",
                   trips_per_sim=trips, kernels=kernels)


# ----------------------------------------------------------------------------------- mcgs
def mcgs_section(report: Report, sizes: Sizes) -> None:
    from turbozero.games import build_network, game_spec
    from turbozero.search.mcgs import MCGSConfig, mcgs_search, network_eval_fn

    game = "pyrat"
    env = envs.make(game)
    spec = game_spec(game)
    net = build_network(spec, env, dict(TINY_NETWORKS[spec.trunk]))
    eval_fn = network_eval_fn(net.apply)
    sims = sizes.mcgs_sims
    key = jax.random.PRNGKey(2)
    for batch in sizes.mcgs_batches:
        roots = jax.jit(lambda k, b=batch: jax.vmap(env.init)(jax.random.split(k, b)))(key)
        variables = jax.jit(net.init)(jax.random.PRNGKey(1), roots.observation[:1])
        fns, compile_s, kernels, trips = {}, {}, {}, {}
        for name, tt in (("graph", True), ("tree", False)):
            cfg = MCGSConfig(num_simulations=sims, transpositions=tt,
                             walk_unroll=sizes.walk_unroll)
            fns[name], compile_s[name] = compile_timed(
                lambda v, r, k, c=cfg: _with_trips(mcgs_search(eval_fn, v, env, r, k, c)[0]),
                variables, roots, key)
            kernels[name] = loop_profile(fns[name].as_text())
            trips[name] = _trips_per_sim(fns[name], (variables, roots, key), sims)
        t = time_compiled(fns, args=(variables, roots, key), repeats=sizes.repeats)
        rate = {k: batch * sims / v.median for k, v in t.items()}
        report.add("mcgs", f"{game} {env.width}x{env.height}, transpositions on",
                   f"{batch} games x {sims} playouts", "playouts/s", rate["graph"],
                   "without", rate["tree"], compile_s=compile_s,
                   note=(f"transpositions cost {rate['tree'] / rate['graph']:.2f}x; without: "
                         f"{trips['tree']:.2f} trips/sim"),
                   trips_per_sim=trips["graph"], kernels=kernels)


# ------------------------------------------------------------------------------- training
def training_section(report: Report, sizes: Sizes) -> None:
    from turbozero.presets import get_preset
    from turbozero.training import Trainer
    from turbozero.training.algorithms import tree_config
    from turbozero.training.updates import PerStepUpdates, ScanUpdates

    game, preset = sizes.train_preset
    overrides = {"eval_every": 0, "eval_opponents": (), "checkpoint_every": 0,
                 **sizes.train_overrides}
    cfg = get_preset(game, preset, **overrides)
    search_cfg = tree_config(cfg.algorithm.search)
    small = dataclasses.replace(search_cfg, num_simulations=sizes.train_sims)
    if search_cfg is not cfg.algorithm.search:
        small = dataclasses.replace(cfg.algorithm.search, search=small)
    cfg = dataclasses.replace(cfg, algorithm=dataclasses.replace(cfg.algorithm, search=small))
    trainer = Trainer(cfg)
    for _ in range(20):  # fill the replay until finished games give value targets
        trainer.state, _ = trainer._collect(trainer.state)
        if int(trainer.state.buffer.has_target.sum()) > 0:
            break
    ts, buf, key = trainer.state.train_state, trainer.state.buffer, trainer.state.key
    options = dict(loss_fn=trainer.algorithm.loss_fn, batch_size=cfg.batch_size,
                   num_steps=cfg.train_steps, sample_fn=trainer.algorithm.sample)
    fns, compile_s = {}, {}
    for name, updates in (("per-step", PerStepUpdates()), ("scan", ScanUpdates())):
        runner = updates.build(**options)
        t0 = time.perf_counter()
        jax.block_until_ready(runner(ts, buf, key))  # compiles (per-step: its one step)
        compile_s[name] = time.perf_counter() - t0
        fns[name] = runner
    t = time_compiled(fns, args=(ts, buf, key), repeats=sizes.repeats)
    samples = cfg.batch_size * cfg.train_steps
    net = ",".join(f"{k}={v}" for k, v in cfg.network.items() if k != "value_hidden")
    report.add("training", f"{game} {preset} network ({net}), one scan",
               f"{cfg.train_steps} steps x batch {cfg.batch_size}", "samples/s",
               samples / t["scan"].median, "per-step", samples / t["per-step"].median,
               compile_s=compile_s,
               note="compile s = first call (per-step: one step compiled, then run)")


SECTIONS = {"env": env_section, "search": search_section, "mcgs": mcgs_section,
            "training": training_section}


def main(argv: Optional[list[str]] = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for suite.json and suite.md")
    p.add_argument("--quick", action="store_true", help="small sizes (CPU, under 3 minutes)")
    p.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    p.add_argument("--walk-unroll", type=int, metavar="N",
                   help="levels per loop trip of the tree kernel's and the graph search's "
                        "walks and backups (default: the backend's, "
                        "turbozero.search.loops.default_unroll)")
    p.add_argument("--no-mctx", action="store_true",
                   help="the search section times the kernel and its floor only")
    p.add_argument("--games", nargs="+", metavar="GAME",
                   help="the search section's games (default: the mode's)")
    p.add_argument("--compile-cache", metavar="DIR",
                   help="keep compiles in this persistent XLA cache (default: none, every "
                        "compile cold, as the compile seconds should be read)")
    args = p.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.walk_unroll is not None:
        if args.walk_unroll < 1:
            p.error(f"--walk-unroll must be >= 1, got {args.walk_unroll}")
        sizes = dataclasses.replace(sizes, walk_unroll=args.walk_unroll)
    if args.no_mctx:
        sizes = dataclasses.replace(sizes, with_mctx=False)
    if args.games:
        sizes = dataclasses.replace(sizes, search_games=tuple(args.games))
    report = Report(args.out, "quick" if args.quick else "full")
    if args.compile_cache:
        jax.config.update("jax_compilation_cache_dir", args.compile_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    report.meta["compile_cache"] = args.compile_cache  # compile seconds are cache loads if set
    report.meta["walk_unroll"] = sizes.walk_unroll
    report.meta["xla_flags"] = os.environ.get("XLA_FLAGS", "")
    print(f"{report.meta}", flush=True)
    failed = []
    for name in args.sections:
        t0 = time.perf_counter()
        try:
            SECTIONS[name](report, sizes)
        except Exception as err:  # the other sections still run; the exit status says it failed
            traceback.print_exc()
            failed.append(f"{name}: {type(err).__name__}: {str(err).splitlines()[0][:200]}")
        report.meta.setdefault("section_seconds", {})[name] = round(time.perf_counter() - t0, 1)
        print(f"# section {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    report.meta["failed"] = failed
    report.write()
    print(f"# suite: {report.meta['seconds']} s; wrote {args.out}/suite.json and suite.md")
    if failed:
        raise SystemExit("suite sections failed: " + "; ".join(failed))
    return {"meta": report.meta, "rows": report.rows}


if __name__ == "__main__":
    main()
