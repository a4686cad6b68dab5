"""Cost per decision of the complete-move players at 0, 1 and 2 plies (issue 43, item 4).

    python benchmarks/throughput/backgammon_lookahead.py --run RUN              # 0/1/2 ply
    python benchmarks/throughput/backgammon_lookahead.py --run RUN --before 2761cc7 --batch 32
    python benchmarks/throughput/backgammon_lookahead.py --plies 0 1 --batch 32 128

Positions: decisions met in gnubg 0-ply self-play (`error_rate.self_play_decisions`, seed 0:
the error-rate analysis's own kind of positions, not random play's), `--batch` of them per call.
Network: the newest checkpoint of `--run` (the filter's pruning depends on a network that
tells moves apart), else the `td` preset's, untrained.

Players timed side by side (`benchmarks/tools/timing.py`: compiled calls only, alternated):
`N-ply` is `AfterstatePlayerConfig(plies=N)` as it stands (gnubg's filter: at most 8 moves
within 0.16 of the best, the kept ones looked at in packed chunks); `N-ply all 8` the same
without the threshold (every one of the 8 best looked at); `N-ply @REV` the player at git
revision REV (`--before`; 2761cc7 is the last before the filter and the packing). Prints
milliseconds per decision (a call's median over the batch), the ratio to 0-ply, and how
often the fast player's choice equals the older one's.
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
from turbozero.search import api  # noqa: E402
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


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", default=None, help="run directory whose newest network is used")
    p.add_argument("--plies", type=int, nargs="*", default=[0, 1, 2])
    p.add_argument("--batch", type=int, nargs="*", default=[32])
    p.add_argument("--before", nargs="*", default=[], help="git revisions to time beside")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    env = make("backgammon")
    evaluator, variables = network(args.run, env)
    players = {}
    for n in args.plies:
        cfg = AfterstatePlayerConfig(plies=n)
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
