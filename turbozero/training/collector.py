"""Self-play collector: a batch of games stepped together, with auto-reset, into replay."""

from __future__ import annotations

from typing import Any, Callable, Optional, Union

import jax
import jax.numpy as jnp
from flax import struct

from envs.core import Env, State
from turbozero.training import replay
from turbozero.training.acting import TemperatureSchedule
from turbozero.training.risk import SelfPlayRisk
from turbozero.training.types import SelfPlayTargets

# policy_fn(variables, states[B], key) -> `SelfPlayTargets` (`Algorithm.self_play`), or just the
# policy targets [B, A] (or [B, P, A] per player), stored with zero search values
PolicyTargetFn = Callable[[Any, State, jax.Array], Union[SelfPlayTargets, jax.Array]]


@struct.dataclass
class CollectorState:
    env_state: State  # [E] the games being played
    episode_id: jax.Array  # int32[E] unique id of each game's current episode
    return_so_far: jax.Array  # float32[E, P] rewards collected in the current episode
    # float32[E, P] each seat's risk beta in each game, drawn when the game starts
    # (`turbozero.training.risk`); None without self-play risk
    risk_beta: Optional[jax.Array] = None


@struct.dataclass
class CollectStats:
    episodes_finished: jax.Array  # int32, games that ended during the call
    outcome_sum: jax.Array  # float32[P], sum of the final returns of those games
    positions: jax.Array  # int32, positions written

    @classmethod
    def zero(cls, num_players: int) -> "CollectStats":
        return cls(episodes_finished=jnp.zeros((), jnp.int32),
                   outcome_sum=jnp.zeros((num_players,), jnp.float32),
                   positions=jnp.zeros((), jnp.int32))

    def add(self, done: jax.Array, returns: jax.Array) -> "CollectStats":
        """After a move of every game: `done` bool[E] the games that ended, `returns`
        float32[E, P] their returns."""
        return CollectStats(
            episodes_finished=self.episodes_finished + done.sum(),
            outcome_sum=self.outcome_sum + jnp.where(done[:, None], returns, 0.0).sum(0),
            positions=self.positions + done.shape[0])


def init_collector(env: Env, key: jax.Array, num_envs: int,
                   risk: Optional[SelfPlayRisk] = None) -> CollectorState:
    # the games' keys as before risk existed (runs without risk reproduce exactly)
    states = jax.vmap(env.init)(jax.random.split(key, num_envs))
    k_risk = jax.random.fold_in(key, num_envs)
    return CollectorState(
        env_state=states,
        episode_id=jnp.arange(num_envs, dtype=jnp.int32),
        return_so_far=jnp.zeros((num_envs, env.num_players), jnp.float32),
        risk_beta=None if risk is None else risk.draw(k_risk, 0, num_envs, env.num_players),
    )


def collect(
    env: Env,
    policy_fn: PolicyTargetFn,
    variables: Any,
    collector: CollectorState,
    buffer: replay.ReplayBuffer,
    key: jax.Array,
    num_steps: int,
    schedule: TemperatureSchedule = TemperatureSchedule(),
    risk: Optional[SelfPlayRisk] = None,
    iteration: Any = 0,
    truncated_games: Any = None,
    max_steps: Optional[int] = None,
) -> tuple[CollectorState, replay.ReplayBuffer, CollectStats]:
    """Play `num_steps` moves in every game (lax.scan), writing every position to `buffer`
    (`replay.add`: its policy target, and the action played and the search's root values
    where the algorithm's replay keeps them).

    The move played is drawn once, from the search's policy target, by `schedule` (the
    algorithm's `acting`): searches have no temperature, and their recommended action is for
    evaluation, so every algorithm acts by the same schedule. With `risk`, each
    game searches with its seats' betas (`collector.risk_beta`, given to `policy_fn` as
    `risk_beta=`); a game that starts draws new ones at `iteration` of the schedule.
    `truncated_games` (`TrainConfig.truncated_games`): None scores a game cut by the env's cap
    by the env's rewards; an object with `rewards(env, states) -> float32[B, P]` adds those to
    the return of every game that was truncated (not terminated), for the targets only.
    `max_steps` (`TrainConfig.max_self_play_steps`): a game not over after that many env steps
    (`step_count`) is cut there as if the env had truncated it (scored as above) and a new one
    starts; None plays to the env's own end.
    """
    num_envs = collector.episode_id.shape[0]

    def one_step(carry, step_key):
        col, buf, stats = carry
        k_search, k_act, k_step, k_reset = jax.random.split(step_key, 4)
        s = col.env_state
        if risk is None:
            out = policy_fn(variables, s, k_search)
        else:
            out = policy_fn(variables, s, k_search, risk_beta=col.risk_beta)
        targets = out if isinstance(out, SelfPlayTargets) else SelfPlayTargets(out, None)
        actions = schedule.act(k_act, targets.policy, s.step_count)
        buf = replay.add(buf, replay.Positions(
            observation=buf.form.encode(s), policy=targets.policy,
            legal_action_mask=s.legal_action_mask, current_player=s.current_player,
            episode_id=col.episode_id, return_before=col.return_so_far, action=actions,
            search_values=targets.search_values, search_record=targets.search_record))
        # fast path: transition and fresh games without observations, then one observe of the
        # games as they continue (docs/envs.md, observations on demand)
        nxt = jax.vmap(env.transition)(s, actions, jax.random.split(k_step, num_envs))
        ret = col.return_so_far + nxt.rewards
        truncated = nxt.truncated
        if max_steps is not None:
            truncated = truncated | (nxt.step_count >= max_steps)
        if truncated_games is not None:
            cut = truncated & ~nxt.terminated
            ret = ret + jnp.where(cut[:, None], truncated_games.rewards(env, nxt), 0.0)
        done = nxt.terminated | truncated
        buf = replay.finish_episodes(buf, done, col.episode_id, ret)
        fresh = jax.vmap(env.init_state)(jax.random.split(k_reset, num_envs))
        env_state = jax.tree_util.tree_map(
            lambda a, b: jnp.where(done.reshape((-1,) + (1,) * (a.ndim - 1)), a, b), fresh, nxt
        )
        env_state = env_state.replace(observation=jax.vmap(env.observe)(env_state))
        risk_beta = col.risk_beta
        if risk is not None:  # games that start now take the schedule's current beta
            fresh_risk = risk.draw(jax.random.fold_in(k_reset, 1), iteration, num_envs,
                                   env.num_players)
            risk_beta = jnp.where(done[:, None], fresh_risk, col.risk_beta)
        col = CollectorState(
            env_state=env_state,
            episode_id=jnp.where(done, col.episode_id + num_envs, col.episode_id),
            return_so_far=jnp.where(done[:, None], 0.0, ret),
            risk_beta=risk_beta,
        )
        return (col, buf, stats.add(done, ret)), None

    (collector, buffer, stats), _ = jax.lax.scan(
        one_step, (collector, buffer, CollectStats.zero(env.num_players)),
        jax.random.split(key, num_steps))
    return collector, buffer, stats
