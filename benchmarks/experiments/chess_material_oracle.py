"""What a chess value head that knew material exactly would win: the `small` preset's evaluation
search (or a variant) with an oracle evaluator (uniform priors, value tanh(lead / scale) for the
side to move, read off the observation's piece planes), against random or the material-greedy
player, 32 games of the preset's 100 plies per seed. `--untrained` plays the same search with a
value of 0 everywhere (only mates and the rules guide it), the floor every curve starts from.

    python benchmarks/experiments/chess_material_oracle.py                        # PUCT, 32 simulations
    python benchmarks/experiments/chess_material_oracle.py --sims 64 --considered 64 --discount 0.95
    python benchmarks/experiments/chess_material_oracle.py --sims 64 --considered 64 --discount 0.95 \
        --opponent material

Used in docs/learning.md ("Chess: what wins against random at this budget").
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import jax
import jax.numpy as jnp

from envs.chess.material import observation_lead
from turbozero.cli import enable_compilation_cache
from turbozero.presets import get_preset
from turbozero.search import search
from turbozero.search.roots import GumbelRoot
from turbozero.training import Trainer
from turbozero.training.algorithms import evaluation_search
from turbozero.training.evaluation import match_summary, play_match

GAMES = 32


def oracle_evaluator(num_actions: int, scale: float, untrained: bool):
    """(variables, observation [M, 8, 8, 122]) -> (uniform logits [M, A], value [M])."""

    def evaluate(variables, observation):
        del variables
        lead = observation_lead(observation)
        value = jnp.zeros_like(lead) if untrained else jnp.tanh(lead / scale)
        return jnp.zeros((observation.shape[0], num_actions)), value

    return evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=32)
    parser.add_argument("--considered", type=int, default=0,
                        help="Gumbel root with this many considered moves (0: the preset's PUCT)")
    parser.add_argument("--discount", type=float, default=1.0)
    parser.add_argument("--scale", type=float, default=3.0, help="pawns of lead for tanh(1)")
    parser.add_argument("--opponent", default="random", choices=("random", "material"))
    parser.add_argument("--untrained", action="store_true", help="value 0 everywhere")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    if args.sims < 1 or args.considered < 0 or not 0.0 < args.discount <= 1.0 or args.scale <= 0:
        raise ValueError("need --sims >= 1, --considered >= 0, 0 < --discount <= 1, --scale > 0")
    enable_compilation_cache()
    trainer = Trainer(get_preset("chess", "small"))
    env = trainer.env
    config = dataclasses.replace(trainer.algorithm.eval_search_config,
                                 num_simulations=args.sims, discount=args.discount)
    if args.considered:
        config = evaluation_search(dataclasses.replace(
            config, root=GumbelRoot(max_considered=args.considered)))
    evaluator = oracle_evaluator(env.num_actions, args.scale, args.untrained)

    def agent(variables, states, key):
        return search(env, evaluator, variables, states, key, config).action

    opponent = trainer.baseline_policy(args.opponent)
    match = jax.jit(lambda key: play_match(env, agent, opponent, None, None, key, GAMES,
                                           trainer.config.max_eval_steps))
    print(f"{'untrained' if args.untrained else 'oracle'} vs {args.opponent}: {config}")
    for seed in args.seeds:
        t0 = time.perf_counter()
        res = match_summary(jax.device_get(match(jax.random.PRNGKey(seed))))
        print(f"seed {seed}: won / drew / lost {res['wins']} / {res['draws']} / {res['losses']} "
              f"of {GAMES}, mean return {res['mean_return']:+.2f} "
              f"({time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
