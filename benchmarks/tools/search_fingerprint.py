"""Every output of the tree kernel on the suite's games, saved and compared bit for bit: the
check that a change of the kernel's code (its compiled form, not its search) leaves what it
computes as it was (docs/benchmarks.md, "Fewer kernels in the loop body").

    python benchmarks/tools/run_in_tree.py /tmp/old \
        benchmarks/tools/search_fingerprint.py --save ref.npz
    python benchmarks/tools/search_fingerprint.py --compare ref.npz

For chess, backgammon (chance nodes), Paco Ŝako and 3-player gomoku (the benchmark suite's
games, networks and random plies: `benchmarks/throughput/suite.py`) at 4 games x 12
simulations, three searches each: the default (one leaf a step, root noise); three leaves a step
with two levels a loop trip and entropic risk; a Gumbel root with mctx's PUCT and fewer child
slots than the game's bound (the top-k compaction). Saved: every leaf of `tree_search`'s result
and of its tree (embeddings included). `--compare` exits 1 naming each array that differs in a
single bit (NaNs compared by their bits too). Not a timing.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.append(ROOT)  # appended: run_in_tree.py's tree stays first

import jax  # noqa: E402
import numpy as np  # noqa: E402

GAMES = ("chess", "backgammon", "pacosako", "gomoku")


def _configs():
    from turbozero.search import TreeSearchConfig
    from turbozero.search.roots import GumbelRoot
    from turbozero.search.selection import MctxPUCT, SpecPUCT

    return {
        "default": TreeSearchConfig(num_simulations=12),
        "L3-unroll2-risk": TreeSearchConfig(num_simulations=12, leaves_per_step=3,
                                            walk_unroll=2,
                                            selection=SpecPUCT(risk_beta=0.5)),
        "gumbel-mctx-k6": TreeSearchConfig(num_simulations=12, root=GumbelRoot(),
                                           selection=MctxPUCT(), max_children=6),
    }


def fingerprint(games=GAMES) -> dict[str, np.ndarray]:
    """{game/config/result|tree/field: array} of every search."""
    from benchmarks.throughput.suite import QUICK, _search_setup
    from turbozero.search.kernel import tree_search
    from turbozero.search.model import EnvModel

    sizes = dataclasses.replace(QUICK, search_batch=4, search_sims=12, search_plies=6)
    out = {}
    for game in games:
        env, ev, variables, states = _search_setup(game, sizes)
        model = EnvModel(env, ev)
        for name, config in _configs().items():
            run = jax.jit(lambda v, s, k, c=config: tree_search(model, v, s, k, c))
            result, tree = run(variables, states, jax.random.PRNGKey(11))
            for part, value in (("result", result), ("tree", tree)):
                for path, leaf in jax.tree_util.tree_flatten_with_path(value)[0]:
                    out[f"{game}/{name}/{part}{jax.tree_util.keystr(path)}"] = np.asarray(leaf)
            print(f"{game} {name}: done", flush=True)
    return out


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    return x.view(np.uint8) if x.dtype != np.bool_ else x.astype(np.uint8)


def compare(ref: dict, new: dict) -> list[str]:
    """The keys whose arrays differ (shape, dtype or any bit), and those only one side has."""
    bad = [f"only in the reference: {k}" for k in ref if k not in new]
    bad += [f"only in the new run: {k}" for k in new if k not in ref]
    for k in ref:
        if k in new:
            a, b = ref[k], new[k]
            if a.shape != b.shape or a.dtype != b.dtype or not np.array_equal(_bits(a), _bits(b)):
                bad.append(f"differs: {k}")
    return bad


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--save", metavar="FILE.npz")
    p.add_argument("--compare", metavar="FILE.npz")
    p.add_argument("--games", nargs="+", default=list(GAMES))
    args = p.parse_args(argv)
    if not (args.save or args.compare):
        p.error("give --save FILE, --compare FILE or both")
    new = fingerprint(tuple(args.games))
    if args.save:
        np.savez(args.save, **new)
        print(f"saved {len(new)} arrays to {args.save}")
    if args.compare:
        with np.load(args.compare) as f:
            ref = {k: f[k] for k in f.files if k.split("/", 1)[0] in args.games}
        bad = compare(ref, new)
        for line in bad:
            print(line)
        print(f"{len(ref)} arrays compared: " + ("bit-identical" if not bad else
                                                   f"{len(bad)} differ"))
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
