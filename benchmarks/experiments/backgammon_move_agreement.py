"""How often a run's complete-move player picks gnubg 0-ply's own move, and what its other
choices cost by gnubg's own evaluation (issue 31, item 2).

    python benchmarks/experiments/backgammon_move_agreement.py RUN_DIR [--positions 1000] [--plies 0]

Positions: decision states met in gnubg-nn 0-ply self-play (`throughput/backgammon_afterstates.played_positions`,
10% random moves), each with a random roll, skipping rolls with a single legal move. The run's
newest checkpoint plays `AfterstatePlayerConfig(plies=...)` on all of them in one batch; gnubg's
choice is the complete move with the best cubeless 0-ply equity (gnubg.evaluate with the
opponent on roll, as the gnubg opponent plays). Reported: the share of positions where both pick
the same resulting position, and the mean equity gnubg gives up with the player's choice
(gnubg's "error" per move, in points). Figures: docs/learning.md.

Feeds docs/learning.md, "Backgammon, `td` preset".
"""

from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.throughput.backgammon_afterstates import played_positions  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run_dir")
    p.add_argument("--positions", type=int, default=1000)
    p.add_argument("--plies", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    import gnubg
    import gnubg_nn

    from envs.backgammon import gnubg_bridge, notation, rules
    from turbozero.runs import evaluation_config
    from turbozero.search.afterstate import AfterstatePlayerConfig, choose_afterstates
    from turbozero.search.api import NetworkEvaluator
    from turbozero.training import Trainer
    from turbozero.training.checkpoints import load_checkpoint, restore_network
    from turbozero.training.run_config import with_overrides

    config = with_overrides(evaluation_config(args.run_dir), {"num_envs": 1, "replay_capacity": 2,
                                                              "batch_size": 1, "eval_games": 1})
    trainer = Trainer(config)
    state, _ = load_checkpoint(args.run_dir, trainer.state, restore_network)
    variables = Trainer.variables(state.train_state)
    env = trainer.env
    evaluator = NetworkEvaluator(trainer.network.apply, trainer.spec.value_format)
    player = AfterstatePlayerConfig(plies=args.plies)

    rng = np.random.default_rng(args.seed)
    pool = played_positions(max(40, args.positions // 25), seed=args.seed)
    boards, outcomes = [], []
    while len(boards) < args.positions:
        g = pool[rng.integers(len(pool))]
        o = int(rng.integers(rules.NUM_ROLLS))
        d = rules.ROLLS[o]
        if len(gnubg_nn.moves(g, int(d[0]), int(d[1]))) < 2:
            continue
        boards.append(notation.gnubg_to_board(g))
        outcomes.append(o)

    @jax.jit
    def choose(variables, boards, outcomes):
        s = jax.vmap(env._decision_state)(boards, outcomes, jnp.zeros_like(outcomes))
        s = s.replace(observation=jax.vmap(env.observe)(s))
        moves, chosen, _ = choose_afterstates(env, evaluator, variables, s, player)
        pick = lambda x: x[jnp.arange(x.shape[0]), chosen]  # noqa: E731
        return s, pick(moves.states.board), pick(moves.states.is_chance)

    same, loss = 0, []
    ctx, cube = gnubg.evalcontext(0, 0, 1, 0, 0.0), gnubg.cubeinfo()
    chunk = 100
    for i in range(0, len(boards), chunk):
        s, ours, chance = choose(variables, jnp.asarray(np.stack(boards[i:i + chunk])),
                                 jnp.asarray(outcomes[i:i + chunk], jnp.int32))
        ours, chance = np.asarray(ours), np.asarray(chance)
        for j in range(ours.shape[0]):
            single = jax.tree_util.tree_map(lambda x: x[j], s)
            moves = gnubg_bridge.referee_moves(single)

            def equity(gb):
                opp, me = gb
                if sum(me) == 0:
                    return 3.0  # a win: the most a move can score (gnubg never declines one)
                return -float(gnubg.evaluate((me, opp), cube, ctx)[5])

            eq = {gb: equity(gb) for gb in moves}
            best = max(eq, key=eq.get)
            mine_board = gnubg_bridge.rules_flip_np(ours[j]) if chance[j] else ours[j]
            mine = notation.board_to_gnubg(mine_board)
            same += mine == best
            loss.append(eq[best] - eq[mine])
    n = len(loss)
    print(json.dumps({"run_dir": args.run_dir, "iteration": int(state.iteration),
                      "plies": args.plies, "positions": n, "same_as_gnubg": same,
                      "share_same": same / n, "mean_equity_given_up": float(np.mean(loss))}))


if __name__ == "__main__":
    main()
