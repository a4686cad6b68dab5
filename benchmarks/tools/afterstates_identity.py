"""Every leaf of backgammon's `env.afterstates` (valid slots or not) on played states, saved
once and compared bit for bit after a change to the listing.

    python benchmarks/tools/afterstates_identity.py --save /tmp/ref.npz      # before the change
    python benchmarks/tools/afterstates_identity.py --compare /tmp/ref.npz   # after it
    python benchmarks/tools/afterstates_identity.py --hlo     # sorts and instructions compiled

States: positions met in gnubg-nn 0-ply self-play (`played_positions`), a random roll each
(batches of 64, 1024 and 2048), plus a batch of 1024 with doubles only (the pooled doubles
path, its small levels and its retries at M); in a third of each batch one random legal
checker step is played first (the rest of a turn). Batched as the players call it (one vmap,
M = 256). Used for issue 43's listing work (docs/benchmarks.md, "No sort where nothing repeats").
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

BATCHES = (("64", 64, False), ("1024", 1024, False), ("2048", 2048, False),
           ("doubles1024", 1024, True))


def leaves(games: int, m: int) -> dict[str, np.ndarray]:
    import envs
    from benchmarks.throughput.backgammon_afterstates import played_positions
    from envs.backgammon import notation, rules

    env = envs.make("backgammon")
    pos = played_positions(games)
    rng = np.random.default_rng(5)
    doubles = np.flatnonzero(rules.ROLLS[:, 0] == rules.ROLLS[:, 1])

    @jax.jit
    def run(boards, outcomes, key):
        s = jax.vmap(env._decision_state)(boards, outcomes, jnp.zeros_like(outcomes))

        def part(s, k, do):  # one random legal checker step first: the rest of a turn
            a = jax.random.categorical(k, jnp.where(s.legal_action_mask, 0.0, -jnp.inf))
            t = env.step_deterministic(s, a)
            return jax.tree_util.tree_map(lambda x, y: jnp.where(do & ~t.is_chance, x, y), t, s)

        ks = jax.random.split(key, boards.shape[0])
        s = jax.vmap(part)(s, ks, jnp.arange(boards.shape[0]) % 3 == 0)
        s = s.replace(observation=jax.vmap(env.observe)(s))
        return jax.vmap(lambda x: env.afterstates(x, m))(s)

    out = {}
    for name, batch, only_doubles in BATCHES:
        pick = rng.choice(len(pos), batch, replace=len(pos) < batch)
        rolls = (rng.choice(doubles, batch) if only_doubles
                 else rng.integers(0, rules.NUM_ROLLS, batch))
        boards = jnp.asarray(np.stack([notation.gnubg_to_board(pos[i]) for i in pick]))
        r = run(boards, jnp.asarray(rolls, jnp.int32), jax.random.PRNGKey(batch))
        for path, leaf in jax.tree_util.tree_flatten_with_path(r)[0]:
            out[f"{name}{jax.tree_util.keystr(path)}"] = np.asarray(leaf)
    return out


def hlo_counts(games: int, m: int) -> None:
    """Sorts (with their operand shapes) and instructions (fusions' insides included) in the
    compiled list alone (`complete_moves`) and `env.afterstates`, vmapped, at batch 64 and 1024."""
    import re

    import envs
    from benchmarks.throughput.backgammon_afterstates import played_positions
    from envs.backgammon import afterstates, notation, rules

    env = envs.make("backgammon")
    pos = played_positions(games)
    for batch in (64, 1024):
        rng = np.random.default_rng(1)
        pick = rng.choice(len(pos), batch)
        rolls = jnp.asarray(rng.integers(0, rules.NUM_ROLLS, batch), jnp.int32)
        boards = jnp.asarray(np.stack([notation.gnubg_to_board(pos[i]) for i in pick]))
        s = jax.vmap(env._decision_state)(boards, rolls, jnp.zeros_like(rolls))
        for name, f in (("complete_moves", lambda x: afterstates.complete_moves(
                x.board, x.remaining, True, m)), ("env.afterstates", lambda x: env.afterstates(x, m))):
            text = jax.jit(jax.vmap(f)).lower(s).compile().as_text()
            instr = [ln for ln in text.splitlines() if re.match(r"\s*(ROOT )?%?[\w.\-]+ = ", ln)]
            sorts = [re.search(r" = (.*?) sort\(", ln).group(1) for ln in instr if " sort(" in ln]
            print(f"{name} batch {batch}: {len(instr)} instructions, {len(sorts)} sorts: "
                  + "; ".join(x[:90] for x in sorts), flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", metavar="NPZ")
    g.add_argument("--compare", metavar="NPZ")
    g.add_argument("--hlo", action="store_true", help="count sorts and instructions compiled")
    p.add_argument("--games", type=int, default=10)
    p.add_argument("--m", type=int, default=256)
    args = p.parse_args()
    if args.hlo:
        hlo_counts(2, args.m)
        return
    out = leaves(args.games, args.m)
    if args.save:
        np.savez(args.save, **out)
        print("saved", len(out), "leaves to", args.save)
        return
    ref = np.load(args.compare)
    if set(ref.files) != set(out):
        sys.exit(f"different leaves: {sorted(set(ref.files) ^ set(out))}")
    bad = [k for k in ref.files if not (ref[k].dtype == out[k].dtype and ref[k].shape == out[k].shape
                                        and np.array_equal(ref[k], out[k]))]
    if bad:
        sys.exit(f"{len(bad)} of {len(out)} leaves differ: {bad}")
    print("all", len(out), "leaves identical")


if __name__ == "__main__":
    main()
