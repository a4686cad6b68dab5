"""Cost per decision of the complete-move players at 0, 1 and 2 plies (issue 43, item 4).

    python benchmarks/throughput/backgammon_lookahead.py --run RUN              # 0/1/2 ply
    python benchmarks/throughput/backgammon_lookahead.py --run RUN --before 2761cc7 --batch 32
    python benchmarks/throughput/backgammon_lookahead.py --plies 0 1 --batch 32 128
    python benchmarks/throughput/backgammon_lookahead.py --run RUN --parts --pack-divs 4 1
    python benchmarks/throughput/backgammon_lookahead.py --run RUN --kept 200

Positions: decisions met in gnubg 0-ply self-play (`error_rate.self_play_decisions`, seed 0:
the error-rate analysis's own kind of positions, not random play's), `--batch` of them per call.
Network: the newest checkpoint of `--run` (the filter's pruning depends on a network that
tells moves apart), else the `td` preset's, untrained.

Players timed side by side (`benchmarks/tools/timing.py`: compiled calls only, alternated):
`N-ply` is `AfterstatePlayerConfig(plies=N)` with the backgammon presets' move filter
(`presets.MOVE_FILTER`, gnubg's: at most 8 moves within 0.16 of the best, the kept ones looked
at in packed chunks); `N-ply all 8` the same without the threshold (every one of the 8 best
looked at); `N-ply @REV` the player at git revision REV (its own defaults; at 2761cc7 all 8) (`--before`; 2761cc7 is the last before the filter and the packing). Prints
milliseconds per decision (a call's median over the batch), the ratio to 0-ply, and how
often the fast player's choice equals the older one's.

`--parts`: where a 1-ply look-ahead's time goes, for `--batch` afterstates (each position's
0-ply best) x the 21 rolls: the opponent's complete-move listings alone, the listings with
their moves valued (`AfterstateValuer.valid_values`), and the whole `_lookahead`; with
`--pack-divs` the packing shares of the valuing are set (`PACK_DIVS`; "4 1" is the single
quarter used before the ladder).

`--kept N`: how many of the 8 best 0-ply moves gnubg's filter keeps on the first N positions
at thresholds 0.16 (the default), 0.08 and 0.04 (mean, and how many positions keep k).

Feeds docs/learning.md, "Lookahead that is cheap".
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.tools.revisions import module_at_revision  # noqa: E402
from benchmarks.tools.timing import time_compiled  # noqa: E402
from envs import make  # noqa: E402
from envs.backgammon import from_gnubg_board  # noqa: E402
from turbozero.games.backgammon.presets import MOVE_FILTER  # noqa: E402
from turbozero.search import api  # noqa: E402
from turbozero.search import afterstate  # noqa: E402
from turbozero.search.afterstate import AfterstatePlayerConfig, choose_afterstates  # noqa: E402


def network(run_dir, env):
    if run_dir:
        from turbozero.runs import load_run_config
        from turbozero.training.checkpoints import load_checkpoint, restore_network
        from turbozero.training.loop import Trainer
        trainer = Trainer(load_run_config(run_dir))
        trainer.state, step = load_checkpoint(run_dir, trainer.state, restore_network)
        print(f"network: {run_dir}, checkpoint {step}")
        return trainer.algorithm.evaluator, trainer.variables(trainer.state.train_state)
    from turbozero.games import build_network, game_spec
    from turbozero.presets import get_preset
    spec = game_spec("backgammon")
    net = build_network(spec, env, dict(get_preset("backgammon", "td").network))
    obs = env.observe(env.init(jax.random.PRNGKey(0)))
    print("network: the td preset's, untrained")
    return api.NetworkEvaluator(net.apply, spec.value_format), net.init(jax.random.PRNGKey(1),
                                                                        obs[None])


def positions(count: int):
    from turbozero.games.backgammon.error_rate import self_play_decisions
    decisions = self_play_decisions(count, seed=0)
    states = [from_gnubg_board(d.board, d.dice) for d in decisions]
    return jax.tree_util.tree_map(lambda *x: jnp.stack(x), *states)


def parts(env, evaluator, variables, states, repeats: int) -> None:
    """Time the parts of one 1-ply look-ahead over the 21 rolls (`--parts`)."""
    batch = states.current_player.shape[0]
    cfg = AfterstatePlayerConfig(plies=1)
    step = jax.vmap(env.step_chance, in_axes=(0, None))

    @jax.jit
    def best_after(v, s):
        _, chosen, _ = choose_afterstates(env, evaluator, v, s, AfterstatePlayerConfig())
        moves = afterstate._afterstates(env, s, None)
        return jax.tree_util.tree_map(lambda x: x[jnp.arange(batch), chosen], moves.states)

    def rolls(value: bool):
        @jax.jit
        def run(v, after):
            valuer = afterstate.AfterstateValuer(env, evaluator, v, cfg)

            def one(o):
                rolled = step(after, o)
                m = afterstate._afterstates(env, rolled, None)
                if not value:
                    return jnp.sum(m.valid)
                mover = rolled.current_player[:, None]
                return jnp.sum(jnp.max(valuer.valid_values(m.states, m.valid, mover, mover), 1))
            return jax.lax.map(one, jnp.arange(env.num_chance_outcomes))
        return run

    @jax.jit
    def whole(v, after):
        valuer = afterstate.AfterstateValuer(env, evaluator, v, cfg)
        return afterstate._lookahead(valuer, after, after.current_player, 1,
                                     after.current_player)

    after = best_after(variables, states)
    fns = {"listings": rolls(False), "listings + valuing": rolls(True), "_lookahead": whole}
    t = time_compiled(fns, args=(variables, after), repeats=repeats, warmup=1)
    print(f"\n1-ply look-ahead of {batch} afterstates x {env.num_chance_outcomes} rolls, "
          f"PACK_DIVS {afterstate.PACK_DIVS}")
    for name, timing in t.items():
        print(f"  {name:20s} {1000 * timing.median:8.0f} ms")


def kept(env, evaluator, variables, states) -> None:
    """Print what the move filter keeps of the 8 best 0-ply moves (`--kept`)."""
    cfg = AfterstatePlayerConfig(plies=1, **MOVE_FILTER)

    @jax.jit
    def top8(v, s):
        valuer = afterstate.AfterstateValuer(env, evaluator, v, cfg)
        moves = afterstate._afterstates(env, s, None)
        mover = s.current_player[:, None]
        q = valuer.valid_values(moves.states, moves.valid, mover, mover)
        return jnp.sum(moves.valid, 1), jax.lax.top_k(q, 8)[0]

    count, top = (np.asarray(x) for x in top8(variables, states))
    print(f"{len(count)} positions, {count.mean():.1f} complete moves on average")
    for threshold in (0.16, 0.08, 0.04):
        k = (np.isfinite(top) & (top >= top[:, :1] - threshold)).sum(1)
        print(f"  threshold {threshold}: {k.mean():.2f} kept on average; positions keeping "
              f"1..8: {np.bincount(k, minlength=9)[1:].tolist()}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", default=None, help="run directory whose newest network is used")
    p.add_argument("--plies", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--batch", type=int, nargs="*", default=[32])
    p.add_argument("--before", nargs="*", default=[], help="git revisions to time beside")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--parts", action="store_true", help="time a 1-ply look-ahead's parts")
    p.add_argument("--kept", type=int, default=0, metavar="N",
                   help="print what the move filter keeps on N positions, and stop")
    p.add_argument("--pack-divs", type=int, nargs="*", default=None,
                   help="with --parts: the valuing's packing shares (PACK_DIVS)")
    args = p.parse_args()
    env = make("backgammon")
    evaluator, variables = network(args.run, env)
    if args.kept:
        kept(env, evaluator, variables, positions(args.kept))
        return
    if args.parts:
        if args.pack_divs:
            afterstate.PACK_DIVS = tuple(args.pack_divs)
        for batch in args.batch:
            parts(env, evaluator, variables, positions(batch), args.repeats)
        return
    players = {}
    for n in args.plies:
        cfg = AfterstatePlayerConfig(plies=n, **MOVE_FILTER)
        players[f"{n}-ply"] = (choose_afterstates, cfg)
        if n > 0:
            players[f"{n}-ply all 8"] = (choose_afterstates,
                                         AfterstatePlayerConfig(plies=n, threshold=None))
    current = api._FAMILIES["afterstate"]
    for rev in args.before:
        old = module_at_revision(rev, "turbozero/search/afterstate.py",
                                 f"afterstate_at_{rev}")
        for n in args.plies:
            if n > 0:
                players[f"{n}-ply @{rev}"] = (old.choose_afterstates,
                                              old.AfterstatePlayerConfig(plies=n))
    api._FAMILIES["afterstate"] = current  # the old module registered its own
    fns = {name: jax.jit(lambda v, s, choose=choose, cfg=cfg:
                         choose(env, evaluator, v, s, cfg)[1:])
           for name, (choose, cfg) in players.items()}
    pool = positions(max(args.batch))
    print(f"jax {jax.__version__}, {jax.devices()[0].platform}, load "
          f"{os.getloadavg()[0]:.1f}")
    for batch in args.batch:
        states = jax.tree_util.tree_map(lambda x: x[:batch], pool)
        t = time_compiled(fns, args=(variables, states), repeats=args.repeats, warmup=1)
        base = t["0-ply"].median if "0-ply" in t else None
        chosen = {name: np.asarray(fn(variables, states)[0]) for name, fn in fns.items()}
        print(f"\nbatch {batch}: ms per decision (median of {args.repeats} calls / batch)")
        for name, timing in t.items():
            ms = 1000 * timing.median / batch
            ratio = f", {timing.median / base:.0f}x 0-ply" if base and name != "0-ply" else ""
            same = ""
            ref = name.split(" ")[0]
            if name != ref and ref in chosen:
                same = f", same move as {ref}: {np.mean(chosen[name] == chosen[ref]):.0%}"
            print(f"  {name:18s} {ms:9.2f} ms{ratio}{same}")


if __name__ == "__main__":
    main()
