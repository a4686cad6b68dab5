"""`TrainConfig`: everything a training run is made of, checked when built (docs/training.md).

Its own module so that what reads and writes run configs (`run_config`) needs no part of the
loop. Run directories written before the move name it `turbozero.training.loop:TrainConfig`
(read through `training/migration.py`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from turbozero.games import game_spec
from turbozero.training.algorithm_configs import AlgorithmConfig, AlphaZero, algorithm_error
from turbozero.training.risk import SelfPlayRisk
from turbozero.training.replay_sampling import UniformSampling, check_sampling
from turbozero.training.stored_observations import ObservationPlanes, check_form
from turbozero.training.stored_policies import DensePolicy, check_policy_form
from turbozero.training.updates import Optimizer, PerStepUpdates, ScanUpdates
from turbozero.validation import check_int

# evaluation opponents every game has ("greedy": the algorithm's own network at one ply, or
# the game's registered greedy player)
GENERIC_OPPONENTS = ("random", "greedy")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    game: str
    env_config: tuple = ()  # (key, value) pairs given to envs.make
    num_envs: int = 16
    collect_steps: int = 16  # self-play moves per game per iteration
    train_steps: int = 8  # gradient steps per iteration
    batch_size: int = 64
    replay_capacity: int = 64  # positions kept per game
    # how the replay keeps each position's network input: ObservationPlanes() (the input
    # itself) or EnvStates() (the env state, observed again when sampled; docs/training.md)
    replay_observations: Any = ObservationPlanes()
    # how it keeps each policy target and legal mask: DensePolicy() (over all actions) or
    # LegalPolicy() (the legal actions' ids and probabilities; training/stored_policies.py)
    replay_policies: Any = DensePolicy()
    # how training batches are drawn from it: UniformSampling() or OutcomeStratified(win,
    # draw, loss) (balanced by the game's result for the mover, the design notes' §8.1;
    # training/replay_sampling.py)
    replay_sampling: Any = UniformSampling()
    # donate the loop state to each jitted self-play and training iteration, so that XLA
    # updates it in place instead of holding the old and the new copy (a large run's
    # replay alone is GBs). A `trainer.state` (or any part of it) kept from before a step is
    # then freed by the step; off by default so that such references stay readable.
    donate_loop_state: bool = False
    # self-play targets of games cut by the env's step cap: None keeps the env's rewards at
    # the cap (commonly none: a draw); an object with `rewards(env, states) -> float32[B, P]`
    # scores them (a game's adjudication, docs/training.md "One iteration"); evaluation is
    # never adjudicated
    truncated_games: Any = None
    # cut self-play games after this many env steps (the state's step_count) as if the env
    # had truncated them there, scored by `truncated_games`; evaluation plays to the env's own
    # cap. Shorter self-play games give more finished games (value targets) per iteration.
    # None: to the env's end.
    max_self_play_steps: Optional[int] = None
    # the optax chain: clipping, masked weight decay, update rule, learning-rate schedule
    # (trainer.Optimizer; any object with build(total_steps) and check(params))
    optimizer: Any = Optimizer()
    # how an iteration's `train_steps` updates run: updates.PerStepUpdates() (one jitted call
    # per update) or updates.ScanUpdates() (one lax.scan); None picks by backend, per step on
    # CPU and one scan on GPU/TPU (docs/training.md, "How the updates run")
    updates: Any = None
    num_iterations: int = 10
    eval_every: int = 5  # 0 disables evaluation
    eval_games: int = 16
    eval_opponents: tuple = ("random",)
    max_eval_steps: int = 500
    checkpoint_every: int = 5  # 0 disables checkpoints
    network: Any = dataclasses.field(default_factory=dict)
    # what the run trains with: AlphaZero(search, acting, eval_search), GraphSearch(...),
    # MuZero(...) or TD(...) (training/algorithm_configs.py; docs/training.md, "Algorithms").
    # Runs stored with the fields before it (search=, eval_search=, temperature_schedule=)
    # read through training/migration.py
    algorithm: Any = AlphaZero()
    # per-game entropic-risk betas of the seats in self-play (training/risk.py; the tree
    # kernel's SpecPUCT); None: the search config's own beta for every seat
    risk: Optional[SelfPlayRisk] = None
    seed: int = 0

    def __post_init__(self) -> None:
        positive = ("num_envs", "collect_steps", "train_steps", "batch_size", "replay_capacity",
                    "num_iterations", "eval_games", "max_eval_steps")
        # integers, not just comparable: get_preset(..., num_envs="32") was "'<' not supported"
        for name in positive:
            check_int(name, getattr(self, name), minimum=1)
        for name in ("eval_every", "checkpoint_every"):
            check_int(name, getattr(self, name), minimum=0)
        check_int("seed", self.seed)
        if self.truncated_games is not None and not callable(
                getattr(self.truncated_games, "rewards", None)):
            raise ValueError("truncated_games must be None or an object with rewards(env, "
                             f"states), got {self.truncated_games!r}")
        if self.max_self_play_steps is not None and (
                isinstance(self.max_self_play_steps, bool)
                or not isinstance(self.max_self_play_steps, int) or self.max_self_play_steps < 1):
            raise ValueError("max_self_play_steps must be None or an int >= 1, got "
                             f"{self.max_self_play_steps!r}")
        if not isinstance(self.donate_loop_state, bool):
            raise ValueError(f"donate_loop_state must be True or False, got "
                             f"{self.donate_loop_state!r}")
        if not isinstance(self.algorithm, AlgorithmConfig):
            raise ValueError(algorithm_error(self.algorithm))
        self.algorithm.check()
        if self.risk is not None and not isinstance(self.risk, SelfPlayRisk):
            raise ValueError(f"risk must be a SelfPlayRisk or None, got {self.risk!r}")
        check_form(self.replay_observations)
        check_policy_form(self.replay_policies)
        check_sampling(self.replay_sampling)
        if self.updates is not None and not isinstance(self.updates,
                                                       (PerStepUpdates, ScanUpdates)):
            raise ValueError("updates must be None (by backend), updates.PerStepUpdates() or "
                             f"updates.ScanUpdates(), got {self.updates!r}")
        if not hasattr(self.optimizer, "build"):
            raise ValueError("optimizer must be a trainer.Optimizer (or an object with "
                             f"build(total_steps)), got {self.optimizer!r}")
        known = GENERIC_OPPONENTS + tuple(o.name for o in game_spec(self.game).opponents)
        for opp in self.eval_opponents:
            if opp not in known:
                raise ValueError(f"unknown evaluation opponent {opp!r} for {self.game}; "
                                 f"choose from {sorted(set(known))}")
