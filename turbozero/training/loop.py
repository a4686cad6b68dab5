"""The training loop: self-play -> replay -> optax updates -> evaluation -> checkpoints.

One `Trainer` serves every game: the game chooses its value format, trunk and extra opponents
(`turbozero.games`), the run's algorithm config builds the runtime algorithm
(`TrainConfig.algorithm`, `turbozero.training.algorithm_configs`), and the loop itself names
neither. Each iteration is two
jitted calls (collect, train) over a `LoopState` pytree whose game batch and replay are sharded
over a `jax.sharding.Mesh` of all devices.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
import warnings
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

import envs
from turbozero.games import Opponent, game_spec
from turbozero.search.mctx_policies import random_actions
from turbozero.training import collector as collector_lib
from turbozero.training import distributed, replay, report
from turbozero.training.algorithms import Algorithm
from turbozero.training.checkpoints import RunDirectory
from turbozero.training.evaluation import (MatchCarry, check_duplicate_games, match_progress,
                                           match_result, match_start, match_steps,
                                           match_summary, play_match_chunked)
from turbozero.training.memory import check_loop_state
from turbozero.training.metrics import MetricsWriter, TensorBoardWriter, require_tensorboardx
from turbozero.training.nonfinite import NonFiniteTraining, untrained_reason
from turbozero.training.replay_sampling import with_sampling
from turbozero.training.config import TrainConfig
from turbozero.training.run_config import check_env_config, config_to_json
from turbozero.compile_cache import enable_compilation_cache
from turbozero.stored_functions import modules_of, store_for_cache
from turbozero.training.updates import updates_for_backend
from turbozero.training.types import TrainState, variables_of

# the opponent every game has; "greedy" comes from the algorithm (its own network at 1 ply) or,
# where a game registers one, from the game (turbozero.games)
RANDOM = Opponent("random", report.GENERIC_OPPONENTS["random"],
                  policy=lambda env: lambda variables, states, key: random_actions(states, key))


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
        overwrite: bool = False,
        mesh: Optional[Mesh] = None,
        tensorboard: bool = False,
    ):
        """`run_dir`: where checkpoints and metrics go (None: nowhere). `resume=True`
        continues the run there from its newest intact checkpoint (refused when there is
        none); `overwrite=True` replaces a run found there (refused without it);
        `tensorboard=True` also writes the metrics as TensorBoard events to
        RUN_DIR/tensorboard/ (needs the `tensorboard` extra, tensorboardX). Everything is
        built, and so every setting checked, before the run directory is touched."""
        if tensorboard:
            if run_dir is None:
                raise ValueError("tensorboard=True needs run_dir: the events go to "
                                 "RUN_DIR/tensorboard/")
            require_tensorboardx()  # missing: one line with the pip command, nothing built
        for flag, value in (("resume", resume), ("overwrite", overwrite)):
            if value and run_dir is None:
                raise ValueError(f"{flag}=True needs run_dir, the run directory to "
                                 f"{'continue' if flag == 'resume' else 'replace'}")
        # before anything compiles: a warm start loads the run's compiles from disk
        # (turbozero/compile_cache.py; TURBOZERO_JAX_CACHE=none turns it off)
        cache = enable_compilation_cache()
        self.config = config
        self.spec = game_spec(config.game)
        check_env_config(config.game, config.env_config)  # a key the env lacks: ValueError
        self.env = envs.make(config.game, **dict(config.env_config))
        # the run's algorithm (TrainConfig.algorithm) builds the network it trains and its
        # runtime part; it checks the env can be searched so
        self.network = config.algorithm.build_network(self.spec, self.env, dict(config.network))
        self.algorithm: Algorithm = config.algorithm.build(
            self.env, self.network.apply, self.spec.value_format)
        self.algorithm.check(config)  # what the run asks that the algorithm cannot do
        self.mesh = make_mesh() if mesh is None else mesh
        n_dev = self.mesh.devices.size
        for name in ("num_envs", "batch_size", "eval_games"):
            if getattr(config, name) % n_dev:
                raise ValueError(f"{name}={getattr(config, name)} must be a multiple of the {n_dev} devices")
        self._data = NamedSharding(self.mesh, PartitionSpec("data"))
        self._replicated = NamedSharding(self.mesh, PartitionSpec())
        self.opponents = self._opponents()
        total = config.num_iterations * config.train_steps
        self.tx = config.optimizer.build(total)
        self._store = self._function_store(cache)
        self._build_jitted()
        self.state = self.init_state()
        self.run_dir: Optional[RunDirectory] = None
        self.metrics: Optional[MetricsWriter] = None
        self.tensorboard: Optional[TensorBoardWriter] = None
        if run_dir is not None:
            identity = {
                "game": config.game,
                "network": {"trunk": config.algorithm.network_name or self.spec.trunk,
                            "value_format": self.spec.value_format.name,
                            **{k: list(v) if isinstance(v, tuple) else v for k, v in dict(config.network).items()}},
                # the whole config, so that `turbozero eval` / `--resume` work on any run dir
                "config": config_to_json(config),
            }
            self.run_dir = RunDirectory(run_dir, identity, self.state.train_state.params,
                                        resume=resume, overwrite=overwrite, state=self.state)
            self.metrics = MetricsWriter(self.run_dir.metrics_path)
            if resume:  # the newest intact checkpoint; none is a ValueError, nothing written
                try:
                    restored, _ = self.run_dir.resume(self.state)
                except ValueError:
                    self.run_dir.close()  # orbax's manager holds threads
                    raise
                self.state = self._place(restored)
                # the iterations after the checkpoint are written again: no repeats
                self.run_dir.truncate_metrics(int(self.state.iteration))
            if tensorboard and distributed.is_primary():
                self.tensorboard = TensorBoardWriter(os.path.join(self.run_dir.path,
                                                                  "tensorboard"))

    # ----------------------------------------------------------------- state
    def _place(self, state: LoopState) -> LoopState:
        """Params replicated; games and replay split over the mesh's "data" axis.

        With several processes, `state` is the same whole value on every process (built from
        the seed) or already spread over them (restored), and each keeps its own shards."""
        def data(x):
            return distributed.place(x, self._data if x.ndim >= 1 else self._replicated)

        rep = lambda t: jax.tree_util.tree_map(  # noqa: E731
            lambda x: distributed.place(x, self._replicated), t)
        buffer = jax.tree_util.tree_map(data, state.buffer)
        placed = LoopState(
            train_state=rep(state.train_state),
            collector=jax.tree_util.tree_map(data, state.collector),
            buffer=buffer.replace(ptr=rep(state.buffer.ptr)),
            key=rep(state.key),
            iteration=rep(state.iteration),
        )
        if self.config.donate_loop_state:
            # a buffer may appear twice in a built state (an env wrapper's state holding its
            # inner state's `current_player`), and XLA refuses to take one donation twice
            placed = jax.tree_util.tree_map(lambda x: x.copy(), placed)
        return placed

    def init_state(self) -> LoopState:
        cfg = self.config

        def build(seed: jax.Array) -> LoopState:
            k_env, k_net, k_loop = jax.random.split(jax.random.PRNGKey(seed), 3)
            col = collector_lib.init_collector(self.env, k_env, cfg.num_envs, cfg.risk)
            obs = jax.vmap(self.env.observe)(col.env_state)
            variables = self.network.init(k_net, obs[:1])
            train_state = TrainState.create(
                apply_fn=self.network.apply,
                params=variables["params"],
                tx=self.tx,
                batch_stats=variables.get("batch_stats"),
            )
            buffer = self.algorithm.init_replay(cfg.num_envs, cfg.replay_capacity,
                                                col.env_state, cfg.replay_observations,
                                                cfg.replay_policies)
            buffer = with_sampling(buffer, cfg.replay_sampling)
            return LoopState(train_state=train_state, collector=col, buffer=buffer, key=k_loop,
                             iteration=jnp.zeros((), jnp.int32))

        # one jitted call: run eagerly, the network's init, the optimizer's and the replay's
        # were hundreds of small dispatches, each compiled on a cold start and traced again on
        # a warm one (docs/benchmarks.md, "Start-up and compile time"); its results hold the
        # network's apply, the optimizer and (a replay of env states: `EnvStates`, bound to
        # the game) the env as tree metadata, which a stored build cannot write down and takes
        # from here
        built = self._jit(build, "init_state",
                          known=(self.network.apply, self.tx, self.env))
        # checked on shapes first: a bad decay mask is refused before anything is computed;
        # a stored build was checked when it was stored (same config and source), and
        # eval_shape would trace it again
        self._init_state_fn = built
        stored = getattr(built, "load_stored", lambda *a: False)(cfg.seed)
        # a stored build's result shapes come with it (no trace); else eval_shape traces it
        shapes = built.output_shapes() if stored else jax.eval_shape(build, cfg.seed)
        # a state (with the searches' trees) larger than the device's memory: one line naming
        # the settings, before anything is allocated (training/memory.py), warm start or not
        check_loop_state(shapes, cfg, self.mesh.devices.flat[0], env=self.env,
                         with_wdl=bool(self.spec.value_format.has_wdl),
                         # the search evaluation runs (the C++ path's: the kernel's)
                         eval_search=self.algorithm.eval_search_config,
                         network=(self.algorithm.apply_fn, self.variables(shapes.train_state)))
        if not stored and hasattr(cfg.optimizer, "check"):
            cfg.optimizer.check(shapes.train_state.params)
        return self._place(built(cfg.seed))

    @staticmethod
    def variables(train_state: TrainState) -> dict:
        return variables_of(train_state)

    # --------------------------------------------------------------- jitted
    def _function_store(self, cache: Optional[str]):
        """Where the iteration's functions are stored lowered (turbozero/stored_functions.py),
        beside the compile cache; None where they cannot be (cache off, several devices, a
        config that is not JSON). Keyed on the config and on the source of every package
        that defines a part of the run (a user's own env or network included)."""
        try:
            context = {"config": config_to_json(self.config)}
        except ValueError:  # a part of the config that JSON cannot hold: nothing stored
            return None
        return store_for_cache(cache, context, modules_of(
            self.config, self.env, self.network, self.algorithm, self.spec, self.tx))

    def _jit(self, fn: Callable, name: str, donate_argnums: tuple = (),
             known: tuple = ()) -> Callable:
        """`jax.jit`, or the stored function where there is a store: a warm start then
        neither traces nor lowers it (docs/benchmarks.md, "Start-up and compile time").
        `known`: objects its results may hold as tree metadata (FunctionStore.jit)."""
        if self._store is None:
            return jax.jit(fn, donate_argnums=donate_argnums)
        return self._store.jit(fn, name, donate_argnums=donate_argnums, known=known)

    def _build_jitted(self) -> None:
        cfg = self.config

        def collect_fn(state: LoopState):
            return self.algorithm.collect(state, cfg)

        shard = lambda tree: jax.lax.with_sharding_constraint(tree, self._data)  # noqa: E731

        # per step on CPU, where convolution gradients inside a lax.scan ran 10-30x slower;
        # one scan on GPU/TPU (docs/training.md, "How the updates run")
        self.updates = cfg.updates or updates_for_backend(jax.default_backend())
        # an updates object of one's own need not take `jit` (PerStepUpdates, ScanUpdates do)
        takes_jit = "jit" in inspect.signature(self.updates.build).parameters
        self._train_steps = self.updates.build(
            loss_fn=self.algorithm.loss_fn, batch_size=cfg.batch_size, num_steps=cfg.train_steps,
            shard_batch=shard, sample_fn=self.algorithm.sample, donate=cfg.donate_loop_state,
            **({"jit": self._jit} if takes_jit else {}))
        # two keys as a tuple: unpacking one split array from Python was an eager unstack per
        # iteration (benchmarks/tools/timing.py caught it)
        split = self._jit(lambda k: tuple(jax.random.split(k)), "key_split")

        def train_fn(state: LoopState):
            key, k = split(state.key)
            ts, metrics = self._train_steps(state.train_state, state.buffer, k)
            return state.replace(train_state=ts, key=key), metrics

        donate = (0,) if cfg.donate_loop_state else ()
        # the C++ self-play runs on the host, outside jit (Algorithm.collects_in_jit)
        self._collect = (self._jit(collect_fn, "collect", donate)
                         if self.algorithm.collects_in_jit else collect_fn)
        self._train = train_fn
        self._evals: dict[str, Callable] = {}
        self._match_start: Optional[Callable] = None
        self._match_result: Optional[Callable] = None
        # the agent's evaluation search, compiled once for the matches played outside jit
        # an outside match gets the algorithm's whole output: a complete-move player's plan
        # is played through (`evaluation.play_outside_match`)
        self._agent_jit = jax.jit(self.algorithm.act)

    def agent_policy(self, variables, states, key):
        """The trained agent's actions in evaluation: the algorithm's evaluation search."""
        return self.algorithm.act(variables, states, key).action

    def _opponents(self) -> dict[str, Opponent]:
        """random, then the algorithm's own (1-ply greedy), then the game's registered ones
        (which take precedence: PyRat's greedy is its shortest-path player)."""
        out = {"random": RANDOM}
        if self.algorithm.greedy_player is not None:
            act, player = self.algorithm.act, self.algorithm.greedy_player
            out["greedy"] = Opponent(
                "greedy", report.GENERIC_OPPONENTS["greedy"],
                policy=lambda env: lambda v, s, k: act(v, s, k, player=player).action)
        out.update({o.name: o for o in self.spec.opponents})
        return out

    def _paired(self) -> set[str]:
        """The game's opponents that play duplicate pairs by default (`Opponent.duplicate`)."""
        return {o.name for o in self.spec.opponents if o.duplicate}

    def describe_opponent(self, name: str) -> str:
        """What an evaluation opponent is, in one line (report.describe_opponent's words)."""
        return report.describe_opponent(name, self.env)

    def baseline_policy(self, name: str) -> Callable:
        """The jittable policy of an opponent `(variables, states, key) -> actions`."""
        if name not in self.opponents or self.opponents[name].policy is None:
            playable = sorted(n for n, o in self.opponents.items() if o.policy is not None)
            raise ValueError(f"no jittable policy for opponent {name!r}; choose from {playable}")
        return self.opponents[name].policy(self.env)

    def evaluate(self, opponent: str, key: Optional[jax.Array] = None,
                 variables=None, progress: Optional[Callable[[int, int, int], None]] = None,
                 duplicate: Optional[bool] = None) -> dict[str, Optional[float]]:
        """The current network (with search) against an opponent; greedy uses the same network.

        `progress(finished, games, steps)` is told how many games have ended, before the
        first move and then every `evaluation.PROGRESS_CHUNK_STEPS` steps: the match is
        played in jitted calls of that many steps (the same moves as one call). Returns
        `evaluation.match_summary`: counts of games, finished, unfinished, wins, draws and
        losses, and rates over the finished games (None when none finished).

        `duplicate`: for an opponent that plays duplicate games (`Opponent.duplicate`), True or
        False overrides its default; None keeps it."""
        if opponent not in self.opponents:
            raise ValueError(f"unknown opponent {opponent!r} for {self.config.game}; choose "
                             f"from {sorted(self.opponents)}")
        cfg = self.config
        variables = self.variables(self.state.train_state) if variables is None else variables
        key = jax.random.fold_in(jax.random.PRNGKey(cfg.seed + 1), int(self.state.iteration)) if key is None else key
        opp = self.opponents[opponent]
        # before anything is played: pairs need an even eval_games; duplicate= only where
        # the opponent plays pairs (the CLI's check, evaluation.check_duplicate_games)
        check_duplicate_games(self._paired(), [opponent], cfg.eval_games, duplicate)
        if opp.match is not None:  # an outside program: it plays the whole match itself
            options = {} if duplicate is None else {"duplicate": duplicate}
            return opp.match(self.env, self._agent_jit, variables, key, cfg.eval_games,
                             cfg.max_eval_steps, **options)
        if opponent not in self._evals:
            policy = self.baseline_policy(opponent)

            def steps(variables, carry, limit):
                carry = match_steps(self.env, self.agent_policy, policy, variables, variables,
                                    carry, limit)
                return carry, match_progress(carry)

            self._evals[opponent] = jax.jit(steps)
        if self._match_start is None:
            # the match's games split over the mesh like self-play's (each device plays
            # eval_games / devices of them); the network is replicated, as in training
            self._match_start = jax.jit(
                lambda k: match_start(self.env, k, cfg.eval_games),
                out_shardings=MatchCarry(states=self._data, returns=self._data,
                                         steps=self._replicated, key=self._replicated))
            self._match_result = jax.jit(match_result)
        steps = functools.partial(self._evals[opponent], variables)
        carry = play_match_chunked(self._match_start, steps, key, cfg.max_eval_steps,
                                   progress, to_host=distributed.to_host)
        return match_summary(distributed.to_host(self._match_result(carry)))

    # ------------------------------------------------------------------ run
    def step(self) -> dict[str, Any]:
        """One iteration: collect, then train if the replay has finished games."""
        t0 = time.perf_counter()
        self.state, stats = self._collect(self.state)
        stats = distributed.to_host(stats)  # with several processes, each holds its shards
        record: dict[str, Any] = {
            "episodes_finished": int(stats.episodes_finished),
            "positions": int(stats.positions),
        }
        if int(stats.episodes_finished):
            record["mean_outcome_p0"] = float(stats.outcome_sum[0]) / int(stats.episodes_finished)
        t1 = time.perf_counter()
        record["replay_samples"] = int(distributed.to_host(replay.num_samples(self.state.buffer)))
        if record["replay_samples"] > 0:
            self.state, metrics = self._train(self.state)
            record.update({k: float(v) for k, v in distributed.to_host(metrics).items()})
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
            callback: Optional[Callable[[dict], None]] = None,
            stop_on_nonfinite: bool = True) -> LoopState:
        """Train until `num_iterations` iterations are completed (default: the config's).

        An iteration whose every update was skipped as non-finite (training/nonfinite.py) is
        recorded (metrics, checkpoint when one is due, `callback`) and then, unless
        `stop_on_nonfinite=False`, stops the run with `NonFiniteTraining` (a ValueError).

        Interrupted (Ctrl-C: `KeyboardInterrupt`), it stops with the run resumable: the state
        of the last completed iteration is saved as a checkpoint (unless it already is one,
        checkpoints are off, or `donate_loop_state` has freed it: then the newest checkpoint
        stays as it was), and `TrainingInterrupted` (a `KeyboardInterrupt`) is raised naming
        that iteration and the checkpoint to resume from."""
        cfg = self.config
        if cfg.eval_every:
            # an odd match of duplicate pairs, refused before the first iteration as the CLI
            # refuses it (not here in __init__: `turbozero eval --no-duplicate` builds a
            # Trainer from the run's config to play its own match)
            check_duplicate_games(self._paired(), cfg.eval_opponents, cfg.eval_games,
                                  fix="eval_games=N with N even")
        target = cfg.num_iterations if num_iterations is None else num_iterations
        start = int(self.state.iteration)
        for message in report.schedule_warnings(cfg.eval_every, cfg.eval_opponents,
                                                cfg.checkpoint_every, self.run_dir is not None,
                                                start, target):
            warnings.warn(message, stacklevel=2)
        bar = None
        if progress and distributed.is_primary():  # one bar however many processes run
            bar = report.tqdm_class()(total=target, initial=start, desc=f"train {cfg.game}",
                                      unit="it")
        # the last completed iteration: saved as a checkpoint when Ctrl-C comes (`_interrupted`)
        completed, done = self.state, start
        saved = self.run_dir.latest_step() if self.run_dir is not None else None
        explained = False
        try:
            for _ in range(start, target):
                record = self.step()
                it = record["iteration"]
                if cfg.eval_every and it % cfg.eval_every == 0:
                    if bar is not None and not explained:
                        bar.write(report.explain_evaluation(
                            [self.describe_opponent(opp) for opp in cfg.eval_opponents]))
                        explained = True
                    for opp in cfg.eval_opponents:
                        shown = None
                        if bar is not None:  # evaluation takes a while: show the games ending
                            bar.set_description(f"evaluating vs {opp}")

                            def shown(finished, games, steps, opp=opp):
                                bar.set_description(report.eval_progress(opp, finished, games,
                                                                         steps))
                        res = self.evaluate(opp, progress=shown)
                        record.update({f"eval_{opp}_{k}": v for k, v in res.items()})
                    if bar is not None:
                        bar.set_description(f"train {cfg.game}")
                # one metrics file however many processes run: the primary writes it
                if self.metrics is not None and distributed.is_primary():
                    self.metrics.write(record)
                if self.tensorboard is not None:
                    self.tensorboard.write(record)
                if self.run_dir is not None and cfg.checkpoint_every and (
                    it % cfg.checkpoint_every == 0 or it == target
                ):
                    self.run_dir.save(it, self.state)
                    saved = it
                completed, done = self.state, it
                if bar is not None:
                    bar.set_postfix(report.progress_postfix(record))
                    bar.update(1)
                if callback is not None:
                    callback(record)
                reason = untrained_reason(record, cfg.train_steps) if stop_on_nonfinite else None
                if reason is not None:
                    raise NonFiniteTraining(it, reason, saved,
                                            None if self.run_dir is None else self.run_dir.path)
        except KeyboardInterrupt as err:
            if bar is not None:
                bar.close()
                bar = None
            raise self._interrupted(completed, done, saved) from err
        finally:
            if bar is not None:
                bar.close()
        return self.state

    def _interrupted(self, completed: LoopState, done: int,
                     saved: Optional[int]) -> "TrainingInterrupted":
        """After Ctrl-C: save the last completed iteration where that is possible and useful;
        what to say about it."""
        # donate_loop_state may have handed the completed state's buffers to the next step
        alive = not any(getattr(x, "is_deleted", lambda: False)()
                        for x in jax.tree_util.tree_leaves(completed))
        it = done
        if alive:
            self.state = completed  # not a half-done iteration
            if (self.run_dir is not None and self.config.checkpoint_every and saved != it
                    and it > 0):
                try:
                    self.run_dir.save(it, completed)
                    saved = it
                except Exception as err:  # noqa: BLE001 - the newest checkpoint still stands
                    warnings.warn(f"the checkpoint of iteration {it} was not written after the "
                                  f"interruption ({type(err).__name__}: {err})", stacklevel=3)
                    saved = self.run_dir.latest_step()
        return TrainingInterrupted(it, saved, None if self.run_dir is None else self.run_dir.path)


class TrainingInterrupted(KeyboardInterrupt):
    """`Trainer.run` stopped by Ctrl-C: `iteration` is the last one completed, `checkpoint` the
    newest checkpoint's iteration (None: none), `run_dir` the run directory (None: none)."""

    def __init__(self, iteration: int, checkpoint: Optional[int], run_dir: Optional[str]):
        self.iteration, self.checkpoint, self.run_dir = iteration, checkpoint, run_dir
        super().__init__(self.message())

    def message(self) -> str:
        done = f"interrupted after iteration {self.iteration}"
        if self.run_dir is None:
            return f"{done}; no run directory, so nothing was saved"
        if self.checkpoint is None:
            return (f"{done}; {self.run_dir} holds no checkpoint, so it cannot be resumed: "
                    "start it again with --overwrite")
        return f"{done}; {self.run_dir} resumes from the checkpoint of iteration {self.checkpoint}"
