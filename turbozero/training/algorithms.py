"""Algorithms: how the Trainer plays self-play, what it stores, what it learns from it, and how
its network plays in evaluation.

The Trainer is written against `Algorithm` only; it never asks which game it trains or whether
the game is simultaneous. The run's algorithm config (`TrainConfig.algorithm`,
`training/algorithm_configs.py`) builds the network and the runtime class it names:

* `AlphaZeroAlgorithm`: a search over the true dynamics of a turn-based game
  (`turbozero.search.search`: the library's kernel for a `TreeSearchConfig`, mctx for a
  `MctxConfig`, any registered family); policy target = the search's policy, value target =
  the game's return, loss = policy cross-entropy + the value format's loss.
* `GraphSearchAlgorithm`: MCGS (the `graph` family) for simultaneous-move games; one policy
  target per player and one value per seat.
* MuZero (`training/muzero.py`), afterstate TD (`training/td.py`) and the C++ self-play path
  (`training/cpu_alphazero.py`) implement the same seven functions; nothing in the Trainer
  changes for them. docs/training.md, "Algorithms", gives the reason for each function.

Every function but the C++ path's `collect` is pure and jittable once the algorithm is built;
the Trainer jits the calls.
"""

from __future__ import annotations

import abc
from typing import Any, Callable, ClassVar, Optional

import jax
import jax.numpy as jnp

from envs.core import Env, State
from turbozero.networks.value_formats import ValueFormat
from turbozero.search.acting import TemperatureSchedule
from turbozero.search.api import NetworkEvaluator, SearchResult, search
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.one_ply import OnePlyConfig
from turbozero.search.selection import SpecPUCT
from turbozero.training import collector, replay
from turbozero.training.loss_fns import az_loss_fn, simultaneous_loss_fn
from turbozero.training.stored_observations import ObservationPlanes
from turbozero.training.stored_policies import DensePolicy
from turbozero.training.types import SelfPlayTargets, variables_of

def evaluation_search(search_config: Any) -> Any:
    """The self-play search made deterministic for evaluation: `search_config.for_evaluation()`
    (every search config says how: no root noise; docs/training.md)."""
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


def _no_risk(algorithm: "Algorithm", config: Any) -> None:
    if config is not None and config.risk is not None:
        raise ValueError(f"{type(algorithm).__name__} has no per-seat risk: TrainConfig.risk "
                         "needs AlphaZero on the tree kernel")


class Algorithm(abc.ABC):
    """What the Trainer needs; built from the env, the network's apply and its value format.

    Seven functions (`check`, `self_play`, `collect`, `init_replay`, `sample`, `loss_fn`,
    `act`) and three declarations (`collects_in_jit`, `replay_fields`, `greedy_player`)."""

    # `collect` is pure and runs inside the Trainer's jitted call; False: it runs on the host
    # (the C++ self-play), which the Trainer then calls as it is
    collects_in_jit: ClassVar[bool] = True

    def __init__(self, env: Env, apply_fn: Callable, value_format: ValueFormat,
                 search_config: Any, eval_search_config: Optional[Any] = None,
                 acting: Optional[Any] = None):
        self.env = env
        self.check()  # the env, before anything is built for it
        # how self-play picks its move from the policy target (the algorithm config's `acting`)
        self.acting = TemperatureSchedule() if acting is None else acting
        self.apply_fn = apply_fn  # apply(variables, obs, train=False) -> (logits, value_out)
        self.value_format = value_format
        self.evaluator = NetworkEvaluator(apply_fn, value_format)
        self.search_config = search_config
        self.eval_search_config = (evaluation_search(search_config)
                                   if eval_search_config is None else eval_search_config)
        # the optional fields of the position replay (`replay.OPTIONAL_FIELDS`) this algorithm
        # keeps, each as one empty slot holds it: what its loss or its records read beyond
        # what every position replay keeps
        self.replay_fields: dict[str, Any] = {}
        # the search config of the "greedy" evaluation opponent its network plays
        # (`act(..., player=greedy_player)`); None: it has none (a game may register one)
        self.greedy_player: Any = None

    # --------------------------------------------------------- what it supports
    def check(self, config: Any = None) -> None:
        """ValueError naming what this algorithm cannot do: of its env (checked when built),
        and of the run's `config` (a `TrainConfig`: per-seat risk, scored or cut self-play
        games). Default: any env; no risk; the jitted collector scores and cuts games."""
        _no_risk(self, config)

    # ------------------------------------------------------------------ self-play
    def self_play(self, variables: Any, states: State, key: jax.Array,
                  risk_beta: Optional[jax.Array] = None):
        """What the collector stores per position of a batch of states: the policy targets
        float32[B, A] (or [B, P, A] per player), or `SelfPlayTargets` (with the search's root
        values per seat and `search_record`, where `replay_fields` keeps them). `risk_beta`:
        float32[B, P] each seat's risk beta (`TrainConfig.risk`), or None. Default: the
        self-play search's policy. Called by the default `collect` (afterstate TD's, which
        writes afterstates, does not call it)."""
        return search(self.env, self.evaluator, variables, states, key, self.search_config,
                      risk_beta).policy

    def collect(self, state: Any, config: Any) -> tuple[Any, Any]:
        """One iteration of self-play into the replay: `(loop state, CollectStats)`. Default:
        `config.collect_steps` moves of every game (`collector.collect`), each position's
        targets from `self_play`, the move drawn from them once by `acting`."""
        key, k = jax.random.split(state.key)
        col, buf, stats = collector.collect(
            self.env, self.self_play, variables_of(state.train_state), state.collector,
            state.buffer, k, config.collect_steps, self.acting, config.risk, state.iteration,
            config.truncated_games, config.max_self_play_steps)
        return state.replace(collector=col, buffer=buf, key=key), stats

    # --------------------------------------------------------------------- replay
    def init_replay(self, num_envs: int, capacity: int, states: State,
                    form: Any = ObservationPlanes(),
                    policy_form: Any = DensePolicy()) -> replay.ReplayBuffer:
        """The empty replay: single positions with the return to the end of the game as target
        (what every position replay keeps), and the optional fields `replay_fields` declares.
        `form` says how the network input is kept (`TrainConfig.replay_observations`),
        `policy_form` how the policy target and legal mask are (`TrainConfig.replay_policies`)."""
        form = form.for_env(self.env)
        example = form.example(self.env, jax.tree_util.tree_map(lambda x: x[0], states))
        return replay.init_buffer(num_envs, capacity, example,
                                  states.legal_action_mask.shape[1:], self.env.num_players,
                                  self.replay_fields, form, policy_form.for_env(self.env))

    def sample(self, buffer: Any, key: jax.Array, batch_size: int) -> Any:
        """A training batch from `buffer`, what `loss_fn` reads (default: single positions)."""
        return replay.sample(buffer, key, batch_size)

    # ------------------------------------------------------------------- learning
    @abc.abstractmethod
    def loss_fn(self, params, train_state, experience):
        """`(loss, (metrics, updates))`, the signature `updates.train` differentiates. The loss
        functions' in-loss L2 (`l2_reg_lambda`, the backgammon spec's signature) is 0 here:
        weight decay is the optimizer's (`updates.MaskedWeightDecay`)."""

    # ----------------------------------------------------------------- evaluation
    def act(self, variables: Any, states: State, key: jax.Array,
            player: Optional[Any] = None) -> SearchResult:
        """Evaluation moves: the evaluation search's `SearchResult` (its `action`,
        deterministic but for ties, is played; a `plan`, a complete-move player's whole turn,
        is played through by a match against an outside program), or with `player` (a search
        config) that player's with this network (the greedy opponent)."""
        config = self.eval_search_config if player is None else player
        return search(self.env, self.evaluator, variables, states, key, config)


class AlphaZeroAlgorithm(Algorithm):
    """A search over the true dynamics of a turn-based game (the kernel, mctx, or any
    jittable family `turbozero.search.search` runs for the config)."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None,
                 acting=None):
        super().__init__(env, apply_fn, value_format, search_config, eval_search_config, acting)
        self.greedy_player = OnePlyConfig()  # the network's value at one ply
        if self._records_wdl():
            self.replay_fields = {"search_record": {
                "root_wdl": jnp.zeros((3,), jnp.float32),  # [W, D, L], for the mover
                "soft_value": jnp.zeros((), jnp.float32)}}

    def check(self, config=None) -> None:
        if self.env.is_simultaneous:
            raise ValueError(f"{self.env.id} is a simultaneous-move game: AlphaZero's tree "
                             "search needs one mover per state; use an MCGSConfig search "
                             "(GraphSearch)")
        if config is None or config.risk is None:
            return
        sel = getattr(self.search_config, "selection", None)
        if not isinstance(self.search_config, TreeSearchConfig) or not isinstance(sel, SpecPUCT):
            raise ValueError("TrainConfig.risk needs the tree kernel's risk term: a "
                             "TreeSearchConfig with SpecPUCT selection (mctx has none)")

    def _records_wdl(self) -> bool:
        """Self-play keeps each search's root WDL average and LogSumExp soft value
        (docs/chess.md, "Stored per move"): the kernel gives them for two players and a value
        head with a draw class. The loss does not read them (the value target is the game's
        outcome)."""
        return (isinstance(self.search_config, TreeSearchConfig) and self.env.num_players == 2
                and self.value_format.has_wdl)

    def self_play(self, variables, states, key, risk_beta=None):
        result = search(self.env, self.evaluator, variables, states, key, self.search_config,
                        risk_beta)
        if not self.replay_fields:
            return result.policy
        return SelfPlayTargets(
            policy=result.policy, search_values=result.root_values,
            search_record={"root_wdl": result.root_wdl, "soft_value": result.stats["risk_value"]})

    def loss_fn(self, params, train_state, experience):
        return az_loss_fn(params, train_state, experience, 0.0,  # Algorithm.loss_fn: no L2
                          value_format=self.value_format)


class GraphSearchAlgorithm(Algorithm):
    """Monte-Carlo graph search (decoupled PUCT per player) for simultaneous-move games."""

    def check(self, config=None) -> None:
        if not self.env.is_simultaneous:
            raise ValueError(f"{self.env.id} is a turn-based game: graph search (MCGS) is for "
                             "simultaneous moves; use a MctxConfig search (AlphaZero)")
        super().check(config)

    def loss_fn(self, params, train_state, experience):
        return simultaneous_loss_fn(params, train_state, experience, 0.0)  # Algorithm.loss_fn
