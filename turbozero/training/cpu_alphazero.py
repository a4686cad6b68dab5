"""AlphaZero whose self-play runs on the C++ CPU path (docs/cpu_search.md, "Training").

`AlphaZero(search=CPUSelfPlayConfig(...))` builds `CPUAlphaZero`: each iteration plays
`num_games` whole games with the bundled C++ node pool, evaluation queue and worker threads
(`turbozero.search.cpu.cpu_self_play`; JAX steps the rules and runs the network on the batches
the queue collects), and writes them into the library's replay; training, checkpoints and the
loss are AlphaZero's. Evaluation searches with the JAX tree kernel under the same formulas
(`SpecPUCT` + `PUCTRoot` with the config's constants), which the C++ search equals visit for
visit with one worker (tests/search/test_cpu_search_jax.py), so evaluation stays jittable.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from turbozero.networks.value_formats import mover_to_seats
from turbozero.search.cpu import require_extension
from turbozero.search.cpu.selfplay import (CPUSelfPlayConfig, check_env, cpu_self_play,
                                          make_pool_evaluator)
from turbozero.search.kernel import TreeSearchConfig
from turbozero.search.roots import PUCTRoot
from turbozero.search.selection import SpecPUCT
from turbozero.training import replay
from turbozero.training.algorithms import AlphaZeroAlgorithm
from turbozero.training.collector import CollectStats
from turbozero.training.types import variables_of


def kernel_config(config: CPUSelfPlayConfig) -> TreeSearchConfig:
    """The JAX kernel's search with the formulas and constants of the CPU path."""
    s = config.search
    return TreeSearchConfig(
        num_simulations=config.num_simulations,
        selection=SpecPUCT(c_puct=s.c_puct, fpu_base=s.fpu_base, risk_beta=s.risk_beta,
                           q_bounds=tuple(s.q_bounds)),
        root=PUCTRoot(dirichlet_alpha=s.dirichlet_alpha, dirichlet_fraction=s.dirichlet_fraction))


class CPUAlphaZero(AlphaZeroAlgorithm):
    """AlphaZero with self-play on the C++ CPU path (whole games per iteration, outside jit)."""

    def __init__(self, env, apply_fn, value_format, search_config, eval_search_config=None,
                 acting=None):
        if not isinstance(search_config, CPUSelfPlayConfig):
            raise ValueError(f"CPUAlphaZero needs a CPUSelfPlayConfig, got {search_config!r}")
        evaluation = (search_config if eval_search_config is None else eval_search_config)
        if isinstance(evaluation, CPUSelfPlayConfig):
            evaluation = kernel_config(evaluation).for_evaluation()
        # the C++ games act by the algorithm's `acting`, as the jitted collector's do
        super().__init__(env, apply_fn, value_format, kernel_config(search_config), evaluation,
                         acting)
        self.cpu_config = search_config
        # the C++ side checks some settings (the node pool's sizes) only when a coordinator is
        # built, at the first self-play, after the Trainer has written the run directory: build
        # one now and drop it (its pools allocate on demand; 0.1 ms), so that a bad setting is
        # a ValueError before anything is written
        require_extension().Coordinator(search_config.to_native(acting=self.acting))
        # one pool evaluator for the whole run (its batch tiers compile once); the key only
        # seeds the games' starting states, which are fixed for the games this path plays
        self._games_key = jax.random.PRNGKey(search_config.seed)
        self._pool_evaluator = make_pool_evaluator(env, self.evaluator, self._games_key)

    # whole games on the host, outside jit (`collect`)
    collects_in_jit = False

    def check(self, config=None) -> None:
        """Per-seat risk is searched by the C++ tree (seat betas per game); the evaluation
        search (the kernel) uses CPUSearchConfig.risk_beta."""
        require_extension()  # a clear error naming how to build it when it is missing
        check_env(self.env)
        if config is None:
            return
        if config.truncated_games is not None:
            raise ValueError("TrainConfig.truncated_games is not wired into the CPU path (its "
                             "games end by the rules or by max_steps as a draw)")
        if config.max_self_play_steps is not None:
            raise ValueError("TrainConfig.max_self_play_steps: the CPU path cuts its games with "
                             "CPUSelfPlayConfig.max_steps instead")

    def self_play_config(self, iteration: int) -> CPUSelfPlayConfig:
        """The C++ self-play of `iteration`: its noise and sampling seeded per iteration (a
        resumed run plays the games it would have played)."""
        return dataclasses.replace(self.cpu_config,
                                   seed=self.cpu_config.seed + int(iteration) * 7919)

    def collect(self, state, config):
        """Play `num_games` whole games on the CPU path and write them into the replay rows
        (game g into row g mod num_envs, moves in order), instead of the jitted collector.
        With `config.risk`, every game draws its seats' betas at this iteration of the
        schedule, as the jitted collector's new games do."""
        risk = config.risk
        variables = variables_of(state.train_state)
        cfg = self.self_play_config(int(state.iteration))
        seat_betas = None
        if risk is not None:
            key = jax.random.fold_in(self._games_key, int(state.iteration))
            seat_betas = np.asarray(risk.draw(key, state.iteration, cfg.num_games,
                                              self.env.num_players))
        games = cpu_self_play(self.env, self.evaluator, variables, cfg, self._games_key,
                              self._pool_evaluator, seat_betas, state.buffer.form, self.acting)
        buffer, stats = write_games(state.buffer, games, self.env.num_players)
        return state.replace(buffer=buffer), stats


def write_games(buffer, games, num_players: int):
    """The finished games of `cpu_self_play` into the per-game rings: game g into row
    `g mod num_envs`, its moves at consecutive columns after the ones written before it in
    this call, by the replay's one writer (`replay.add`), which keeps what the algorithm's
    replay declares. Returns (buffer, CollectStats).

    The slots are worked out on the host (one pass over the games), then one jitted scatter
    writes only the new positions into the donated buffer: copying the whole replay to the
    host and back took about half of a chess `cpu` iteration (measured: 2.7 of 5.6 s)."""
    num_envs, capacity = buffer.episode_id.shape
    ptr, writes = int(buffer.ptr), int(buffer.num_writes)
    num_games = len(games.terminated)
    n = len(games.game)
    rows, cols = np.zeros(n, np.int32), np.zeros(n, np.int32)
    written_at, episode = np.zeros(n, np.int32), np.zeros(n, np.int32)
    returns = np.zeros((n, num_players), np.float32)
    in_row = np.zeros(num_envs, np.int64)  # positions this call wrote into each row so far
    outcome_sum = np.zeros(num_players, np.float32)
    for g in range(num_games):
        idx = np.flatnonzero(games.game == g)
        row = g % num_envs
        j = np.arange(len(idx))
        rows[idx] = row
        cols[idx] = (ptr + in_row[row] + j) % capacity
        written_at[idx] = writes + in_row[row] + j
        episode[idx] = writes * num_games + g
        value, player = games.value[idx], games.player[idx]  # outcome for the player to move
        returns[idx] = mover_to_seats(value, player, num_players)
        outcome_sum += returns[idx[0]]  # seat order: the game's final return of every seat
        in_row[row] += len(idx)
    longest = int(in_row.max()) if num_games else 0
    # a slot written twice in this call (a row's games longer than its ring) keeps the last
    # write, as writing move by move would
    flat = rows.astype(np.int64) * capacity + cols
    keep = n - 1 - np.unique(flat[::-1], return_index=True)[1]
    # padded to a power of two so that the scatter compiles for a few sizes only; padding
    # rows point past the last ring and are dropped
    size = max(64, 1 << int(np.ceil(np.log2(max(len(keep), 1)))))
    pad = size - len(keep)

    def take(x, fill=0):
        x = np.asarray(x)[keep]
        return np.concatenate([x, np.full((pad,) + x.shape[1:], fill, x.dtype)])

    seat_values = mover_to_seats(games.root_value, games.player, num_players).astype(np.float32)
    positions = replay.Positions(
        observation=jax.tree_util.tree_map(take, games.observation), policy=take(games.policy),
        legal_action_mask=take(games.legal_action_mask), current_player=take(games.player),
        episode_id=take(episode), return_before=np.zeros((size, num_players), np.float32),
        returns=take(returns), action=take(games.action), search_values=take(seat_values),
        search_record={"root_wdl": take(games.root_wdl), "soft_value": take(games.soft_value)},
        written_at=take(written_at))
    new = _scatter_positions(buffer, take(rows, num_envs), take(cols), positions,
                             np.int32((ptr + longest) % capacity), np.int32(writes + longest))
    stats = CollectStats(episodes_finished=jnp.int32(num_games),
                         outcome_sum=jnp.asarray(outcome_sum),
                         positions=jnp.int32(n))
    return new, stats


@functools.partial(jax.jit, donate_argnums=(0,))
def _scatter_positions(buffer, rows, cols, positions, ptr, num_writes):
    """`buffer` with `positions` [M] written at slots (rows, cols) by the replay's writer
    (rows == num_envs: a padding row, dropped; what the replay does not keep is dropped too);
    every written slot has its target (the games are finished)."""
    return replay.add(buffer, positions, rows, cols).replace(
        ptr=jnp.asarray(ptr, buffer.ptr.dtype),
        num_writes=jnp.asarray(num_writes, buffer.num_writes.dtype))
