"""Algorithms: how the Trainer acts in self-play, what it stores, and what it learns from it.

The Trainer is written against `Algorithm` only; it never asks which game it trains or whether
the game is simultaneous. The run's algorithm config (`TrainConfig.algorithm`,
`training/algorithm_configs.py`) builds the runtime class it names:

* `AlphaZeroAlgorithm`: a tree search over the true dynamics (`turbozero.search.search`: the library's
  kernel for a `TreeSearchConfig`, mctx for a `MctxConfig`) for turn-based games; policy target = visit distribution, value
  target = the game's return, loss = policy cross-entropy + the value format's loss.
* `GraphSearchAlgorithm`: MCGS (the `graph` family of `turbozero.search.search`) for
  simultaneous-move games; one policy target
  per player and one value per seat.
* A learned-model algorithm (MuZero, issue 20) is a third implementation: it declares what its
  replay keeps beyond positions (`replay_fields`: the trajectory) and reads windows of it
  (`sample`), its own loss
  (K-step unroll) and a search over its model; nothing in the Trainer changes. docs/training.md,
  "Algorithms", lists what an implementation must provide.

Every method is pure and jittable once the algorithm is built; the Trainer jits the calls.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp

from envs.core import Env, State
from turbozero.networks.value_formats import ValueFormat
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.selection import SpecPUCT
from turbozero.search.api import NetworkEvaluator, search
from turbozero.search.one_ply import greedy_actions
from turbozero.training import collector, replay
from turbozero.training.loss_fns import az_loss_fn, simultaneous_loss_fn
from turbozero.training.stored_observations import ObservationPlanes
from turbozero.training.stored_policies import DensePolicy
from turbozero.training.types import SelfPlayTargets
from turbozero.games import build_network

# policy(variables, states[B], key) -> actions [B] (turn-based) or [B, P] (simultaneous)
PolicyFn = Callable[[Any, State, jax.Array], jax.Array]


def evaluation_search(search_config: Any) -> Any:
    """The self-play search made deterministic for evaluation: `search_config.for_evaluation()`
    (every search config says how: no root noise, temperature 0; docs/training.md)."""
    if not callable(getattr(type(search_config), "for_evaluation", None)):
        raise ValueError(f"{type(search_config).__name__} has no for_evaluation(): a search "
                         "config says how it searches deterministically for evaluation "
                         "(give the algorithm an eval_search, or add the method)")
    return search_config.for_evaluation()


def tree_config(search_config: Any) -> Any:
    """The config in `search_config` that holds `num_simulations`: itself, or the search it
    nests (MuZero's `MuZeroConfig.search`); ValueError when there is none."""
    config = search_config
    while not hasattr(config, "num_simulations") and hasattr(config, "search"):
        config = config.search
    if not hasattr(config, "num_simulations"):
        raise ValueError(f"{type(search_config).__name__} has no num_simulations")
    return config


class Algorithm(abc.ABC):
    """What the Trainer needs; built from the env, the network's apply and its value format."""

    # the network's name in a run's identity when the algorithm builds its own (None: the
    # game's trunk)
    network_name: Optional[str] = None

    def __init__(self, env: Env, apply_fn: Callable, value_format: ValueFormat,
                 search_config: Any, eval_search_config: Optional[Any] = None,
                 acting: Optional[Any] = None):
        self.check_env(env)
        # how self-play picks its move (the algorithm config's `acting`, a
        # `TemperatureSchedule`; None for an algorithm that acts otherwise, TD): the jitted
        # collector is handed it by the Trainer, a self-play outside jit reads it here
        self.acting = acting
        self.env = env
        self.apply_fn = apply_fn  # apply(variables, obs, train=False) -> (logits, value_out)
        self.value_format = value_format
        self.search_config = search_config
        self.eval_search_config = (evaluation_search(search_config)
                                   if eval_search_config is None else eval_search_config)

    # -------------------------------------------------------------- requirements
    @classmethod
    @abc.abstractmethod
    def check_env(cls, env: Env) -> None:
        """ValueError naming what `env` lacks for this algorithm."""

    @classmethod
    def build_network(cls, spec: Any, env: Env, network_config: dict) -> Any:
        """The flax module this algorithm trains: the game's trunk and value head
        (`turbozero.games.build_network`); a learned-model algorithm builds its model."""
        return build_network(spec, env, network_config)

    # ------------------------------------------------------------------- acting
    @abc.abstractmethod
    def self_play_policy(self, variables: Any, states: State, key: jax.Array) -> jax.Array:
        """Policy targets of a batch of states: float32[B, A] (or [B, P, A] per player). The
        collector picks the move from them through the temperature schedule."""

    def self_play(self, variables: Any, states: State, key: jax.Array,
                  risk_beta: Optional[jax.Array] = None):
        """What the collector stores per position: the policy targets, or `SelfPlayTargets`
        (policy and the search's root value per seat) for algorithms that bootstrap from it.
        `risk_beta`: float32[B, P] each seat's risk beta (`TrainConfig.risk`), or None."""
        if risk_beta is not None:
            raise ValueError(f"{type(self).__name__} has no per-seat risk: TrainConfig.risk "
                             "needs AlphaZero on the tree kernel")
        return self.self_play_policy(variables, states, key)

    def check_risk(self, risk: Any) -> None:
        """ValueError if self-play risk (`TrainConfig.risk`) cannot be searched."""
        if risk is not None:
            raise ValueError(f"{type(self).__name__} has no per-seat risk: TrainConfig.risk "
                             "needs AlphaZero on the tree kernel")

    def check_truncated_games(self, truncated_games: Any,
                              max_self_play_steps: Optional[int] = None) -> None:
        """ValueError if self-play cannot score cut games (`TrainConfig.truncated_games`) or
        cut them early (`TrainConfig.max_self_play_steps`); the jitted collector can."""
        del truncated_games, max_self_play_steps

    @abc.abstractmethod
    def act(self, variables: Any, states: State, key: jax.Array) -> Any:
        """Evaluation actions (the evaluation search, deterministic but for ties): the actions,
        or the search's `SearchResult` (its `action`; a `plan` is played through by a match
        against an outside program)."""

    def builtin_opponents(self) -> dict[str, PolicyFn]:
        """Opponents this algorithm can build from its own network (e.g. 1-ply greedy);
        a game's registered opponents of the same name take precedence."""
        return {}

    # ------------------------------------------------------------------ learning
    @abc.abstractmethod
    def loss_fn(self, params, train_state, experience):
        """`(loss, (metrics, updates))`, the signature `updates.train` differentiates. The loss
        functions' in-loss L2 (`l2_reg_lambda`, the backgammon spec's signature) is 0 here:
        weight decay is the optimizer's (`trainer.MaskedWeightDecay`)."""

    def collect_games(self, env: Env, policy_fn: Callable, variables: Any, col: Any,
                      buffer: Any, key: jax.Array, num_steps: int, schedule: Any, risk: Any,
                      iteration: Any, truncated_games: Any, max_steps: Optional[int]):
        """One iteration's self-play inside the Trainer's jitted call: `(collector state,
        replay, CollectStats)`. Default: `collector.collect`, `num_steps` moves of every game
        acted by `schedule`; an algorithm that plays its games another way (afterstate TD:
        whole moves into its own replay) overrides it."""
        return collector.collect(env, policy_fn, variables, col, buffer, key, num_steps,
                                 schedule, risk, iteration, truncated_games, max_steps)

    def collect(self, state: Any, jitted_collect: Callable, risk: Any = None
                ) -> tuple[Any, Any]:
        """One iteration of self-play into the replay: `(loop state, CollectStats)`. Default:
        the Trainer's jitted collector (`collect_steps` moves of every game, `risk` already
        inside it); an algorithm whose self-play runs outside jit (the C++ CPU path) plays its
        games here instead, with `TrainConfig.risk`'s per-seat betas."""
        del risk
        return jitted_collect(state)

    def sample(self, buffer: replay.ReplayBuffer, key: jax.Array, batch_size: int) -> Any:
        """A training batch from `buffer`, what `loss_fn` reads (default: single positions)."""
        return replay.sample(buffer, key, batch_size)

    def init_replay(self, num_envs: int, capacity: int, states: State,
                    form: Any = ObservationPlanes(),
                    policy_form: Any = DensePolicy()) -> replay.ReplayBuffer:
        """Replay of single positions with the return to the end of the game as target (the
        fields `loss_fn` reads: observation, policy target, legal mask, mover, returns), and the
        optional fields `replay_fields` declares.
        `form` says how the network input is kept (`TrainConfig.replay_observations`),
        `policy_form` how the policy target and legal mask are (`TrainConfig.replay_policies`)."""
        form = form.for_env(self.env)
        example = form.example(self.env, jax.tree_util.tree_map(lambda x: x[0], states))
        return replay.init_buffer(num_envs, capacity, example,
                                  states.legal_action_mask.shape[1:], self.env.num_players,
                                  self.replay_fields(), form, policy_form.for_env(self.env))

    def replay_fields(self) -> dict[str, Any]:
        """The optional fields of the position replay (`replay.OPTIONAL_FIELDS`) this algorithm
        keeps, each as one empty slot holds it (`replay.init_buffer`): what its loss or its
        records read beyond what every position replay keeps. Default: none."""
        return {}


class AlphaZeroAlgorithm(Algorithm):
    """Tree search over the true dynamics of a turn-based game (mctx or the library's kernel,
    whichever `turbozero.search.search` runs for the config)."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None,
                 acting=None):
        super().__init__(env, apply_fn, value_format, search_config, eval_search_config, acting)
        self.evaluator = NetworkEvaluator(apply_fn, value_format)

    @classmethod
    def check_env(cls, env: Env) -> None:
        if env.is_simultaneous:
            raise ValueError(f"{env.id} is a simultaneous-move game: AlphaZero's tree search "
                             "needs one mover per state; use an MCGSConfig search (GraphSearch)")

    def self_play_policy(self, variables, states, key):
        return search(self.env, self.evaluator, variables, states, key,
                      self.search_config).policy

    def _records_wdl(self) -> bool:
        """Self-play keeps each search's root WDL average and LogSumExp soft value
        (docs/chess.md, "Stored per move"): the kernel gives them for two players and a value head with
        a draw class. The loss does not read them (the value target is the game's outcome)."""
        return (isinstance(self.search_config, TreeSearchConfig) and self.env.num_players == 2
                and self.value_format.has_wdl)

    def self_play(self, variables, states, key, risk_beta=None):
        result = search(self.env, self.evaluator, variables, states, key, self.search_config,
                        risk_beta)
        if not self._records_wdl():
            return result.policy
        return SelfPlayTargets(
            policy=result.policy, search_values=result.root_values,
            search_record={"root_wdl": result.root_wdl, "soft_value": result.stats["risk_value"]})

    def replay_fields(self):
        if not self._records_wdl():
            return {}
        return {"search_record": {"root_wdl": jnp.zeros((3,), jnp.float32),  # [W, D, L], mover
                                  "soft_value": jnp.zeros((), jnp.float32)}}

    def check_risk(self, risk):
        if risk is None:
            return
        sel = getattr(self.search_config, "selection", None)
        if not isinstance(self.search_config, TreeSearchConfig) or not isinstance(sel, SpecPUCT):
            raise ValueError("TrainConfig.risk needs the tree kernel's risk term: a "
                             "TreeSearchConfig with SpecPUCT selection (mctx has none)")

    def act(self, variables, states, key):
        return search(self.env, self.evaluator, variables, states, key,
                      self.eval_search_config).action

    def builtin_opponents(self) -> dict[str, PolicyFn]:
        def greedy(variables, states, key):
            del key
            return greedy_actions(self.env, self.evaluator, variables, states)

        return {"greedy": greedy}

    def loss_fn(self, params, train_state, experience):
        return az_loss_fn(params, train_state, experience, 0.0,  # Algorithm.loss_fn: no L2
                          value_format=self.value_format)


class GraphSearchAlgorithm(Algorithm):
    """Monte-Carlo graph search (decoupled PUCT per player) for simultaneous-move games."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None,
                 acting=None):
        super().__init__(env, apply_fn, value_format, search_config, eval_search_config, acting)
        self.evaluator = NetworkEvaluator(apply_fn, value_format)

    @classmethod
    def check_env(cls, env: Env) -> None:
        if not env.is_simultaneous:
            raise ValueError(f"{env.id} is a turn-based game: graph search (MCGS) is for "
                             "simultaneous moves; use a MctxConfig search (AlphaZero)")

    def self_play_policy(self, variables, states, key):
        return search(self.env, self.evaluator, variables, states, key,
                      self.search_config).policy

    def act(self, variables, states, key):
        return search(self.env, self.evaluator, variables, states, key,
                      self.eval_search_config).action

    def loss_fn(self, params, train_state, experience):
        return simultaneous_loss_fn(params, train_state, experience, 0.0)  # Algorithm.loss_fn
