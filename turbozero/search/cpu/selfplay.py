"""Self-play on the CPU path: C++ worker threads search, one jitted JAX function evaluates
(docs/cpu_search.md, "Training").

The states live in a device-side pool of `num_games * slots_per_game + 1` slots (the last one a
scratch slot for padding rows). Each collected batch of requests `(parent_slot, action,
dest_slot)` goes through one jitted call: step the parent state by the action (or make a new
game's first state) into `dest_slot`, observe it, run the network, and return the legal
actions, priors, value for the player to move and terminal flags. Batches are padded to a few
compiled sizes (`batch_tiers`), the JAX analogue of CUDA-graph tiers: one compile per tier.
The C++ threads never touch Python; `collect` releases the GIL while it waits.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import time
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.networks.value_formats import reports_wdl
from turbozero.search.acting import TemperatureSchedule
from turbozero.search.cpu._ext import require_extension
from turbozero.search.cpu.pools import (  # noqa: F401  (their home before pools.py)
    MAX_BLOCKS, NODES_PER_BLOCK, _pool_builder, make_state_pool, node_pool_bytes)
from turbozero.search.cpu.tree import NEW_GAME, CPUSearchConfig
from turbozero.validation import check_int, check_real


@dataclasses.dataclass(frozen=True)
class CPUSelfPlayConfig:
    """num_games games at once, game g on worker g % num_workers; num_simulations new
    simulations per move (the played child's subtree is kept), leaves_per_step leaves per game
    per round (virtual loss between them); max_steps cuts a game (a draw). How the games pick
    their moves is not a search setting: `cpu_self_play`'s `acting` (a `TemperatureSchedule`,
    the algorithm's `acting` in training). batch_tiers: the compiled
    batch sizes (the largest is the most requests one evaluator call takes). A worker round
    that carries a root evaluation waits root_wait_s for it and retries a stalled wait
    root_eval_retries times (docs/cpu_search.md, "Evaluation queue and threads") before a last wait of timeout_s;
    timeout_s bounds every other wait."""

    search: CPUSearchConfig = CPUSearchConfig()
    num_workers: int = 1
    num_games: int = 8
    num_simulations: int = 64
    leaves_per_step: int = 1
    max_steps: int = 512
    nodes_per_block: int = NODES_PER_BLOCK
    max_blocks: int = MAX_BLOCKS
    slots_per_game: Optional[int] = None  # None: 4 * (num_simulations + leaves_per_step + 1)
    batch_tiers: tuple[int, ...] = (8, 32, 128)
    timeout_s: float = 300.0
    seed: int = 0
    root_wait_s: float = 2.0
    root_eval_retries: int = 3
    # each evaluator batch holds one worker's games, and up to num_workers batches are in the
    # evaluator at once: with 2 workers one group of games searches while the other's batch is
    # evaluated (docs/cpu_search.md, "Overlapping groups of games")
    overlap: bool = False

    def for_evaluation(self) -> "CPUSelfPlayConfig":
        """This self-play's search made deterministic (`search.for_evaluation()`)."""
        return dataclasses.replace(self, search=self.search.for_evaluation())

    def __post_init__(self) -> None:
        if not isinstance(self.search, CPUSearchConfig):
            raise ValueError(f"search must be a CPUSearchConfig, got {self.search!r}")
        # CPUSearchConfig's own num_simulations and leaves_per_step are for one search of the
        # `cpu` family; the self-play's fields apply here
        for name in ("num_simulations", "leaves_per_step"):
            mine = getattr(self.search, name)
            if mine != getattr(CPUSearchConfig, name) and mine != getattr(self, name):
                raise ValueError(f"search.{name}={mine} contradicts CPUSelfPlayConfig.{name}="
                                 f"{getattr(self, name)}, which the self-play uses: set that")
        # the C++ fields are int32: a larger count would wrap in the binding
        int32 = 2**31 - 1
        for name in ("num_workers", "num_games", "num_simulations", "leaves_per_step",
                     "max_steps", "nodes_per_block", "max_blocks"):
            check_int(name, getattr(self, name), minimum=1, maximum=int32)
        check_int("slots_per_game", self.slots_per_game, minimum=2, maximum=int32, optional=True)
        check_int("root_eval_retries", self.root_eval_retries, minimum=0, maximum=int32)
        check_int("seed", self.seed, minimum=0, maximum=2**64 - 1)
        check_real("timeout_s", self.timeout_s, above=0)
        check_real("root_wait_s", self.root_wait_s, above=0)
        if not isinstance(self.overlap, bool):
            raise ValueError(f"overlap must be a bool, got {self.overlap!r}")
        tiers = self.batch_tiers
        if not isinstance(tiers, (tuple, list)) or not tiers:
            raise ValueError(f"batch_tiers must be increasing sizes >= 1, got {tiers!r}")
        for t in tiers:
            check_int("batch_tiers entry", t, minimum=1, maximum=int32)
        if list(tiers) != sorted(set(tiers)):
            raise ValueError(f"batch_tiers must be increasing sizes >= 1, got {tiers!r}")

    @property
    def state_slots_per_game(self) -> int:
        if self.slots_per_game is not None:
            return self.slots_per_game
        return 4 * (self.num_simulations + self.leaves_per_step + 1)

    def tree_shapes(self, env, states: Any = None, with_wdl: bool = False) -> Any:
        """The device-side state pool the self-play holds (`num_games * state_slots_per_game
        + 1` env states), as shape structs: `jax.eval_shape` of its own build
        (`make_state_pool`), nothing allocated (the memory bound's count,
        turbozero/memory.py). Its games are `num_games`, not the batch `states`.
        The C++ trees are host memory: `host_bytes`."""
        del states, with_wdl
        return jax.eval_shape(_pool_builder(env, self.num_games * self.state_slots_per_game
                                            + 1))

    def host_bytes(self, env, states: Any = None) -> int:
        """Bytes of the C++ node pools of the `num_games` trees at their fullest
        (`node_pool_bytes`)."""
        del states
        return node_pool_bytes(self.num_games, self.nodes_per_block, self.max_blocks,
                               self.state_slots_per_game, env.max_legal_actions)

    def tree_settings(self, batch: str, env: Any = None) -> str:
        """The settings the memory bound names for the trees (`batch`: not this one's)."""
        del batch, env
        return (f"num_games={self.num_games} x (slots_per_game="
                f"{self.state_slots_per_game} or nodes_per_block={self.nodes_per_block} x "
                f"max_blocks={self.max_blocks})")

    def to_native(self, *, num_players: int = 2, num_actions: Optional[int] = None,
                  acting: TemperatureSchedule = TemperatureSchedule()):
        """The C++ config (num_players, num_actions: what the evaluator's players and action
        ids must lie in, `CPUSearchConfig.to_native`). The C++ workers act by `acting`: tau =
        `acting.temperature` for a game's first `acting.moves` moves (None: the whole game),
        then the most visited move, ties at random, as the JAX collector does
        (`TemperatureSchedule.act`; the C++ draws the same distribution with its own
        generator, cpp/search.hpp `choose_child`)."""
        ext = require_extension()
        c = ext.CoordinatorConfig()
        c.search = self.search.to_native(num_players=num_players, num_actions=num_actions)
        c.num_workers = self.num_workers
        c.num_games = self.num_games
        c.num_simulations = self.num_simulations
        c.leaves_per_step = self.leaves_per_step
        c.max_steps = self.max_steps
        c.temperature = float(acting.temperature)
        c.temperature_moves = 2**31 - 1 if acting.moves is None else int(acting.moves)
        c.nodes_per_block = self.nodes_per_block
        c.max_blocks = self.max_blocks
        c.slots_per_game = self.state_slots_per_game
        per_worker = -(-self.num_games // self.num_workers)
        c.queue_capacity = max(per_worker * self.leaves_per_step, self.batch_tiers[-1])
        c.per_worker_batches = self.overlap
        c.timeout_s = float(self.timeout_s)
        c.root_wait_s = float(self.root_wait_s)
        c.root_eval_retries = self.root_eval_retries
        c.seed = self.seed
        c.validate()
        return c


class PoolOutput(NamedTuple):
    """One evaluated batch (T: the tier size, A: env.num_actions). The C++ queue takes each
    row's legal ids in increasing order, at most `env.max_legal_actions` of them, with their
    probabilities (`Coordinator.submit_dense_results`)."""

    legal: jax.Array  # bool[T, A] the legal actions
    probs: jax.Array  # float32[T, A] softmax of the logits over the legal actions (0 elsewhere)
    value: jax.Array  # float32[T] network value (terminal: the reward) for the player to move
    player: jax.Array  # int32[T]
    terminal: jax.Array  # bool[T]
    # float32[T, 3] a WDL head's [win, draw, loss] for the player to move (terminal: the
    # outcome), or None when the network has no WDL head
    wdl: Optional[jax.Array] = None


def _wdl_head(evaluator, env):
    """The value format's `wdl(value_out)` when the evaluator is a network with a WDL head in a
    two-player game (what the root WDL averages, docs/search.md "Root WDL average"), else None."""
    fmt = getattr(evaluator, "value_format", None)  # a plain callable evaluator has none
    return fmt.wdl if reports_wdl(fmt, env.num_players) else None


def _select_rows(mask: jax.Array, a, b):
    return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)


def make_pool_evaluator(env, evaluator: Callable[..., tuple[jax.Array, jax.Array]], key):
    """`evaluate(pool, params, parent, action, dest) -> (pool, PoolOutput)`, jitted with the pool
    donated. `evaluator(params, observation[T, ...]) -> (logits [T, A], value [T])` with the
    value for the player to move (a two-player zero-sum game or a one-player game); when it is
    a `NetworkEvaluator` whose value format has a WDL head, the output carries the head's
    win/draw/loss too (`PoolOutput.wdl`), which the C++ search averages at the root. New games
    (`parent == NEW_GAME`) start from `env.init(fold_in(key, action))`: `action` carries the
    game's index, so a game can be replayed. Given `roots` (a batch of states without their
    observation, `evaluate(..., dest, roots)`), game g starts from `roots[g]` instead (the
    `cpu` search family, `turbozero.search.cpu.search`)."""
    wdl_head = _wdl_head(evaluator, env)

    def evaluate(pool, params, parent, action, dest, roots=None):
        new_game = parent == NEW_GAME
        prev = jax.tree_util.tree_map(lambda x: x[jnp.maximum(parent, 0)], pool)
        step_keys = jax.vmap(lambda p, a: jax.random.fold_in(jax.random.fold_in(key, p), a))(
            jnp.maximum(parent, 0), jnp.maximum(action, 0))
        stepped = jax.vmap(env.transition)(prev, jnp.maximum(action, 0), step_keys)

        def with_new_games(stepped):
            game = jnp.maximum(action, 0)
            if roots is None:
                fresh = jax.vmap(lambda g: env.init_state(jax.random.fold_in(key, g)))(game)
            else:
                last = jax.tree_util.tree_leaves(roots)[0].shape[0] - 1
                fresh = jax.tree_util.tree_map(lambda r: r[jnp.minimum(game, last)], roots)
            return jax.tree_util.tree_map(lambda a, b: _select_rows(new_game, a, b),
                                          fresh, stepped)

        # new games come only at the start of a game: most batches skip init (not under vmap,
        # so the cond really branches)
        child = jax.lax.cond(jnp.any(new_game), with_new_games, lambda s: s, stepped)
        pool = jax.tree_util.tree_map(lambda p, c: p.at[dest].set(c), pool, child)
        obs = jax.vmap(env.observe)(child)
        if wdl_head is None:
            logits, value = evaluator(params, obs)
            wdl = None
        else:  # one network call for the value and its WDL
            logits, value_out = evaluator.apply_fn(params, obs)
            value = evaluator.value_format.to_scalar(value_out)
            wdl = wdl_head(value_out).astype(jnp.float32)
        legal = child.legal_action_mask
        player = child.current_player.astype(jnp.int32)
        terminal = child.terminated | child.truncated
        reward = jnp.take_along_axis(child.rewards, player[:, None], axis=1)[:, 0]
        value = jnp.where(terminal, reward, value).astype(jnp.float32)
        if wdl is not None:
            outcome = jnp.stack([reward > 0, reward == 0, reward < 0], -1).astype(jnp.float32)
            wdl = jnp.where(terminal[:, None], outcome, wdl)
        masked = jnp.where(legal, logits, -jnp.inf)
        probs = jax.nn.softmax(masked, axis=-1)
        # dense rows: the C++ queue packs the legal ids (a scan of the mask), where packing them
        # here (pack_actions and a gather) took a quarter of this call for a game with
        # thousands of action ids
        # (docs/benchmarks.md, "CPU search path")
        probs = jnp.nan_to_num(probs.astype(jnp.float32))  # terminal rows: no legal action
        return pool, PoolOutput(legal, probs, value, player, terminal, wdl)

    return jax.jit(evaluate, donate_argnums=(0,))


class SelfPlayGames(NamedTuple):
    """Finished games as training samples (N: all moves of all games)."""

    # [N, ...] the network input at each searched root, or what the replay form passed to
    # `cpu_self_play` keeps of it (a pytree of [N, ...] arrays, e.g. env states)
    observation: Any
    policy: np.ndarray  # float32[N, A] root visit distribution over all actions
    legal_action_mask: np.ndarray  # bool[N, A] the legal actions of each searched root
    value: np.ndarray  # float32[N] the game's outcome for the player to move (0: cut or draw)
    player: np.ndarray  # int32[N]
    action: np.ndarray  # int32[N] the action played
    game: np.ndarray  # int32[N] game index
    terminated: np.ndarray  # bool[G] ended by the rules (False: cut by max_steps)
    # float32[N, 3] the search's root WDL average for the player to move (zeros without a WDL
    # head) and float32[N] its LogSumExp soft value at the search's beta (0 at beta 0), as the
    # JAX kernel's `root_wdl` / `risk_value` (docs/chess.md, "Stored per move")
    root_wdl: np.ndarray
    soft_value: np.ndarray
    root_value: np.ndarray  # float32[N] the searched root value for the player to move
    stats: dict  # simulations, requests, collisions, moves, batches, seconds


def check_env(env) -> None:
    """ValueError for an env the CPU path cannot search."""
    if env.is_simultaneous or env.is_stochastic:
        raise ValueError(f"{env.id}: the CPU path searches deterministic turn-based games")
    if env.num_players > 2:
        raise ValueError(f"{env.id}: the CPU path backs up one zero-sum value (at most two "
                         "players)")


def build_coordinator(env, config: CPUSelfPlayConfig, seat_betas=None,
                      acting: TemperatureSchedule = TemperatureSchedule()):
    """The C++ coordinator of `config` for `env` (a ValueError for an env the CPU path cannot
    search); `seat_betas` float[num_games, 2] and `acting` as in `cpu_self_play`."""
    ext = require_extension()
    check_env(env)
    native = config.to_native(num_players=env.num_players, num_actions=env.num_actions,
                              acting=acting)
    if seat_betas is not None:
        betas = np.asarray(seat_betas, np.float64)
        if betas.shape != (config.num_games, 2):
            raise ValueError(f"seat_betas must be [num_games={config.num_games}, 2], got "
                             f"{betas.shape}")
        if not np.all(np.isfinite(betas)):
            raise ValueError("seat_betas must be finite")
        native.seat_betas = [float(b) for b in betas.reshape(-1)]
    return ext.Coordinator(native)


def run_coordinator(coord, env, evaluate, params, config: CPUSelfPlayConfig,
                    roots=None) -> int:
    """Run the built coordinator `coord` to its end, evaluating its batches with the pool
    evaluator `evaluate` (`make_pool_evaluator`) over a fresh state pool; `roots`: the states
    its games start from (None: `env.init_state`, seeded by the game's index). Returns the
    number of evaluator calls; the games are in `coord.records()`. Shared by `cpu_self_play`
    and the `cpu` search family (`turbozero.search.cpu.search`)."""
    num_slots = coord.num_state_slots + 1  # + a scratch slot for padding rows
    scratch = num_slots - 1
    pool = make_state_pool(env, num_slots)
    tiers = config.batch_tiers
    max_batch = tiers[-1]
    parent = np.zeros(max_batch, np.int32)
    action = np.zeros(max_batch, np.int32)
    dest = np.zeros(max_batch, np.int32)
    max_legal = int(getattr(env, "max_legal_actions", env.num_actions))
    # with overlap, up to one batch per worker is dispatched (JAX runs it asynchronously)
    # before the oldest one's results are fetched: one worker searches while another's batch
    # is evaluated (docs/cpu_search.md, "Overlapping groups of games")
    depth = config.num_workers if config.overlap else 1
    awaiting = collections.deque()  # (rows, output) of dispatched batches, oldest first
    batches = 0
    start = time.perf_counter()
    last_progress = start
    coord.start()
    try:
        while not coord.finished():
            # returns 0 at once when every worker waits for results of a batch in `awaiting`
            n = coord.collect(parent, action, dest, max_batch, 0.05)
            now = time.perf_counter()
            if n == 0 and not awaiting:
                if now - last_progress > config.timeout_s:
                    raise TimeoutError(f"cpu_self_play: no request for {config.timeout_s} s")
                continue
            last_progress = now
            if n > 0:
                tier = next(t for t in tiers if t >= n)
                pad = tier - n
                # padding rows step the scratch slot into itself (not NEW_GAME: that would
                # make every padded batch pay for env.init)
                p = np.concatenate([parent[:n], np.full(pad, scratch, np.int32)])
                a = np.concatenate([action[:n], np.zeros(pad, np.int32)])
                d = np.concatenate([dest[:n], np.full(pad, scratch, np.int32)])
                pool, out = (evaluate(pool, params, p, a, d) if roots is None
                             else evaluate(pool, params, p, a, d, roots))
                awaiting.append((n, out))
                batches += 1
                if len(awaiting) < depth:
                    continue
            n, out = awaiting.popleft()
            out = jax.device_get(out)
            coord.submit_dense_results(np.ascontiguousarray(out.legal[:n]),
                                       np.ascontiguousarray(out.probs[:n]), max_legal,
                                       np.ascontiguousarray(out.value[:n]),
                                       np.ascontiguousarray(out.player[:n]),
                                       np.ascontiguousarray(out.terminal[:n]),
                                       None if out.wdl is None
                                       else np.ascontiguousarray(out.wdl[:n]))
    except BaseException:
        coord.stop()
        try:
            coord.join()
        except Exception:  # the worker's error is secondary to the one raised here
            pass
        raise
    coord.join()  # rethrows a worker's exception
    return batches


def cpu_self_play(env, evaluator, params, config: CPUSelfPlayConfig, key: jax.Array,
                  pool_evaluator=None, seat_betas=None, form=None,
                  acting: TemperatureSchedule = TemperatureSchedule()) -> SelfPlayGames:
    """Play config.num_games games with the CPU path and return them as training samples.

    `acting`: how the games pick their moves from the root visits (`TemperatureSchedule`;
    its move number is the move since the game's start).

    `seat_betas` float[num_games, 2]: each game's entropic-risk beta per seat (per-game
    asymmetric risk; selection at a node uses its mover's); None: `config.search.risk_beta`.
    `form`: how `SelfPlayGames.observation` keeps each position, a replay form bound to `env`
    (`turbozero.training.stored_observations`; None: the observation planes).

    `pool_evaluator` (from `make_pool_evaluator(env, evaluator, key)`) may be passed to reuse
    its compiled tiers across calls; it fixes the key that seeds the games.
    """
    coord = build_coordinator(env, config, seat_betas, acting)
    evaluate = pool_evaluator or make_pool_evaluator(env, evaluator, key)
    start = time.perf_counter()
    batches = run_coordinator(coord, env, evaluate, params, config)
    seconds = time.perf_counter() - start
    stats = dict(coord.stats(), batches=batches, seconds=seconds)
    return _samples(env, coord.records(), key, stats, config.max_steps, form)


@functools.lru_cache(maxsize=8)
def _replayer(env, num_games: int, num_moves: int, form):
    """jit: (key, actions int32[G, M]) -> (stored [M, G, ...], legal bool[M, G, A]) of the G
    games replayed from their starts, all at once (one compile per shape); `stored` is what
    the replay form keeps of each position (None: the observation)."""

    def run(key, actions):
        states = jax.vmap(lambda g: env.init_state(jax.random.fold_in(key, g)))(
            jnp.arange(num_games))

        def body(s, a):
            observed = s.replace(observation=jax.vmap(env.observe)(s))
            # a form that does not keep the observation leaves it unused: XLA drops it
            stored = observed.observation if form is None else form.encode(observed)
            out = (stored, s.legal_action_mask)
            return jax.vmap(lambda st, ac: env.transition(st, ac))(s, a), out

        _, (obs, legal) = jax.lax.scan(body, states, actions.T)
        return obs, legal

    return jax.jit(run)


def _samples(env, records: list, key, stats: dict, max_steps: int, form=None) -> SelfPlayGames:
    """Replay the games from their seeds to get the observation and legal mask at every
    searched root: one jitted scan over all games (padded to `max_steps`, so every call has one
    shape), where replaying move by move from Python took 60% of an iteration (measured,
    docs/benchmarks.md, "CPU path in training")."""
    num_games = len(records)
    actions = np.zeros((num_games, max_steps), np.int32)
    pol, val, ply, act, gid, index, wdl, soft, root = [], [], [], [], [], [], [], [], []
    for g, rec in enumerate(records):
        for j, m in enumerate(rec["moves"]):
            actions[g, j] = m["action"]
            policy = np.zeros(env.num_actions, np.float32)
            visits = m["visits"].astype(np.float32)
            policy[m["actions"]] = visits / max(visits.sum(), 1.0)
            pol.append(policy)
            val.append(m["outcome"])
            ply.append(m["player"])
            act.append(m["action"])
            gid.append(g)
            index.append((j, g))
            w = m["root_wdl"]
            wdl.append((w["win"], w["draw"], w["loss"]) if w["count"] else (0.0, 0.0, 0.0))
            soft.append(m["soft_value"])
            root.append(m["root_value"])
    obs, legal = jax.device_get(
        _replayer(env, num_games, max_steps, form)(key, jnp.asarray(actions)))
    rows, cols = (np.asarray([i[0] for i in index], np.int64),
                  np.asarray([i[1] for i in index], np.int64))
    return SelfPlayGames(
        observation=jax.tree_util.tree_map(lambda x: np.asarray(x)[rows, cols], obs),
        policy=np.stack(pol),
        legal_action_mask=np.asarray(legal)[rows, cols],
        value=np.asarray(val, np.float32),
        player=np.asarray(ply, np.int32), action=np.asarray(act, np.int32),
        game=np.asarray(gid, np.int32),
        terminated=np.asarray([r["terminated"] for r in records], bool),
        root_wdl=np.asarray(wdl, np.float32).reshape(-1, 3),
        soft_value=np.asarray(soft, np.float32), root_value=np.asarray(root, np.float32),
        stats=stats)
