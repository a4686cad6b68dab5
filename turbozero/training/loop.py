"""The training loop: self-play -> replay -> optax updates -> evaluation -> checkpoints.

One `Trainer` serves every turn-based game: the game only chooses its value head and trunk
(`turbozero.games`). Each iteration is two jitted calls (collect, train) over a `LoopState`
pytree whose game batch and replay are sharded over a `jax.sharding.Mesh` of all devices.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import envs
from turbozero.games import build_network, game_spec
from turbozero.search.mctx_policies import (
    NetworkEvaluator,
    SearchConfig,
    greedy_actions,
    random_actions,
    search,
)
from turbozero.training import collector as collector_lib
from turbozero.training import replay, report
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.checkpoints import RunDirectory
from turbozero.training.run_config import config_to_json
from turbozero.search.mcgs import MCGSConfig, mcgs_search, network_eval_fn
from turbozero.training.evaluation import match_summary, play_match
from turbozero.training.loss_fns import az_loss_fn, simultaneous_loss_fn
from turbozero.training.metrics import MetricsWriter
from turbozero.training.trainer import check_decay_mask, make_optimizer, train
from turbozero.training.types import TrainState

BASELINES = ("random", "greedy")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    game: str
    env_config: tuple = ()  # (key, value) pairs given to envs.make
    num_envs: int = 16
    collect_steps: int = 16  # self-play moves per game per iteration
    train_steps: int = 8  # gradient steps per iteration
    batch_size: int = 64
    replay_capacity: int = 64  # positions kept per game
    learning_rate: float = 1e-3
    warmup_steps: int = 0
    # L2 on the kernels of convolution and dense layers only (docs/training.md): the
    # optimizer adds weight_decay * w to their gradients, PyTorch Adam(weight_decay=...)'s
    # coupled L2, i.e. the gradient of the loss term weight_decay / 2 * ||w||^2.
    weight_decay: float = 1e-4
    weight_decay_params: tuple = ("kernel",)  # parameter leaf names that decay
    # self-play acting: tau for the first T moves of each game, then argmax
    temperature_schedule: TemperatureSchedule = TemperatureSchedule()
    num_iterations: int = 10
    eval_every: int = 5  # 0 disables evaluation
    eval_games: int = 16
    eval_opponents: tuple = ("random",)
    max_eval_steps: int = 500
    checkpoint_every: int = 5  # 0 disables checkpoints
    network: Any = dataclasses.field(default_factory=dict)
    # SearchConfig (mctx) for turn-based games, MCGSConfig for simultaneous ones
    search: Any = SearchConfig()
    eval_search: Any = SearchConfig(dirichlet_fraction=0.0, temperature=0.0)
    seed: int = 0

    def __post_init__(self) -> None:
        positive = ("num_envs", "collect_steps", "train_steps", "batch_size", "replay_capacity",
                    "num_iterations", "eval_games", "max_eval_steps")
        for name in positive:
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        for name in ("eval_every", "checkpoint_every", "warmup_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")
        if not self.weight_decay >= 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if not isinstance(self.temperature_schedule, TemperatureSchedule):
            raise ValueError("temperature_schedule must be a TemperatureSchedule, got "
                             f"{type(self.temperature_schedule).__name__}")
        for opp in self.eval_opponents:
            if opp not in BASELINES and opp != "gnubg":
                raise ValueError(f"unknown evaluation opponent {opp!r}; use {BASELINES} or 'gnubg'")


@struct.dataclass
class LoopState:
    train_state: TrainState
    collector: collector_lib.CollectorState
    buffer: replay.ReplayBuffer
    key: jax.Array
    iteration: jax.Array  # int32, iterations completed


def make_mesh(devices: Optional[list] = None) -> Mesh:
    """A 1-D mesh named "data" over the given (default: all) devices."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("data",))


class Trainer:
    """Builds the env, network, optimizer and jitted steps of one training run."""

    def __init__(
        self,
        config: TrainConfig,
        run_dir: Optional[str] = None,
        *,
        resume: bool = False,
        mesh: Optional[Mesh] = None,
    ):
        self.config = config
        self.spec = game_spec(config.game)
        self.env = envs.make(config.game, **dict(config.env_config))
        self.simultaneous = self.env.is_simultaneous
        want = MCGSConfig if self.simultaneous else SearchConfig
        for name in ("search", "eval_search"):
            if not isinstance(getattr(config, name), want):
                raise ValueError(f"{config.game} needs {name} to be a {want.__name__}")
        self.network = build_network(self.spec, self.env, dict(config.network))
        self.mesh = make_mesh() if mesh is None else mesh
        n_dev = self.mesh.devices.size
        for name in ("num_envs", "batch_size", "eval_games"):
            if getattr(config, name) % n_dev:
                raise ValueError(f"{name}={getattr(config, name)} must be a multiple of the {n_dev} devices")
        self._data = NamedSharding(self.mesh, PartitionSpec("data"))
        self._replicated = NamedSharding(self.mesh, PartitionSpec())
        apply_eval = functools.partial(self.network.apply, train=False)
        if self.simultaneous:
            self.mcgs_eval_fn = network_eval_fn(apply_eval)
            self.loss_fn = simultaneous_loss_fn
        else:
            self.evaluator = NetworkEvaluator(apply_eval, self.spec.value_format)
            self.loss_fn = functools.partial(az_loss_fn, value_format=self.spec.value_format)
        total = config.num_iterations * config.train_steps
        self.tx = make_optimizer(config.learning_rate, total, config.warmup_steps,
                                 config.weight_decay, config.weight_decay_params)
        self._build_jitted()
        self.state = self.init_state()
        self.run_dir: Optional[RunDirectory] = None
        self.metrics: Optional[MetricsWriter] = None
        if run_dir is not None:
            identity = {
                "game": config.game,
                "network": {"trunk": self.spec.trunk, "value_format": self.spec.value_format.name,
                            **{k: list(v) if isinstance(v, tuple) else v for k, v in dict(config.network).items()}},
                # the whole config, so that `turbozero eval` / `--resume` work on any run dir
                "config": config_to_json(config),
            }
            self.run_dir = RunDirectory(run_dir, identity, self.state.train_state.params,
                                        resume=resume, state=self.state)
            self.metrics = MetricsWriter(self.run_dir.metrics_path)
            if resume:
                restored, _ = self.run_dir.resume(self.state)  # newest intact checkpoint
                if restored is not None:
                    self.state = self._place(restored)
                # the iterations after the checkpoint are written again: no repeats
                self.run_dir.truncate_metrics(int(self.state.iteration))

    # ----------------------------------------------------------------- state
    def _place(self, state: LoopState) -> LoopState:
        """Params replicated; games and replay split over the mesh's "data" axis."""
        def data(x):
            return jax.device_put(x, self._data if x.ndim >= 1 else self._replicated)

        rep = lambda t: jax.device_put(t, self._replicated)  # noqa: E731
        buffer = jax.tree_util.tree_map(data, state.buffer)
        return LoopState(
            train_state=rep(state.train_state),
            collector=jax.tree_util.tree_map(data, state.collector),
            buffer=buffer.replace(ptr=rep(state.buffer.ptr)),
            key=rep(state.key),
            iteration=rep(state.iteration),
        )

    def init_state(self) -> LoopState:
        cfg = self.config
        key = jax.random.PRNGKey(cfg.seed)
        k_env, k_net, k_loop = jax.random.split(key, 3)
        col = collector_lib.init_collector(self.env, k_env, cfg.num_envs)
        obs = col.env_state.observation
        variables = self.network.init(k_net, obs[:1])
        check_decay_mask(variables["params"], cfg.weight_decay_params, cfg.weight_decay)
        train_state = TrainState.create(
            apply_fn=self.network.apply,
            params=variables["params"],
            tx=self.tx,
            batch_stats=variables.get("batch_stats"),
        )
        buffer = replay.init_buffer(
            cfg.num_envs, cfg.replay_capacity, obs[0],
            col.env_state.legal_action_mask.shape[1:], self.env.num_players,
        )
        state = LoopState(train_state=train_state, collector=col, buffer=buffer, key=k_loop,
                          iteration=jnp.zeros((), jnp.int32))
        return self._place(state)

    @staticmethod
    def variables(train_state: TrainState) -> dict:
        v = {"params": train_state.params}
        if train_state.batch_stats is not None:
            v["batch_stats"] = train_state.batch_stats
        return v

    # --------------------------------------------------------------- jitted
    def _build_jitted(self) -> None:
        cfg, env = self.config, self.env

        def self_play_search(variables, states, key):
            if self.simultaneous:
                out = mcgs_search(self.mcgs_eval_fn, variables, env, states, key, cfg.search)
                return out.action, out.policy
            out = search(env, self.evaluator, variables, states, key, cfg.search)
            return out.action, out.action_weights

        def collect_fn(state: LoopState):
            key, k = jax.random.split(state.key)
            col, buf, stats = collector_lib.collect(
                env, self_play_search, self.variables(state.train_state),
                state.collector, state.buffer, k, cfg.collect_steps, cfg.temperature_schedule,
            )
            return state.replace(collector=col, buffer=buf, key=key), stats

        shard = lambda tree: jax.lax.with_sharding_constraint(tree, self._data)  # noqa: E731

        def train_fn(state: LoopState):
            key, k = jax.random.split(state.key)
            ts, metrics = train(
                state.train_state, state.buffer, k, loss_fn=self.loss_fn,
                batch_size=cfg.batch_size, num_steps=cfg.train_steps,
                shard_batch=shard,
            )
            return state.replace(train_state=ts, key=key), metrics

        self._collect = jax.jit(collect_fn)
        self._train = jax.jit(train_fn)
        self._evals: dict[str, Callable] = {}

    def agent_policy(self, variables, states, key):
        if self.simultaneous:
            return mcgs_search(self.mcgs_eval_fn, variables, self.env, states, key,
                               self.config.eval_search).action
        return search(self.env, self.evaluator, variables, states, key, self.config.eval_search).action

    def baseline_policy(self, name: str) -> Callable:
        """random: uniform legal actions. greedy: 1-ply with this network (turn-based) or the
        game's own greedy policy (PyRat: shortest path to the nearest cheese)."""
        if name == "random":
            return lambda variables, states, key: random_actions(states, key)
        if name == "greedy" and self.simultaneous:
            return lambda variables, states, key: jax.vmap(self.env.greedy_actions)(states)
        if name == "greedy":
            return lambda variables, states, key: greedy_actions(self.env, self.evaluator, variables, states)
        raise ValueError(f"unknown baseline {name!r}; choose from {BASELINES}")

    def evaluate(self, opponent: str, key: Optional[jax.Array] = None,
                 variables=None) -> dict[str, Optional[float]]:
        """The current network (with search) against a baseline; greedy uses the same network.

        Returns `evaluation.match_summary`: counts of games, finished, unfinished, wins, draws
        and losses, and rates over the finished games (None when none finished)."""
        if opponent == "gnubg":
            from turbozero.training.gnubg_eval import play_against_gnubg

            return play_against_gnubg(self, key=key)
        if opponent not in self._evals:
            cfg = self.config
            opp = self.baseline_policy(opponent)

            def run(variables, key):
                return play_match(self.env, self.agent_policy, opp, variables, variables, key,
                             cfg.eval_games, cfg.max_eval_steps)

            self._evals[opponent] = jax.jit(run)
        variables = self.variables(self.state.train_state) if variables is None else variables
        key = jax.random.fold_in(jax.random.PRNGKey(self.config.seed + 1), int(self.state.iteration)) if key is None else key
        return match_summary(self._evals[opponent](variables, key))

    # ------------------------------------------------------------------ run
    def step(self) -> dict[str, Any]:
        """One iteration: collect, then train if the replay has finished games."""
        t0 = time.perf_counter()
        self.state, stats = self._collect(self.state)
        record: dict[str, Any] = {
            "episodes_finished": int(stats.episodes_finished),
            "positions": int(stats.positions),
        }
        if int(stats.episodes_finished):
            record["mean_outcome_p0"] = float(stats.outcome_sum[0]) / int(stats.episodes_finished)
        t1 = time.perf_counter()
        record["replay_samples"] = int(replay.num_samples(self.state.buffer))
        if record["replay_samples"] > 0:
            self.state, metrics = self._train(self.state)
            record.update({k: float(v) for k, v in metrics.items()})
        t2 = time.perf_counter()
        self.state = self.state.replace(iteration=self.state.iteration + 1)
        record["iteration"] = int(self.state.iteration)
        record["selfplay_positions_per_s"] = record["positions"] / max(t1 - t0, 1e-9)
        record["train_samples_per_s"] = (
            self.config.batch_size * self.config.train_steps / max(t2 - t1, 1e-9)
            if record["replay_samples"] > 0 else 0.0
        )
        return record

    def run(self, num_iterations: Optional[int] = None, progress: bool = True,
            callback: Optional[Callable[[dict], None]] = None) -> LoopState:
        """Train until `num_iterations` iterations are completed (default: the config's)."""
        cfg = self.config
        target = cfg.num_iterations if num_iterations is None else num_iterations
        start = int(self.state.iteration)
        for message in report.schedule_warnings(cfg.eval_every, cfg.eval_opponents,
                                                cfg.checkpoint_every, self.run_dir is not None,
                                                start, target):
            warnings.warn(message, stacklevel=2)
        bar = None
        if progress:
            bar = report.tqdm_class()(total=target, initial=start, desc=f"train {cfg.game}",
                                      unit="it")
        explained = False
        for _ in range(start, target):
            record = self.step()
            it = record["iteration"]
            if cfg.eval_every and it % cfg.eval_every == 0:
                if bar is not None and not explained:
                    bar.write("evaluation opponents: " + "; ".join(
                        report.describe_opponent(opp, self.env) for opp in cfg.eval_opponents))
                    explained = True
                for opp in cfg.eval_opponents:
                    if bar is not None:  # evaluation takes a while: say so, or the bar looks stuck
                        bar.set_description(f"evaluating vs {opp}")
                    res = self.evaluate(opp)
                    record.update({f"eval_{opp}_{k}": v for k, v in res.items()})
                if bar is not None:
                    bar.set_description(f"train {cfg.game}")
            if self.metrics is not None and jax.process_index() == 0:
                self.metrics.write(record)
            if self.run_dir is not None and cfg.checkpoint_every and (
                it % cfg.checkpoint_every == 0 or it == target
            ):
                self.run_dir.save(it, self.state)
            if bar is not None:
                bar.set_postfix(report.progress_postfix(record))
                bar.update(1)
            if callback is not None:
                callback(record)
        if bar is not None:
            bar.close()
        return self.state
