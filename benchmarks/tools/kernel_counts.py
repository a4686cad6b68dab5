"""The tree kernel's kernels per simulation on CPU, per game, without timing anything: the
compiled search of the benchmark suite's search section (its games, networks and random
plies; `benchmarks/throughput/suite.py`) at small shapes, read by `benchmarks/tools/hlo_loops.py`.

    python benchmarks/tools/kernel_counts.py                       # every suite game
    python benchmarks/tools/kernel_counts.py --games backgammon --by-source
    python benchmarks/tools/run_in_tree.py /tmp/old benchmarks/tools/kernel_counts.py  # before

Per game: the loop kernels of one simulation step outside the walks and backups, the kernels
per trip of each data-decided loop (walk, backup), the trips per simulation the search counted,
and `about`, the kernels a simulation launches: loop kernels + trips/sim x mean(d), the figure
of docs/benchmarks.md, "Trips and kernels per simulation". `--words` takes the accelerators'
embedding rows on CPU too (the kernel picks bytes on CPU). `--by-source` adds
`kernels_by_source`: the loop body's kernels by the library function that made them; `--time N`
the simulations/s of the search and of its model floor (N interleaved calls each, median and
best), `--compare-rows` beside them the search with the other embedding rows. Without `--time` it compiles only (a few seconds a game). Feeds docs/benchmarks.md,
"Fewer kernels in the loop body".
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.append(ROOT)  # appended: run_in_tree.py's tree stays first

import jax  # noqa: E402


def counts(game: str, batch: int, sims: int, plies: int, by_source: bool,
           repeats: int = 0, compare_rows: bool = False) -> dict:
    import dataclasses

    from benchmarks.throughput.suite import QUICK, _search_setup, _with_trips, model_floor
    from benchmarks.tools.hlo_loops import kernels_by_source, loop_profile
    from turbozero.search import TreeSearchConfig, search

    sizes = dataclasses.replace(QUICK, search_batch=batch, search_sims=sims, search_plies=plies)
    env, ev, variables, states = _search_setup(game, sizes)
    config = TreeSearchConfig(num_simulations=sims)
    compiled = jax.jit(lambda v, s, k: _with_trips(search(env, ev, v, s, k, config))).lower(
        variables, states, jax.random.PRNGKey(3)).compile()
    text = compiled.as_text()
    profile = loop_profile(text)
    trips = int(compiled(variables, states, jax.random.PRNGKey(3))[1]) / sims
    data = profile["data_loops"]
    about = profile["loop_kernels"] + (trips * sum(data) / len(data) if data else 0.0)
    row = {"game": game, "shape": f"{batch} games x {sims} sims", **profile,
           "trips_per_sim": round(trips, 3), "kernels_per_sim": round(about, 1)}
    if by_source:
        row["by_source"] = kernels_by_source(text)
    if repeats:
        from benchmarks.tools.timing import time_compiled

        args = (variables, states, jax.random.PRNGKey(3))
        fns = {"kernel": compiled,
               "floor": jax.jit(model_floor(env, ev, sims)).lower(*args).compile()}
        if compare_rows:  # the embedding rows in the other form, timed in the same calls
            import turbozero.search.kernel as kernel
            from turbozero.search.words import row_form

            saved = kernel.row_form
            words = saved() == row_form(on_cpu=False)
            kernel.row_form = lambda: row_form(on_cpu=words)
            try:
                fns["bytes" if words else "words"] = jax.jit(
                    lambda v, s, k: _with_trips(search(env, ev, v, s, k, config))).lower(
                        *args).compile()
            finally:
                kernel.row_form = saved
        t = time_compiled(fns, args=args, repeats=repeats)
        row["sims_per_s"] = {k: round(batch * sims / v.median, 1) for k, v in t.items()}
        row["sims_per_s_best"] = {k: round(batch * sims / v.min, 1) for k, v in t.items()}
    return row


def main(argv=None) -> list:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--games", nargs="+", default=["chess", "backgammon", "pacosako", "gomoku"])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--sims", type=int, default=16)
    p.add_argument("--plies", type=int, default=6, help="random plies before the search")
    p.add_argument("--by-source", action="store_true")
    p.add_argument("--time", type=int, default=0, metavar="REPEATS",
                   help="also time the search and its model floor (the suite's), REPEATS "
                        "interleaved calls each (`benchmarks/tools/timing.py`): sims/s, median "
                        "and best")
    p.add_argument("--words", action="store_true",
                   help="the embedding rows as words on CPU too (the accelerators' form, "
                        "turbozero.search.words.row_form): the kernels a GPU's loop runs")
    p.add_argument("--compare-rows", action="store_true",
                   help="with --time: also time the search with the other embedding rows "
                        "(words against the CPU's bytes), in the same interleaved calls")
    p.add_argument("--json", metavar="FILE", help="also write the rows here")
    args = p.parse_args(argv)
    if args.words:
        import turbozero.search.kernel as kernel
        from turbozero.search.words import row_form

        kernel.row_form = lambda: row_form(on_cpu=False)
    rows = []
    for game in args.games:
        row = counts(game, args.batch, args.sims, args.plies, args.by_source, args.time,
                     args.compare_rows)
        rows.append(row)
        data = ", ".join(str(k) for k in row["data_loops"])
        print(f"{game}: {row['shape']}: loop {row['loop_kernels']} + d({data}), "
              f"trips/sim {row['trips_per_sim']}, about {row['kernels_per_sim']} kernels a "
              f"simulation" + (f"; sims/s median {row['sims_per_s']}, best "
                               f"{row['sims_per_s_best']}" if args.time else ""), flush=True)
        for src, n in row.get("by_source", {}).items():
            print(f"    {n:4d}  {src}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return rows


if __name__ == "__main__":
    main()
